"""Vast.ai provider for Skyward: `sky.VastAI(...)` rents one marketplace GPU machine per node.

The provider (and with it asyncssh and the Vast SDK) is imported only when a pool starts, so
resolving `sky.VastAI` stays as light as the config itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skyward_vastai.config import VastAI

if TYPE_CHECKING:
    from skyward_vastai.provider import VastAIProvider

__version__ = "0.1.0"

__all__ = ["VastAI", "VastAIProvider"]


def __getattr__(name: str) -> Any:
    if name == "VastAIProvider":
        from skyward_vastai.provider import VastAIProvider

        return VastAIProvider
    raise AttributeError(f"module 'skyward_vastai' has no attribute {name!r}")
