"""What counts as a secret, and how Skyward keeps secret values out of everything a person sees.

Masking is by value: once a value is known to be a secret, every occurrence of it in a console
line, an event, the client log or an exception raised to the user reads `***`, whatever produced
the text (a task's `print`, a bootstrap command, a remote traceback, a plugin's message). Masking by
name alone (`HF_TOKEN=***` in a repr) misses the same value printed by a task.

A value is a secret when

- it was registered with `register_secret`: provider API keys and SSH keys, plugin tokens
  (`huggingface(token=...)`), `PipIndex` passwords, and the image's credentials when a pool starts;
- it is the value of an environment variable whose name says it is a credential (`is_secret_name`);
- it is the password of a URL, `scheme://user:password@host`, or a token that is a URL's whole
  userinfo, `https://ghp_...@github.com` (`url_passwords`). Such a value is masked wherever it
  appears in a URL, registered or not.

The name rule: a name is split into words at underscores, dashes, dots and lower-to-upper case
changes (`HF_TOKEN`, `wandbApiKey`); it names a credential when one of its words is in
`SECRET_WORDS` (TOKEN, KEY, SECRET, PASSWORD, PASS, AUTH, CREDENTIALS...), or ends in TOKEN,
SECRET, PASSWORD or APIKEY (`GHTOKEN`). Whole words, not substrings: `KEYBOARD_LAYOUT`,
`TOKENIZERS_PARALLELISM`, `AUTHOR` and `BYPASS_PROXY` are not credentials, and masking their values
("false", "us") would garble every line that contains them. For the same reason values shorter than
`MIN_SECRET_LENGTH` characters and yes/no words (`true`, `false`, `none`...) are never secrets.

This module imports nothing of Skyward's and nothing heavy: `skyward.observe.events`,
`skyward.observe.logging` and `skyward.image` build on it, and a worker may import it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from urllib.parse import unquote

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "SECRET_WORDS",
    "clear_secrets",
    "env_secrets",
    "is_secret_name",
    "mask_exception",
    "mask_ordered",
    "mask_secrets",
    "masking_order",
    "register_secret",
    "registered_secrets",
    "strip_url_password",
    "url_passwords",
]

MASK = "***"
#: Shorter values would mask ordinary words and numbers all over the output.
MIN_SECRET_LENGTH = 4

#: Words of a variable name that make its value a credential.
SECRET_WORDS = frozenset({
    "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS", "PASSPHRASE",
    "KEY", "KEYS", "APIKEY", "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "COOKIE",
})
#: Endings of a word that make its value a credential: `GHTOKEN`, `OPENAIAPIKEY`, `DBPASSWORD`.
_SECRET_ENDINGS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY")
#: Values that are never credentials, whatever the name: masking them would garble every line.
_PLAIN_VALUES = frozenset({"true", "false", "yes", "none", "null"})

_WORD_BREAK = re.compile(r"[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])")
#: The password of `scheme://user:password@host` (user and password without `/`, `@`, spaces).
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#@:]*:)(?P<password>[^\s/?#@]+)@")
#: A token standing alone as an http(s) URL's user part, `https://ghp_...@github.com` (no `:` in the
#: userinfo): Git hosts and indexes take a token that way, and then the whole userinfo is the
#: credential. Sixteen characters or more: a login name (`ssh://ubuntu@host`) is not a token, and
#: masking it everywhere would garble every line that names it.
_URL_TOKEN = re.compile(r"(?P<head>\bhttps?://)(?P<password>[^\s/?#@:]{16,})@", re.IGNORECASE)

_registry: set[str] = set()
_lock = threading.Lock()
#: Moves on every change of the registry, so a reader can keep its own sorted copy until it does.
_generation = 0


# --- what is a secret ---------------------------------------------------------------------------


def is_secret_name(name: str) -> bool:
    """Whether the variable `name` holds a credential by its name (see the module's rule)."""
    for word in _WORD_BREAK.split(name):
        upper = word.upper()
        if upper in SECRET_WORDS or upper.endswith(_SECRET_ENDINGS):
            return True
    return False


def _maskable(value: str) -> bool:
    return len(value) >= MIN_SECRET_LENGTH and value.strip().lower() not in _PLAIN_VALUES


def url_passwords(text: str) -> tuple[str, ...]:
    """The password of every `scheme://user:password@host` URL in `text`, as written and decoded
    (`p%40ss` is also `p@ss`: a tool may print either)."""
    found: list[str] = []
    for match in (*_URL_PASSWORD.finditer(text), *_URL_TOKEN.finditer(text)):
        password = match.group("password")
        for form in (password, unquote(password)):
            if len(form) >= MIN_SECRET_LENGTH and form not in found:
                found.append(form)
    return tuple(found)


def strip_url_password(url: str) -> str:
    """`url` with the password of its credentials read `***` (`https://user:***@host/simple`), and
    a token that is the whole userinfo too (`https://***@github.com/org/repo`)."""
    masked = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}{MASK}@", url)
    return _URL_TOKEN.sub(lambda m: f"{m.group('head')}{MASK}@", masked)


def env_secrets(env: Mapping[str, str]) -> tuple[str, ...]:
    """The secrets of an environment: the values of credential-named variables (`HF_TOKEN`,
    `AWS_SECRET_ACCESS_KEY`, `DB_PASS`...) and the URL passwords in any value (`DATABASE_URL`)."""
    found: dict[str, None] = {}
    for name, value in env.items():
        if is_secret_name(name) and _maskable(value):
            found[value] = None
        found.update(dict.fromkeys(url_passwords(value)))
    return tuple(found)


# --- the registry -------------------------------------------------------------------------------


def register_secret(value: str) -> None:
    """Mask `value` as `***` from now on, in this process's console, events, log and errors.

    The URL passwords inside `value` are registered too (a registered index URL hides its password
    also where the URL is printed in another form). Values shorter than `MIN_SECRET_LENGTH` are
    ignored.
    """
    if not isinstance(value, str):
        return
    candidates = [value, *url_passwords(value)]
    global _generation
    with _lock:
        before = len(_registry)
        _registry.update(v for v in candidates if len(v) >= MIN_SECRET_LENGTH)
        if len(_registry) != before:
            _generation += 1


def registered_secrets() -> tuple[str, ...]:
    """Every value registered with `register_secret` so far."""
    with _lock:
        return tuple(sorted(_registry))


def registry_generation() -> int:
    """A number that changes whenever the registered secrets do (a cache key for their order)."""
    return _generation


def clear_secrets() -> None:
    """Forget every registered secret (`skyward.observe.logging.reset_logging`, for tests and embedders)."""
    global _generation
    with _lock:
        _registry.clear()
        _generation += 1


# --- masking ------------------------------------------------------------------------------------


def mask_secrets(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every occurrence of each of `secrets` and every URL password read `***`.

    Longest secrets go first so a secret containing another is masked whole. Empty strings are
    ignored: masking "" would mangle every line. Only `secrets` are masked, not the registry: see
    `mask` for that.
    """
    return mask_ordered(text, masking_order(secrets))


def masking_order(secrets: Iterable[str]) -> list[str]:
    """`secrets` as `mask_ordered` takes them: distinct, non-empty, longest first (sort once,
    mask many strings)."""
    return sorted({s for s in secrets if s}, key=len, reverse=True)


def mask_ordered(text: str, ordered: list[str]) -> str:
    """`mask_secrets` with the secrets already in `masking_order`."""
    for secret in ordered:
        if secret in text:
            text = text.replace(secret, MASK)
    if "://" in text and "@" in text:
        text = strip_url_password(text)
    return text


def mask(text: str, extra: Iterable[str] = ()) -> str:
    """`text` with the registered secrets, `extra` and URL passwords masked."""
    with _lock:
        secrets = [*_registry, *extra] if _registry else list(extra)
    return mask_secrets(text, secrets)


def mask_exception(exc: BaseException, extra: Iterable[str] = ()) -> BaseException:
    """Mask the registered secrets (and `extra`) out of `exc`'s text, in place; returns `exc`.

    Covers what `str(exc)` and a printed traceback are made of for ordinary exceptions: the string
    `args` (also inside tuples, as `KeyError` and `OSError` keep them), `OSError`'s `strerror` and
    file names, string attributes, notes, and the same for its cause, context and, in a group, its
    sub-exceptions. An exception class whose `__str__` computes its text from anything else is
    out of reach.
    """
    extra = tuple(extra)
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        _mask_one(current, extra)
        for linked in (current.__cause__, current.__context__, *getattr(current, "exceptions", ())):
            if isinstance(linked, BaseException):
                pending.append(linked)
    return exc


def _mask_value(value: object, extra: tuple[str, ...]) -> object:
    if isinstance(value, str):
        return mask(value, extra)
    if type(value) is tuple and any(isinstance(v, str) for v in value):  # not a named tuple's type
        return tuple(_mask_value(v, extra) for v in value)
    return value


def _mask_one(exc: BaseException, extra: tuple[str, ...]) -> None:
    try:
        masked = tuple(_mask_value(arg, extra) for arg in exc.args)
        if masked != exc.args:
            exc.args = masked
        if isinstance(exc, OSError):
            for name in ("strerror", "filename", "filename2"):
                value = getattr(exc, name, None)
                if isinstance(value, str):
                    setattr(exc, name, mask(value, extra))
        for name, value in list(getattr(exc, "__dict__", {}).items()):
            if name == "__notes__" and isinstance(value, list):
                value[:] = [_mask_value(note, extra) for note in value]
            elif isinstance(value, str | tuple):
                new = _mask_value(value, extra)
                if new != value:
                    setattr(exc, name, new)
    except (AttributeError, TypeError):  # a read-only attribute, a slotted exception: mask what can be
        pass
