"""Google Cloud (Compute Engine) provider for Skyward: `sky.GCP(...)`, one GPU VM per node."""

from skyward_gcp.config import GCP

__all__ = ["GCP"]
__version__ = "0.1.0"
