"""JarvisLabs provider for Skyward: `sky.JarvisLabs(...)`, one GPU instance per node."""

from skyward_jarvislabs.config import JarvisLabs

__all__ = ["JarvisLabs"]
__version__ = "0.1.0"
