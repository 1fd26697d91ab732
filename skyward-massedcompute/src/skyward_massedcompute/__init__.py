"""Massed Compute provider for Skyward: `sky.MassedCompute(...)`, one GPU VM per node."""

from skyward_massedcompute.config import MassedCompute

__all__ = ["MassedCompute"]
__version__ = "0.1.0"
