"""RunPod provider for Skyward: `sky.RunPod(...)`, one pod per node, reached over SSH."""

from skyward_runpod.config import RunPod

__all__ = ["RunPod"]
__version__ = "0.1.0"
