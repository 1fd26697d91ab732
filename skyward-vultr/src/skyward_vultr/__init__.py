"""Vultr provider for Skyward: `sky.Vultr(...)`, one Cloud GPU instance per node."""

from skyward_vultr.config import Vultr

__all__ = ["Vultr"]
__version__ = "0.1.0"
