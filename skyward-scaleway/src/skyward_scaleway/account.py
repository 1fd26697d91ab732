"""Where Scaleway's API is and where a pool's Scaleway credentials come from: the package's lowest
layer.

Scaleway's API takes a secret key (`X-Auth-Token`); its SDK also wants the key's access key, and
every resource belongs to a project. Each of the three is the config's argument, else the variable
Scaleway's CLI, SDKs and Terraform provider read (`SCW_SECRET_KEY`, `SCW_ACCESS_KEY`,
`SCW_DEFAULT_PROJECT_ID`), else the profile of the CLI's config file (`~/.config/scw/config.yaml`,
`$SCW_CONFIG_PATH`, profile `$SCW_PROFILE`), read by the SDK's own loader. They are resolved when a
pool starts, never inside the config (an environment key never travels in a pickled spec); a
missing one is a `ConfigurationError` naming the variables and the file, before any request.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from skyward.errors import ConfigurationError
from skyward.providers.credentials import CredentialStatus
from skyward.secrets import register_secret

SECRET_KEY_VARIABLE = "SCW_SECRET_KEY"
ACCESS_KEY_VARIABLE = "SCW_ACCESS_KEY"
PROJECT_VARIABLE = "SCW_DEFAULT_PROJECT_ID"
#: Points `sky ls`/`sky down`/`sky offers` at another endpoint (a proxy, the tests' fake); the SDK's.
URL_VARIABLE = "SCW_API_URL"
API_URL = "https://api.scaleway.com"
KEYS_PAGE = "https://console.scaleway.com/iam/api-keys"
#: The tag every server Skyward creates carries (`sky ls` lists by it).
TAG = "skyward"
#: The zones with GPU Instances, where `sky ls`/`sky offers` look unless `$SCW_DEFAULT_ZONE` says one.
GPU_ZONES = ("fr-par-1", "fr-par-2", "nl-ams-1", "pl-waw-2")
NEEDED = f"{SECRET_KEY_VARIABLE}, {ACCESS_KEY_VARIABLE} and {PROJECT_VARIABLE}"


@attrs.frozen
class Credentials:
    """A pool's key pair and project (the secret kept out of `repr`)."""

    access_key: str
    secret_key: str = attrs.field(repr=False)
    project_id: str


def config_file() -> Path:
    """The CLI's config file, where the SDK's loader looks for it."""
    from scaleway_core.profile import Profile

    return Path(Profile.get_default_config_file_path())


def _profile() -> dict[str, str]:
    """The SDK's profile: the config file's (its `$SCW_PROFILE` profile) under the environment's."""
    from scaleway_core.profile import Profile

    found: dict[str, str] = {}
    if config_file().is_file():
        try:
            loaded = Profile.from_config_file(profile_name=os.environ.get("SCW_PROFILE", "default"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"Scaleway: could not read {config_file()}: {exc}") from None
        found.update({k: v for k, v in vars(loaded).items() if isinstance(v, str) and v})
    found.update({k: v for k, v in vars(Profile.from_env()).items() if isinstance(v, str) and v})
    return found


def resolve(access_key: str | None, secret_key: str | None, project_id: str | None) -> Credentials:
    """The pool's credentials (see the module); the secret is registered for masking."""
    profile = _profile()
    access = access_key or profile.get("access_key")
    secret = secret_key or profile.get("secret_key")
    project = project_id or profile.get("default_project_id")
    lacking = [
        name
        for name, value in (
            (SECRET_KEY_VARIABLE, secret),
            (ACCESS_KEY_VARIABLE, access),
            (PROJECT_VARIABLE, project),
        )
        if not value
    ]
    if lacking:
        raise ConfigurationError(
            f"Scaleway needs {NEEDED}: {', '.join(lacking)} not found; set them, pass "
            f"Scaleway(secret_key=..., access_key=..., project_id=...), or run `scw init` to write "
            f"{config_file()} (create a key at {KEYS_PAGE})"
        )
    assert access and secret and project
    register_secret(secret)
    return Credentials(access_key=access, secret_key=secret, project_id=project)


def locate() -> CredentialStatus:
    """Whether all three are there (variables or the CLI's profile), for `sky providers`: where
    the secret key comes from, else which are missing. Registers nothing, calls nothing."""
    try:
        profile = _profile()
    except ConfigurationError:
        profile = {}
    fields = (
        (SECRET_KEY_VARIABLE, "secret_key"),
        (ACCESS_KEY_VARIABLE, "access_key"),
        (PROJECT_VARIABLE, "default_project_id"),
    )
    missing = [f"${variable}" for variable, field in fields if not profile.get(field)]
    if missing:
        return CredentialStatus(found=False, where=f"looked in {', '.join(missing)} and {config_file()}")
    secret_in_env = os.environ.get(SECRET_KEY_VARIABLE, "").strip()
    return CredentialStatus(
        found=True, where=f"${SECRET_KEY_VARIABLE}" if secret_in_env else str(config_file())
    )


def api_url() -> str:
    return os.environ.get(URL_VARIABLE) or API_URL


def zones() -> tuple[str, ...]:
    """Where the sweeper and the offer source look: `$SCW_DEFAULT_ZONE`, else every GPU zone."""
    zone = os.environ.get("SCW_DEFAULT_ZONE", "").strip()
    return (zone,) if zone else GPU_ZONES
