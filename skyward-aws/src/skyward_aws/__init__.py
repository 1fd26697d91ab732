"""AWS provider (EC2 on-demand and spot) for Skyward."""

__version__ = "0.1.0"
