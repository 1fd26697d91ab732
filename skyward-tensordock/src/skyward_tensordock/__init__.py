"""TensorDock provider for Skyward: `sky.TensorDock(...)`, one marketplace VM per node."""

from skyward_tensordock.config import TensorDock

__all__ = ["TensorDock"]
__version__ = "0.1.0"
