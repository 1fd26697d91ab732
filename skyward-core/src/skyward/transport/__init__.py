"""Byte-stream channels that carry frames between the client and a worker."""

from skyward.transport.base import Channel

__all__ = ["Channel"]
