"""PyTorch plugins for Skyward (DDP process group, Accelerate launcher)."""

__version__ = "0.1.0"
