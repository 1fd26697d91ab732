"""Checks every cloud's config makes on the same two settings: its API key and its endpoint.

A config is a frozen attrs value checked when built, so a bad setting fails on the line that
wrote it, naming the config and the argument: `secret(cloud)` is the validator of a key given
explicitly (a non-empty string, or None to read the cloud's variable when a pool starts; kept out
of logs from the moment the config exists), and `api_url(cloud)` the converter of an endpoint
(an http(s) URL without its trailing slash, or None for the cloud's own).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from skyward.errors import ConfigurationError
from skyward.secrets import register_secret


def secret(cloud: str) -> Callable[[Any, Any, object], None]:
    """The attrs validator of a secret argument of `cloud`'s config ("Novita")."""

    def check(instance: Any, attribute: Any, value: object) -> None:
        if value is None:
            return
        if not isinstance(value, str) or not value.strip():
            raise ConfigurationError(
                f"{cloud}({attribute.name}=...): expected the key as a non-empty string, or None"
            )
        register_secret(value)

    return check


def api_url(cloud: str) -> Callable[[object], str | None]:
    """The attrs converter of `cloud`'s `api_url=` argument."""

    def convert(value: object) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) or not value.startswith(("http://", "https://")):
            raise ConfigurationError(f"{cloud}(api_url={value!r}): expected an http(s) URL")
        return value.rstrip("/")

    return convert
