"""The remote environment a pool's workers run in: ``Image`` and its scoped ``PipIndex``.

An ``Image`` is a declaration, not a build: the bootstrap renderer turns it into shell phases
(uv venv, apt, pip, env, includes) and plugins reshape it through their ``transform`` hook before
that happens. Because plugins fold over it, every way of changing an image returns a *new* image
(``with_pip``, ``with_env``, ``with_pip_index``, ``with_apt``, ``merge``); nothing mutates.

Images travel inside a ``Spec`` to providers and to workers with cloudpickle, so they hold only
plain data: tuples, strings and two plain ``dict`` fields (``env``, ``shell_vars``). The dicts take
part in equality but not in the hash, so an image stays usable as a dict key or set member.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import attrs

from skyward.dataclass_view import dataclass_view
from skyward.errors import ConfigurationError
from skyward.secrets import env_secrets as _env_secrets
from skyward.secrets import (
    mask_secrets,
    register_secret,
    registered_secrets,
    strip_url_password,
    url_passwords,
)

__all__ = ["DEFAULT_IMAGE", "DEFAULT_METRICS", "Image", "PipIndex", "SkywardSource"]

SkywardSource = Literal["auto", "local", "github", "pypi"]
SKYWARD_SOURCES: tuple[str, ...] = ("auto", "local", "github", "pypi")

#: ``Image.metrics`` default: the metrics module's default collector set. ``None`` disables metrics.
DEFAULT_METRICS = "default"

_PYTHON_VERSION = re.compile(r"^3\.\d+(\.\d+)?$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# --- converters: let natural input (lists, single strings, Paths, dicts) become the stored shape


def _str_tuple(value: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None) -> tuple[str, ...]:
    """A list (or a lone string) of names as a tuple; a lone string is one item, not its letters."""
    if value is None:
        return ()
    if isinstance(value, str | os.PathLike):
        return (os.fspath(value),)
    return tuple(os.fspath(item) for item in value)


def env_secrets(env: dict[str, str]) -> tuple[str, ...]:
    """The credentials in `env`: the values of variables whose names say so (`HF_TOKEN`,
    `AWS_SECRET_ACCESS_KEY`, `DB_PASS`, `OPENAI_API_KEY`...) and the passwords of URLs in any value
    (`https://user:password@host`); what a pool masks wherever its output is shown. The name rule
    is `skyward.secrets.is_secret_name`."""
    return _env_secrets(env)


def image_secrets(image: Image) -> tuple[str, ...]:
    """Every credential `image` carries: `env_secrets(image.env)` and its `PipIndex` passwords."""
    found = dict.fromkeys(env_secrets(image.env))
    for index in image.pip_indexes:
        found.update(dict.fromkeys(url_passwords(index.url)))
    return tuple(found)


def _env_repr(env: dict[str, str]) -> str:
    """`env` as repr shows it: credentials (`env_secrets`, and values registered as secrets, as
    `huggingface(token=...)` does) read `***`, and so does the password of a URL."""
    secrets = {*registered_secrets(), *env_secrets(env)}
    shown = {name: "***" if value in secrets else mask_secrets(value, secrets) for name, value in env.items()}
    return repr(shown)


def _env_dict(field: str) -> Any:
    """Converter for ``env``/``shell_vars``: a plain ``dict[str, str]`` with checked names."""

    def convert(value: Mapping[str, object] | None) -> dict[str, str]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ConfigurationError(
                f"Image({field}={value!r}): expected a mapping of names to values; "
                f'pass e.g. {field}={{"HF_HOME": "/data/hf"}}'
            )
        result: dict[str, str] = {}
        for name, raw in value.items():
            if not isinstance(name, str) or not _ENV_NAME.match(name):
                raise ConfigurationError(
                    f"Image({field}=...): {name!r} is not a valid environment variable name; "
                    "use letters, digits and underscores, not starting with a digit"
                )
            if raw is None or not isinstance(raw, str | int | float | bool):
                raise ConfigurationError(
                    f"Image({field}=...): the value of {name} is {raw!r}; environment values must be "
                    f'strings (or numbers), e.g. {field}={{"{name}": "value"}}'
                )
            result[name] = str(raw)
        return result

    return convert


def _includes(value: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None) -> tuple[str, ...]:
    """Converter for ``includes``: each path made absolute and checked to exist, here and now.

    Includes are read on the client when the pool starts (`sky.Local()` puts them on the workers'
    ``PYTHONPATH``, a remote provider copies them up after provisioning). Resolving them here, against
    the directory the image is built in, means a later ``os.chdir`` cannot change what they name, and a
    path that does not exist fails on the line that wrote it instead of at start, or after paying for a
    machine, or not at all (a task's ``import`` failing on the worker).
    """
    resolved: list[str] = []
    for item in _str_tuple(value):
        path = os.path.abspath(os.path.expanduser(item))
        if not os.path.exists(path):
            if os.path.isabs(os.path.expanduser(item)):
                where, fix = "", "fix the path, or leave it out"
            else:
                where = f" (a relative path starts in the current directory, {os.getcwd()})"
                fix = (
                    "fix the path, or make it absolute so it does not depend on where the script runs, "
                    'e.g. str(Path(__file__).parent / "src")'
                )
            raise ConfigurationError(
                f"Image(includes=[{item!r}]): {path} does not exist{where}. Includes name local folders "
                f"or .py files to ship to the workers: {fix}."
            )
        if path not in resolved:
            resolved.append(path)
    return tuple(resolved)


def _python(value: object) -> str:
    if isinstance(value, float):
        raise ConfigurationError(
            f"Image(python={value!r}): a float cannot tell 3.1 from 3.10; pass the version as a string, "
            f'e.g. python="{value}"'
        )
    return str(value)


def _pip_indexes(value: Iterable[PipIndex | Mapping[str, Any]] | PipIndex | None) -> tuple[PipIndex, ...]:
    """Accept ``PipIndex`` objects or plain tables (as ``skyward.toml`` gives them)."""
    if value is None:
        return ()
    if isinstance(value, PipIndex | Mapping):
        value = [value]
    indexes: list[PipIndex] = []
    for item in value:
        if isinstance(item, PipIndex):
            indexes.append(item)
        elif isinstance(item, Mapping):
            indexes.append(PipIndex(**item))
        else:
            raise ConfigurationError(
                f"Image(pip_indexes=...): {item!r} is not a PipIndex; pass "
                'sky.PipIndex(url="https://...", packages=["torch"])'
            )
    return tuple(indexes)


def _metrics(value: object) -> object:
    """Checked now (a wrong item fails on this line, naming the fix); lists become tuples so the
    image stays hashable and immutable."""
    from skyward.metrics import resolve

    resolve(value)
    return tuple(value) if isinstance(value, list) else value


def _dedupe(items: Iterable[Any]) -> tuple[Any, ...]:
    """Keep the first occurrence of each item, in order (installing a package twice is noise)."""
    seen: list[Any] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return tuple(seen)


# --- validators


def _check_url(instance: PipIndex, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or "://" not in value:
        raise ConfigurationError(
            f"PipIndex(url={value!r}): expected an index URL; "
            'pass e.g. url="https://download.pytorch.org/whl/cu121"'
        )


def _check_python(instance: Image, attribute: attrs.Attribute[str], value: str) -> None:
    if value != "auto" and not _PYTHON_VERSION.match(value):
        raise ConfigurationError(
            f'Image(python={value!r}): expected "auto" or a CPython version like "3.12"; '
            'pass python="auto" to match this interpreter'
        )


def _check_packages(
    instance: Image, attribute: attrs.Attribute[tuple[str, ...]], value: tuple[str, ...]
) -> None:
    """A package list holds packages: an entry that starts with `-` would be an option of uv or
    apt-get (an index to install from, a config file), which the bootstrap never passes on."""
    options = [item for item in value if item.strip().startswith("-")]
    if options:
        fix = (
            "name indexes with Image(pip_indexes=[sky.PipIndex(url=..., packages=[...])]) and "
            "pin versions in the requirement itself (\"torch==2.5.1\")"
            if attribute.name == "pip" else "apt options are not supported; list package names only"
        )
        raise ConfigurationError(
            f"Image({attribute.name}=[...]): {', '.join(repr(o) for o in options)} is an option, not a "
            f"package; {fix}"
        )


def _check_source(instance: Image, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in SKYWARD_SOURCES:
        valid = ", ".join(repr(s) for s in SKYWARD_SOURCES)
        raise ConfigurationError(f"Image(skyward_source={value!r}): expected one of {valid}")


def _check_timeout(instance: Image, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigurationError(
            f"Image(bootstrap_timeout={value!r}): must be a positive number of seconds; "
            "pass e.g. bootstrap_timeout=600"
        )


@dataclass_view
@attrs.frozen
class PipIndex:
    """A package index used only for the named packages (e.g. CUDA wheels of torch).

    Scoping matters: pointing *every* package at a custom index is how dependency confusion and
    mysterious resolution failures happen, so an index always names the packages it serves.

    A private index's credentials go in the URL (`https://user:password@host/simple`). The password
    is a secret: its repr reads `***`, and it is registered for masking
    (`skyward.secrets.register_secret`) the moment the index is made, so no console line, event,
    log line or error shows it. On a node it is written only into a 0600 file the install reads.
    """

    url: str = attrs.field(validator=_check_url, repr=lambda url: repr(strip_url_password(url)))
    packages: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)

    def __attrs_post_init__(self) -> None:
        for password in url_passwords(self.url):
            register_secret(password)


@dataclass_view
@attrs.frozen(kw_only=True)
class Image:
    """What a worker needs before user code runs: Python, packages, environment, local files.

    ``python="auto"`` means the client's own ``major.minor``, so pickled code meets the same
    bytecode version on the other side. ``metrics`` is what each node samples (see
    ``skyward.metrics``): a list of collectors, ``sky.metrics.Default()`` (or ``"default"``) for the
    default set, ``None`` for none.
    ``includes`` are stored as absolute paths, resolved (``~`` and relative paths against the
    current directory) and checked to exist when the image is built.
    """

    python: str = attrs.field(default="auto", converter=_python, validator=_check_python)
    pip: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple, validator=_check_packages)
    pip_indexes: tuple[PipIndex, ...] = attrs.field(default=(), converter=_pip_indexes)
    apt: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple, validator=_check_packages)
    env: dict[str, str] = attrs.field(factory=dict, converter=_env_dict("env"), hash=False, repr=_env_repr)
    shell_vars: dict[str, str] = attrs.field(factory=dict, converter=_env_dict("shell_vars"), hash=False)
    includes: tuple[str, ...] = attrs.field(default=(), converter=_includes)
    excludes: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)
    skyward_source: str = attrs.field(default="auto", validator=_check_source)
    metrics: object = attrs.field(default=DEFAULT_METRICS, converter=_metrics)
    bootstrap_timeout: int = attrs.field(default=300, validator=_check_timeout)

    def python_version(self) -> str:
        """The ``major.minor`` to install: ``"auto"`` resolves to the interpreter running this client."""
        if self.python == "auto":
            return f"{sys.version_info.major}.{sys.version_info.minor}"
        return self.python

    def with_pip(self, *packages: str) -> Image:
        """A copy with ``packages`` appended to ``pip`` (ones already listed are not repeated)."""
        return attrs.evolve(self, pip=_dedupe((*self.pip, *packages)))

    def with_apt(self, *packages: str) -> Image:
        """A copy with ``packages`` appended to ``apt`` (ones already listed are not repeated)."""
        return attrs.evolve(self, apt=_dedupe((*self.apt, *packages)))

    def with_env(self, **variables: object) -> Image:
        """A copy whose ``env`` has ``variables`` set, replacing existing values of the same name."""
        return attrs.evolve(self, env={**self.env, **variables})

    def with_pip_index(self, index: PipIndex) -> Image:
        """A copy that also routes ``index.packages`` to ``index.url``."""
        return attrs.evolve(self, pip_indexes=_dedupe((*self.pip_indexes, index)))

    def merge(self, other: Image) -> Image:
        """Layer ``other`` on top of this image, for combining a base image with additions.

        - sequences (``pip``, ``pip_indexes``, ``apt``, ``includes``, ``excludes``) are
          concatenated, this image's items first, without repeating an item;
        - mappings (``env``, ``shell_vars``) are merged, ``other`` winning on the same name;
        - single values (``python``, ``skyward_source``, ``metrics``, ``bootstrap_timeout``) take
          ``other``'s value where it differs from the default, else keep this image's.
        """
        changes: dict[str, Any] = {}
        for field in attrs.fields(Image):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            if isinstance(mine, tuple) and field.name != "metrics":
                changes[field.name] = _dedupe((*mine, *theirs))
            elif isinstance(mine, dict):
                changes[field.name] = {**mine, **theirs}
            else:
                changes[field.name] = theirs if theirs != field.default else mine
        return Image(**changes)


DEFAULT_IMAGE = Image()
