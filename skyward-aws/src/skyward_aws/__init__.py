"""AWS provider (EC2 on-demand and spot) for Skyward: `sky.AWS(...)`, see docs/aws.md."""

from skyward_aws.config import AWS

__all__ = ["AWS"]
__version__ = "0.1.0"
