"""Lambda Cloud provider for Skyward: `sky.LambdaCloud(...)`, one on-demand GPU VM per node."""

from skyward_lambda.config import LambdaCloud

__all__ = ["LambdaCloud"]
__version__ = "0.1.0"
