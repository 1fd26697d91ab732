"""Verda (formerly DataCrunch) provider for Skyward: `sky.Verda(...)`, one GPU VM per node."""

from skyward_verda.config import Verda

__all__ = ["Verda"]
__version__ = "0.1.0"
