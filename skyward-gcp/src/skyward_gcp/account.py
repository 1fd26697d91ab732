"""Where Google Cloud's credentials and project come from: Application Default Credentials.

Google's client libraries find credentials in one documented order (google-auth's
`google.auth.default`): the JSON file named by `$GOOGLE_APPLICATION_CREDENTIALS` (a service
account key, or any ADC file), then the file `gcloud auth application-default login` writes
(`~/.config/gcloud/application_default_credentials.json`, under `$CLOUDSDK_CONFIG` when set), then,
on a Google Cloud VM, its attached service account through the metadata server. Skyward asks the
same chain, when a pool starts and never inside the config, so a secret never travels inside a
pickled spec; none found is a `ConfigurationError` naming the variable, the file and the command.

The project is `GCP(project=...)`, else the one the credentials carry (a service account key's
`project_id`, gcloud's quota project), else `$GOOGLE_CLOUD_PROJECT`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from skyward.errors import ConfigurationError
from skyward.providers.credentials import CredentialStatus

#: The scope the pool's calls need (create, read and delete VMs and firewall rules).
COMPUTE_SCOPE = "https://www.googleapis.com/auth/compute"
CREDENTIALS_VARIABLE = "GOOGLE_APPLICATION_CREDENTIALS"
PROJECT_VARIABLE = "GOOGLE_CLOUD_PROJECT"
LOGIN_COMMAND = "gcloud auth application-default login"


def gcloud_adc_file() -> Path:
    """gcloud's ADC file: `$CLOUDSDK_CONFIG/application_default_credentials.json`, else under
    `~/.config/gcloud` (the path google-auth reads)."""
    folder = os.environ.get("CLOUDSDK_CONFIG") or str(Path.home() / ".config" / "gcloud")
    return Path(folder) / "application_default_credentials.json"


def _where() -> str:
    return f"${CREDENTIALS_VARIABLE}, {gcloud_adc_file()}"


@attrs.frozen(repr=False)
class Account:
    """The credentials a pool calls Compute Engine with, and the project they act in. The
    credentials object stays out of `repr` (it may hold a refresh token or a private key)."""

    credentials: Any
    project: str

    def __repr__(self) -> str:
        return f"Account(project={self.project!r})"


def on_google_cloud() -> bool:
    """Whether this machine is a Google Cloud VM (its metadata server may hold credentials): the
    DMI product name says so, as google-auth reads it, or `$GCE_METADATA_HOST` names a server."""
    if os.environ.get("GCE_METADATA_HOST"):
        return True
    try:
        return Path("/sys/class/dmi/id/product_name").read_text().strip().startswith("Google")
    except OSError:
        return False


def missing_message() -> str:
    return (
        f"GCP needs Application Default Credentials: set {CREDENTIALS_VARIABLE} to a service account "
        f"key file, or run `{LOGIN_COMMAND}` (it writes {gcloud_adc_file()})"
    )


def require_credentials() -> None:
    """A `ConfigurationError` naming where credentials are looked for when none can be there (no
    ADC file, and not a Google Cloud VM): at pool start, before any request or network probe."""
    if not locate_credentials().found and not on_google_cloud():
        raise ConfigurationError(missing_message())


def resolve_account(project: str | None) -> Account:
    """Application Default Credentials (see the module) and the project to use; a
    `ConfigurationError` naming where they are looked for when either is missing."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        credentials, found_project = google.auth.default(scopes=[COMPUTE_SCOPE])
    except DefaultCredentialsError as exc:
        raise ConfigurationError(f"{missing_message()}; google-auth said: {exc}") from None
    chosen = project or found_project or os.environ.get(PROJECT_VARIABLE, "").strip()
    if not chosen:
        raise ConfigurationError(
            f"GCP needs a project: pass GCP(project=...) or set ${PROJECT_VARIABLE} "
            "(the credentials found carry none)"
        )
    return Account(credentials, str(chosen))


def locate_credentials() -> CredentialStatus:
    """For `sky providers` and a pool choosing between specs: whether an ADC file is there
    (`$GOOGLE_APPLICATION_CREDENTIALS`'s, else gcloud's). Reads no file's content and calls
    nothing: a VM's metadata-server credentials are found only when a pool starts."""
    named = os.environ.get(CREDENTIALS_VARIABLE, "").strip()
    if named:
        if Path(named).is_file():
            return CredentialStatus(found=True, where=f"${CREDENTIALS_VARIABLE} ({named})")
        return CredentialStatus(
            found=False, where=f"${CREDENTIALS_VARIABLE} names {named}, which is not a file"
        )
    if gcloud_adc_file().is_file():
        return CredentialStatus(found=True, where=str(gcloud_adc_file()))
    return CredentialStatus(found=False, where=f"looked in {_where()}")
