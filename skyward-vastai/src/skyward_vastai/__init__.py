"""Vast.ai provider for Skyward."""

__version__ = "0.1.0"
