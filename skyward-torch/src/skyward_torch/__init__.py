"""PyTorch plugins for Skyward (DDP process group, Accelerate launcher).

Use them as `sky.plugins.torch(...)` and `sky.plugins.accelerate(...)`; importing this package
does not import torch.
"""

from skyward_torch.accelerate_plugin import accelerate
from skyward_torch.torch_plugin import torch

__all__ = ["accelerate", "torch"]
__version__ = "0.1.0"
