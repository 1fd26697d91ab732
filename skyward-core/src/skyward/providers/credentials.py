"""API keys of cloud providers, found the same way for every one of them.

A key comes from the config's argument (`RunPod(api_key=...)`), else the provider's environment
variable (`RUNPOD_API_KEY`), else the files its own command-line tool writes (`vastai set
api-key`), in that order. No key is a `ConfigurationError` naming the argument, the variable and
the files, so a pool fails before it creates anything. A key found is registered for masking:
from then on no Skyward log line shows it (configs keep it out of their `repr` themselves).

Clouds with their own credential chain (AWS: boto3's profiles, SSO, instance roles) leave it to
that chain instead. `sky providers --check` proves a key with one cheap call (`verified`).

Nothing here runs when a config is built: a config is a plain value (it is pickled, compared,
printed, built at import time in scripts), so its credentials are looked for when a pool starts.
A pool with several specs asks each config first (`missing_credentials`, a `MissingCredential`
or None) and skips one that lacks its credentials, or whose package is not installed
(`UninstalledProvider`), for the next spec, instead of failing on it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs

from skyward.errors import ConfigurationError, MissingPackageError
from skyward.secrets import register_secret
from skyward.providers.base import ProviderConfig
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


# --- what a spec lacks to start ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class MissingCredential:
    """What a provider config lacks to authenticate, found when a pool starts, before it asks the
    cloud for anything (from the environment and the provider's usual files; AWS's chain may ask
    the instance metadata service for a role).

    A config answers one from its optional `missing_credentials()` (None: it has what it needs).
    `provider` is the config's public name ("RunPod"), `credential` what is missing as a user sets
    it ("RUNPOD_API_KEY"), `fix` how to give it ("set it or pass RunPod(api_key=...)"), and
    `looked` where it was looked for (`CredentialStatus.where`). `str()` is the reason a pool
    gives when it skips the spec: "no RUNPOD_API_KEY (set it or pass RunPod(api_key=...))".
    """

    provider: str
    credential: str
    fix: str
    looked: str = ""

    def __str__(self) -> str:
        return f"no {self.credential} ({self.fix})"


def lacking(
    status: CredentialStatus, *, provider: str, credential: str, fix: str
) -> MissingCredential | None:
    """`status` (what a config's `credentials()` found) as the `MissingCredential` a pool reports,
    or None when a credential was found: the one place `sky providers` and a pool agree on."""
    if status.found:
        return None
    return MissingCredential(provider=provider, credential=credential, fix=fix, looked=status.where)


def missing_credentials(config: ProviderConfig) -> MissingCredential | None:
    """What `config` lacks to start, asked of its own `missing_credentials()`; None where it does
    not say (SSH, Local, a third-party provider: its start tells)."""
    found = config.missing_credentials()
    return found if isinstance(found, MissingCredential) else None


@attrs.frozen(init=False)
class UninstalledProvider(ProviderConfig):
    """`sky.RunPod` when skyward-runpod is not installed: a stand-in that takes any settings, so a
    script naming several providers builds on a machine that has only some of them installed.

    A pool with several specs skips it (saying `message`, which names the pip command) and starts
    the next spec; a pool with it alone raises `MissingPackageError` when it starts, before
    anything is provisioned. Each public name has its own subclass (`uninstalled_provider`),
    whose `__name__` is that name, so `repr` and pickling read as the real class would.
    """

    settings: tuple[tuple[str, Any], ...] = attrs.field(hash=False)

    #: The public name ("RunPod"), its distribution ("skyward-runpod") and the registry's words.
    public: ClassVar[str] = ""
    package: ClassVar[str] = ""
    message: ClassVar[str] = ""
    #: Nothing is mounted by a provider that cannot start: no volume check at construction.
    mounts_volumes: ClassVar[bool] = False

    def __init__(self, **settings: Any) -> None:
        self.__attrs_init__(settings=tuple(sorted(settings.items())))

    def __repr__(self) -> str:
        given = ", ".join(f"{key}=..." for key, _ in self.settings)
        return f"{self.public}({given}) [{self.package} is not installed]"

    @property
    def name(self) -> str:
        return self.public.lower()

    def create(self, options: object = None) -> Any:
        """Nothing can start without the package: the registry's error, naming the pip command."""
        raise MissingPackageError(self.message)


_UNINSTALLED: dict[tuple[str, str, str], type[UninstalledProvider]] = {}


def uninstalled_provider(public: str, package: str, message: str) -> type[UninstalledProvider]:
    """The stand-in class for `sky.<public>` while `package` is missing (`message`: why, and the
    pip command). The same class each time, so a spec holding one pickles by reference."""
    key = (public, package, message)
    if key not in _UNINSTALLED:
        namespace = {"public": public, "package": package, "message": message, "__module__": "skyward",
                     "__qualname__": public, "__doc__": f"sky.{public}, which needs {package}: {message}"}
        _UNINSTALLED[key] = type(public, (UninstalledProvider,), namespace)
    return _UNINSTALLED[key]
