"""Hyperstack (NexGen Cloud) provider for Skyward: `sky.Hyperstack(...)`, one GPU VM per node."""

from skyward_hyperstack.config import Hyperstack

__all__ = ["Hyperstack"]
__version__ = "0.1.0"
