"""Secrets in pool tables: found once, kept out of the database and out of every answer.

A pool table arrives with its credentials in it: a provider's `api_key`, an `Image.env` token
(`HF_TOKEN`), an index URL with a password (`https://user:pass@host/simple`). The server needs
them to start the pool, so it keeps the table as sent in memory (`Held.config`), and nowhere else:

- **At rest** (`pools.db`) each secret is replaced by a reference to where the server can find it
  again, `{"from_env": "HF_TOKEN"}`: the name of a variable of the server's environment. A server
  restarted after a crash (`Pools.restore`) reads the value from its environment by that name; when
  the variable is not set, the pool is not restored and its error names the variable. A request
  may send such a reference itself, and the server resolves it from its own environment at create
  time: the secret then never crosses the wire.
- **In answers** (list, get, view, history, runs, the run's output) a secret reads `***`: a value
  whose key names a credential whole, a URL's password inside the URL. Every string the server
  sends is also masked by value against every secret this process knows (`skyward.secrets.mask`:
  the pool's secrets are registered when it is created), so a secret quoted in an error or an
  event reads `***` too.

What is a secret is `skyward.secrets`' rule (`is_secret_name`, `url_passwords`): a key such as
`api_key`, `client_secret`, `HF_TOKEN`, and any URL password, at any depth of the table. A key
whose last word says it names *where* a credential is (`key_file`, `token_path`, `key_name`) is not
a secret: the path is needed to restore the pool and tells nothing.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from skyward.secrets import MASK, env_secrets, is_secret_name, mask, strip_url_password

#: The key of a reference to a secret, `{"from_env": "HF_TOKEN"}`, in a stored (or sent) table.
REFERENCE = "from_env"
#: A key whose last word is one of these names a credential's location, not the credential.
_LOCATION_WORDS = frozenset({"FILE", "FILES", "PATH", "PATHS", "DIR", "FOLDER", "NAME"})
_WORD_BREAK = re.compile(r"[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])")
#: The tables whose keys are variable names: a secret there is found again under its own name.
_ENVIRONMENTS = ("env", "shell_vars")

Path = tuple[str | int, ...]


class MissingSecret(Exception):
    """A reference names variables the server's environment does not have."""

    def __init__(self, pool: str, missing: list[tuple[Path, str]]) -> None:
        self.pool, self.missing = pool, missing
        names = ", ".join(dict.fromkeys(variable for _, variable in missing))
        where = ", ".join(_dotted(path) for path, _ in missing)
        super().__init__(
            f"pool {pool!r} needs {names} from the server's environment, where the server looks for "
            f"its {where} (a secret is never stored): set {names} in the environment the server starts "
            f"in (e.g. `{missing[0][1]}=... sky server start`), or send the value in the pool's table"
        )


@attrs.frozen
class Secret:
    """One secret of a table: where it is, the whole string sent, and what to mask out of text."""

    path: Path
    value: str
    masked: tuple[str, ...]
    #: The value as answers show it: `***`, or the URL with its password masked.
    shown: str


def _named_secret(key: str) -> bool:
    words = [w for w in _WORD_BREAK.split(key) if w]
    return is_secret_name(key) and bool(words) and words[-1].upper() not in _LOCATION_WORDS


def find_secrets(table: Mapping[str, Any]) -> list[Secret]:
    """Every secret in `table` (a pool table as sent), in the order the table lists them."""
    return list(_walk(table, (), named=False))


def _walk(value: Any, path: Path, named: bool) -> Iterator[Secret]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _walk(item, (*path, key), named or (isinstance(key, str) and _named_secret(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _walk(item, (*path, index), named)
    elif isinstance(value, str):
        # `env_secrets` applies the length and yes/no rules to a named value, and finds URL passwords.
        found = env_secrets({"TOKEN" if named else "VALUE": value})
        if found:
            whole = value in found
            yield Secret(path, value, found, MASK if whole else strip_url_password(value))


def secret_values(secrets: list[Secret]) -> tuple[str, ...]:
    """What to mask out of any text about the pool: each secret, and each URL password."""
    return tuple(dict.fromkeys(value for secret in secrets for value in secret.masked))


# -- at rest ---------------------------------------------------------------------------------------


def variable_for(pool: str, table: Mapping[str, Any], secret: Secret, environ: Mapping[str, str]) -> str:
    """The variable a stored reference names: the one of the server's environment that holds this
    value now (its natural name first), else the natural name, which a restart will look for."""
    natural = _natural_name(pool, table, secret.path)
    if environ.get(natural) == secret.value:
        return natural
    holding = sorted(name for name, value in environ.items() if value == secret.value)
    return holding[0] if holding else natural


def _natural_name(pool: str, table: Mapping[str, Any], path: Path) -> str:
    """`HF_TOKEN` for `image.env.HF_TOKEN`, `RUNPOD_API_KEY` for a RunPod provider's `api_key`,
    else `SKYWARD_SECRET_<POOL>_<PATH>`."""
    if len(path) >= 2 and path[-2] in _ENVIRONMENTS and isinstance(path[-1], str):
        return path[-1]
    provider = table.get("provider")
    if len(path) == 2 and path[0] == "provider" and isinstance(provider, Mapping):
        return _variable(f"{provider.get('type', 'provider')}_{path[1]}")
    return _variable("_".join(["SKYWARD_SECRET", pool, *(str(step) for step in path)]))


def _variable(text: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", text.upper()).strip("_")


def stored_form(pool: str, table: Mapping[str, Any], secrets: list[Secret], environ: Mapping[str, str]
                ) -> dict[str, Any]:
    """`table` as the database keeps it: every secret replaced by `{"from_env": VARIABLE}`."""
    stored = copy.deepcopy(dict(table))
    for secret in secrets:
        _set(stored, secret.path, {REFERENCE: variable_for(pool, table, secret, environ)})
    return stored


def resolve(pool: str, table: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """`table` with each `{"from_env": VARIABLE}` replaced by that variable's value in `environ`;
    MissingSecret names every variable that is not set."""
    resolved = copy.deepcopy(dict(table))
    missing: list[tuple[Path, str]] = []
    for path, variable in list(_references(resolved, ())):
        if variable in environ:
            _set(resolved, path, environ[variable])
        else:
            missing.append((path, variable))
    if missing:
        raise MissingSecret(pool, missing)
    return resolved


def _references(value: Any, path: Path) -> Iterator[tuple[Path, str]]:
    if isinstance(value, Mapping):
        if set(value) == {REFERENCE} and isinstance(value[REFERENCE], str):
            yield path, value[REFERENCE]
            return
        for key, item in value.items():
            yield from _references(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _references(item, (*path, index))


def _set(table: Any, path: Path, value: Any) -> None:
    for step in path[:-1]:
        table = table[step]
    table[path[-1]] = value


def _dotted(path: Path) -> str:
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path).lstrip(".")


# -- in answers ------------------------------------------------------------------------------------


def shown_form(table: Mapping[str, Any], secrets: list[Secret], extra: tuple[str, ...] = ()
               ) -> dict[str, Any]:
    """`table` as answers show it: each secret as `Secret.shown`, and every string masked by value."""
    shown = copy.deepcopy(dict(table))
    for secret in secrets:
        _set(shown, secret.path, secret.shown)
    return redact_json(shown, extra)


def redact_json(value: Any, extra: tuple[str, ...] = ()) -> Any:
    """`value` (JSON-like data) with every string masked: registered secrets, `extra`, URL passwords."""
    if isinstance(value, str):
        return mask(value, extra)
    if isinstance(value, Mapping):
        return {key: redact_json(item, extra) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_json(item, extra) for item in value]
    return value
