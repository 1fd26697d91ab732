"""Slurm provider for Skyward: `sky.Slurm(...)`, a pool that is one Slurm job."""

from skyward_slurm.config import Slurm

__all__ = ["Slurm"]
__version__ = "0.1.0"
