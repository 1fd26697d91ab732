"""Scaleway provider for Skyward: `sky.Scaleway(...)`, one GPU Instance per node."""

from skyward_scaleway.config import Scaleway

__all__ = ["Scaleway"]
__version__ = "0.1.0"
