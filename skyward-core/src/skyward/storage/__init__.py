"""`sky.storage`: a small client for S3-compatible object stores, and presets for the common ones.

    with sky.storage.S3(region="us-east-1") as s3:
        s3.upload("my-bucket", "model.pt", key="checkpoints/model.pt")
        keys = s3.ls("my-bucket", prefix="checkpoints/")
        s3.download("my-bucket", "checkpoints/model.pt", "local/model.pt")

- `client.py`       `Storage` (the store, a frozen value), `StorageClient` (an open one), the errors
- `credentials.py`  credentials as strings or functions (sync or async), resolved late, masked;
                    `EphemeralKeys`, a key pair minted on first use and deleted at close
- `hyperstack.py`   Hyperstack's access-key API: the ephemeral keys of `Hyperstack`
- `presets.py`      `S3`, `R2`, `GCS`, `Wasabi`, `Backblaze`, `Hyperstack`: each store's endpoint

A `Storage` is also what `sky.Volume(storage=...)` mounts on the nodes (see docs/storage.md).
"""

from __future__ import annotations

from skyward.storage.client import (
    DEFAULT_PART_SIZE,
    Storage,
    StorageClient,
    StorageError,
    StorageNotFoundError,
)
from skyward.storage.credentials import Credential
from skyward.storage.presets import GCS, R2, S3, Backblaze, Hyperstack, Wasabi

__all__ = [
    "DEFAULT_PART_SIZE", "GCS", "R2", "S3", "Backblaze", "Credential", "Hyperstack", "Storage",
    "StorageClient", "StorageError", "StorageNotFoundError", "Wasabi",
]
