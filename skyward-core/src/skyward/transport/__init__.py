"""Byte-stream channels that carry frames between the client and a worker.

`Channel` resolves on first use: the node's keeper (`transport/keeper.py`) imports this package
and needs none of the wire format (lz4, cloudpickle) to carry bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyward.transport.base import Channel

__all__ = ["Channel"]


def __getattr__(name: str) -> Any:
    if name == "Channel":
        from skyward.transport.base import Channel

        return Channel
    raise AttributeError(f"module 'skyward.transport' has no attribute {name!r}")
