"""API keys of cloud providers, found the same way for every one of them.

A key comes from the config's argument (`RunPod(api_key=...)`), else the provider's environment
variable (`RUNPOD_API_KEY`), else the files its own command-line tool writes (`vastai set
api-key`), in that order. No key is a `ConfigurationError` naming the argument, the variable and
the files, so a pool fails before it creates anything. A key found is registered for masking:
from then on no Skyward log line shows it (configs keep it out of their `repr` themselves).

Clouds with their own credential chain (AWS: boto3's profiles, SSO, instance roles) leave it to
that chain instead. `sky providers --check` proves a key with one cheap call (`verified`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from skyward.errors import ConfigurationError
from skyward.observe.logging import register_secret
from skyward.providers.calls import on_own_thread


@attrs.frozen
class CredentialStatus:
    """What a provider config's optional `credentials()` answers, for `sky providers`.

    `found` says whether a credential is there to use, `where` where it comes from (a variable,
    a file, a profile) or, when it is not found, where it is looked for. `verified` is None until
    a cheap authenticated call was made (`credentials(check=True)`), then whether the provider
    accepted it; `detail` is what that call said (an account id, or the provider's refusal).
    """

    found: bool
    where: str
    verified: bool | None = None
    detail: str = ""


def locate_secret(env_var: str, config_files: Sequence[Path] = ()) -> CredentialStatus:
    """Where `resolve_secret` would find a key with no argument given: `$env_var`, else the first
    non-empty file of `config_files`. Reads nothing else, calls nothing, registers nothing."""
    if os.environ.get(env_var, "").strip():
        return CredentialStatus(found=True, where=f"${env_var}")
    for path in config_files:
        if path.is_file() and path.read_text().strip():
            return CredentialStatus(found=True, where=str(path))
    places = [f"${env_var}", *(str(p) for p in config_files)]
    return CredentialStatus(found=False, where="looked in " + ", ".join(places))


def resolve_secret(
    value: object,
    env_var: str,
    *,
    provider: str,
    argument: str = "api_key",
    config_files: Sequence[Path] = (),
    hint: str = "",
) -> str:
    """The key: `value`, else `$env_var`, else the first non-empty file of `config_files`.

    `provider` and `argument` name where it is passed (`RunPod(api_key=...)`) in the error, and
    `hint` says where to get one. Raises `ConfigurationError` when `value` is not a string or no
    key is found.
    """
    if value is not None and not isinstance(value, str):
        raise ConfigurationError(
            f"{provider}({argument}=...): expected the key as a string, got {type(value).__name__}"
        )
    key = (value or os.environ.get(env_var, "")).strip()
    for path in config_files:
        if key:
            break
        if path.is_file():
            key = path.read_text().strip()
    if not key:
        places = [f"pass {provider}({argument}=...)", f"set the {env_var} environment variable"]
        if config_files:
            places.append("save it to " + " or ".join(str(p) for p in config_files))
        where = ", ".join(places[:-1]) + f" or {places[-1]}"
        raise ConfigurationError(f"{provider} needs an API key: {where}" + (f"; {hint}" if hint else ""))
    register_secret(key)
    return key


def verified(
    status: CredentialStatus, count: Callable[[], int], listing: str, *, thread: str, timeout: float = 30.0
) -> CredentialStatus:
    """`sky providers --check`: `status` (a credential found) with `verified` and `detail` from one
    cheap authenticated call, `count()`, which lists something of the account and creates nothing.
    It runs on a thread of its own (`on_own_thread`): the caller may be inside an event loop. Any
    refusal or failure is the answer (`verified=False`, its message the detail); a success says
    `listing` and the count ("the key lists the account's pods (3)")."""
    if not status.found:
        return status
    try:
        found = on_own_thread(count, timeout=timeout, thread=thread)
    except Exception as error:  # noqa: BLE001 - any refusal or failure is the answer to report
        return attrs.evolve(status, verified=False, detail=str(error) or type(error).__name__)
    return attrs.evolve(status, verified=True, detail=f"{listing} ({found})")
