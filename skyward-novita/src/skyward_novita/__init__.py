"""Novita AI provider for Skyward: `sky.Novita(...)`, one GPU container instance per node."""

from skyward_novita.config import Novita

__all__ = ["Novita"]
__version__ = "0.1.0"
