"""A pool's volumes become its nodes' `volumes` bootstrap op (core's `skyward_bootstrap_ops`).

Each `sky.Volume` gets its store here, on the client, once per pool: its own `storage=`, or the
provider's natural store (`ProviderConfig.volume_storage(spec)`: S3 in the pool's region on AWS,
with short-lived keys). The keys are resolved now (functions called, async ones awaited) and
registered as secrets, so they are masked in every event and log line, and the op writes them to
a 0600 file on the node (see `skyward.bootstrap.volumes`). A store given without keys passes on
the keys boto3 finds on this machine; without boto3, the node looks for its own (env, a role).
"""

from __future__ import annotations

from typing import Any

from skyward.bootstrap.ops import Op
from skyward.bootstrap.volumes import VolumePlan, volumes_op
from skyward.errors import ConfigurationError
from skyward.secrets import register_secret
from skyward.storage.client import Storage

__all__ = ["volume_ops"]


def volume_ops(cluster: Any) -> tuple[Op, ...]:
    """The `volumes` op for `cluster`'s spec, or nothing (no volumes, or a provider that mounts
    none, as `Local`, which warns instead)."""
    spec = getattr(cluster, "spec", None)
    volumes = tuple(getattr(spec, "volumes", ()) or ())
    if not volumes or not getattr(spec.provider, "mounts_volumes", True):
        return ()
    natural: list[Storage] = []  # asked for at most once per pool (AWS mints keys for it)
    plans = []
    for volume in volumes:
        storage = volume.storage
        if storage is None:
            if not natural:
                natural.append(_natural_storage(spec, volume))
            storage = natural[0]
        plans.append(_plan(volume, storage))
    return (volumes_op(plans),)


def _natural_storage(spec: Any, volume: Any) -> Storage:
    provider = spec.provider
    answer = getattr(provider, "volume_storage", None)
    name = getattr(provider, "name", type(provider).__name__)
    if not callable(answer):
        raise ConfigurationError(
            f"Volume(bucket={volume.bucket!r}, mount={volume.mount!r}): {name} has no object store of its "
            "own; pass storage=, e.g. storage=sky.storage.S3(region=...) or sky.storage.R2(...)"
        )
    storage = answer(spec)
    if not isinstance(storage, Storage):
        raise ConfigurationError(f"{name}.volume_storage answered {storage!r}, not a sky.storage.Storage")
    return storage


def _plan(volume: Any, storage: Storage) -> VolumePlan:
    access, secret, token = storage.keys()
    if access is None:
        access, secret, token = _client_keys()
    return VolumePlan(
        bucket=volume.bucket, prefix=volume.prefix, mount=volume.mount, read_only=volume.read_only,
        mode=volume.mode, endpoint=storage.endpoint, region=storage.signing_region,
        path_style=storage.path_style,
        flavor=storage.flavor, access_key=access, secret_key=secret, session_token=token,
    )


def _client_keys() -> tuple[str | None, str | None, str | None]:
    """The keys boto3 finds on this machine (environment, ~/.aws, a role), or none."""
    try:
        import boto3
    except ImportError:
        return None, None, None
    credentials = boto3.session.Session().get_credentials()
    if credentials is None:
        return None, None, None
    frozen = credentials.get_frozen_credentials()
    for secret in (frozen.secret_key, frozen.token):
        if secret:
            register_secret(secret)
    return frozen.access_key, frozen.secret_key, frozen.token
