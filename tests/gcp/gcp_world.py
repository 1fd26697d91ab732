"""The fake Compute Engine project's world (tests/gcp/fake_gcp.py): its zones and what each lists,
the insert fields it takes, how it words an error and reads a filter, what a VM's startup script
authorises, and the service account key the tests' client authenticates with.
"""

from __future__ import annotations

import json
import shlex
import uuid
from pathlib import Path
from typing import Any

from aiohttp import web
from cloud_fakes import Invalid

PROJECT = "skyward-test"
ZONES = {"us-central1-a": "us-central1", "us-central1-b": "us-central1", "europe-west4-a": "europe-west4"}
#: What each zone lists: every machine type, and these accelerator types.
ACCELERATORS = {
    "us-central1-a": ["nvidia-tesla-t4", "nvidia-l4", "nvidia-tesla-a100", "nvidia-a100-80gb"],
    "us-central1-b": ["nvidia-tesla-t4", "nvidia-l4", "nvidia-h100-80gb", "nvidia-tesla-v100"],
    "europe-west4-a": ["nvidia-tesla-t4"],
}
MACHINE_TYPES = [
    ("e2-standard-2", 2, 8),
    ("e2-standard-4", 4, 16),
    ("n1-standard-4", 4, 15),
    ("n1-standard-8", 8, 30),
    ("g2-standard-4", 4, 16),
    ("g2-standard-8", 8, 32),
    ("a2-highgpu-1g", 12, 85),
    ("a2-ultragpu-1g", 12, 170),
    ("a3-highgpu-8g", 208, 1872),
]
INSERT_FIELDS = {
    "name",
    "machineType",
    "labels",
    "tags",
    "disks",
    "networkInterfaces",
    "guestAccelerators",
    "scheduling",
    "metadata",
    "serviceAccounts",
    "description",
}


def error(status: int, reason: str, message: str) -> web.Response:
    body = {
        "error": {
            "code": status,
            "message": message,
            "errors": [{"message": message, "domain": "global", "reason": reason}],
        }
    }
    return web.json_response(body, status=status)


def matches(row: dict[str, Any], expression: str) -> bool:
    """The filters the provider sends: `labels.K = "V"`, `labels.K:*` and `name = "N"`."""
    text = expression.strip()
    if not text:
        return True
    if text.endswith(":*"):
        return text[len("labels.") : -2] in row.get("labels", {})
    field, _, value = text.partition("=")
    field, value = field.strip(), value.strip().strip('"')
    if field.startswith("labels."):
        return row.get("labels", {}).get(field[len("labels.") :]) == value
    return str(row.get(field)) == value


def login_key_of(script: str) -> str:
    """The public key the startup script authorises (`printf '%s\\n' KEY >> .../authorized_keys`)."""
    for line in script.splitlines():
        for part in line.split("; "):
            if part.startswith("printf '%s\\n' ") and "authorized_keys" in part:
                return shlex.split(part)[2]
    raise Invalid("the startup script authorises no login key")


def service_account_key(token_uri: str) -> tuple[dict[str, Any], str]:
    """A new service account key file's JSON (what `GOOGLE_APPLICATION_CREDENTIALS` names) and
    its public key (PEM), for the fake to check the client's self-signed tokens with."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    email = f"skyward-tests@{PROJECT}.iam.gserviceaccount.com"
    info = {
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": uuid.uuid4().hex,
        "private_key": private,
        "client_email": email,
        "client_id": "1234567890",
        "token_uri": token_uri,
        "auth_uri": token_uri,
    }
    return info, public


def write_key(path: Path, info: dict[str, Any]) -> None:
    path.write_text(json.dumps(info))
    path.chmod(0o600)
