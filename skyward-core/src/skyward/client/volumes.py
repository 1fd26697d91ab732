"""A pool's volumes become its nodes' `volumes` bootstrap op (core's `skyward_bootstrap_ops`).

Each `sky.Volume` gets its store here, on the client, once per pool: its own `storage=`, or the
provider's natural store (`ProviderConfig.volume_storage(spec)`: S3 in the pool's region on AWS).
The keys are resolved now (functions called, async ones awaited) and registered as secrets, so
they are masked in every event and log line, and the op writes them to a 0600 file on the node
(see `skyward.bootstrap.volumes`). The nodes run on machines we do not control (a third party's
host, a shared image), so they never get this machine's own long-lived keys:

- a store with keys of its own passes those (the user chose them for the nodes);
- a store whose keys are minted (`ephemeral_keys`, Hyperstack's) is held by the pool until it
  ends (`close_volume_stores`, called when the pool lets its machines go): the last hold deletes
  the key;
- an AWS S3 store without keys (`sky.storage.S3()`, or AWS's natural store) gets keys that STS
  makes from this machine's, limited by a session policy to exactly the pool's volumes: their
  buckets and prefixes, read-only unless a volume is read-write (`scoped_s3_keys`);
- any other store without keys passes none: the node looks for its own (environment, a role), as
  `Storage` does without keys. Giving it this machine's AWS keys would hand them to another
  company's store and host.
"""

from __future__ import annotations

import contextlib
import json
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import structlog

from skyward.bootstrap.ops import Op
from skyward.bootstrap.volumes import VolumePlan, volumes_op
from skyward.errors import ConfigurationError
from skyward.secrets import register_secret
from skyward.storage.client import Storage

__all__ = [
    "FEDERATION_SECONDS",
    "POLICY_LIMIT",
    "ROLE_SECONDS",
    "Grant",
    "ScopedKeys",
    "close_volume_stores",
    "scoped_s3_keys",
    "session_policy",
    "volume_grants",
    "volume_ops",
]

#: How long the nodes' S3 keys last when made from an IAM user's keys (`sts:GetFederationToken`):
#: STS's longest, 36 hours, since a pool's length is not known when it starts. AWS cuts it to one
#: hour for the account's root keys.
FEDERATION_SECONDS = 36 * 3600
#: ...and when made from a role's session (`sts:AssumeRole` of the same role): one hour, the most
#: AWS allows for a role assumed with a role's keys ("role chaining"); a longer request fails.
ROLE_SECONDS = 3600
#: The longest session policy AWS takes (characters of its JSON text).
POLICY_LIMIT = 2048
#: The federated user's / role session's name: what CloudTrail shows for the nodes' requests.
SESSION_NAME = "skyward-volumes"
#: What a read-write volume adds to reading: writing and deleting objects, and multipart uploads
#: (started and completed under s3:PutObject; aborted and listed by these).
WRITE_ACTIONS = ("s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")
#: What to do when scoped keys cannot be made: give the volumes keys of their own.
EXPLICIT_KEYS = (
    "or give the volumes keys of their own, e.g. storage=sky.storage.S3(region=..., access_key=..., "
    "secret_key=...) (they go to every node as they are: use keys allowed only these buckets)"
)

_log = structlog.get_logger("skyward.volumes")

#: (access key, secret key, session token) for the nodes; all None: the node finds its own.
Keys = tuple[str | None, str | None, str | None]


# -- the op ----------------------------------------------------------------------------------------


def volume_ops(cluster: Any) -> tuple[Op, ...]:
    """The `volumes` op for `cluster`'s spec, or nothing (no volumes, or a provider that mounts
    none, as `Local`, which warns instead). Every store whose keys are taken is recorded against
    `cluster` first, so `close_volume_stores(cluster)` ends them even when a later one fails."""
    spec = getattr(cluster, "spec", None)
    volumes = tuple(getattr(spec, "volumes", ()) or ())
    if not volumes or not spec.provider.mounts_volumes:
        return ()
    natural: Storage | None = None  # asked for at most once per pool (AWS makes keys for it)
    by_store: dict[int, tuple[Storage, list[Any]]] = {}  # per store object, its volumes, in order
    stores: list[Storage] = []
    for volume in volumes:
        storage = volume.storage
        if storage is None:
            natural = natural or _natural_storage(spec, volume)
            storage = natural
        stores.append(storage)
        by_store.setdefault(id(storage), (storage, []))[1].append(volume)
    keys = {key: _keys_for(cluster, storage, grouped) for key, (storage, grouped) in by_store.items()}
    plans = [_plan(volume, store, keys[id(store)]) for volume, store in zip(volumes, stores, strict=True)]
    return (volumes_op(plans),)


def _natural_storage(spec: Any, volume: Any) -> Storage:
    provider = spec.provider
    name = provider.name
    storage = provider.volume_storage(spec)
    if storage is None:
        raise ConfigurationError(
            f"Volume(bucket={volume.bucket!r}, mount={volume.mount!r}): {name} has no object store of its "
            "own; pass storage=, e.g. storage=sky.storage.S3(region=...) or sky.storage.R2(...)"
        )
    if not isinstance(storage, Storage):
        raise ConfigurationError(f"{name}.volume_storage answered {storage!r}, not a sky.storage.Storage")
    return storage


def _plan(volume: Any, storage: Storage, keys: Keys) -> VolumePlan:
    access, secret, token = keys
    return VolumePlan(
        bucket=volume.bucket, prefix=volume.prefix, mount=volume.mount, read_only=volume.read_only,
        mode=volume.mode, endpoint=storage.endpoint, region=storage.signing_region,
        path_style=storage.path_style,
        flavor=storage.flavor, access_key=access, secret_key=secret, session_token=token,
    )


def _keys_for(cluster: Any, storage: Storage, volumes: Sequence[Any]) -> Keys:
    """The keys the nodes get for `storage` (see the module docstring for which, and why)."""
    if storage.ephemeral_keys is not None:
        key, hold = storage.ephemeral_keys.acquire()
        _held(cluster).append((storage, hold))
        return key.access_key, key.secret_key, None
    access, secret, token = storage.keys()
    if access is not None:
        return access, secret, token
    if storage.flavor != "AWS":
        names = ", ".join(f"Volume(bucket={v.bucket!r}, mount={v.mount!r})" for v in volumes)
        _log.info(
            "skyward.volume_keys_from_node", endpoint=storage.endpoint, volumes=names,
            hint="the store has no keys: each node uses its own (environment, a role); pass "
            "access_key= and secret_key= to give it some",
        )
        return None, None, None
    try:
        import boto3
    except ImportError:
        return None, None, None
    scoped = scoped_s3_keys(boto3.session.Session(), volume_grants(volumes), region=storage.signing_region)
    if scoped is None:  # no AWS keys on this machine: the node looks for its own (an instance role)
        return None, None, None
    return scoped.access_key, scoped.secret_key, scoped.session_token


# -- keys limited to the volumes --------------------------------------------------------------------


@attrs.frozen
class Grant:
    """One volume as a session policy sees it: a bucket, a folder of it, and whether it is written."""

    bucket: str
    prefix: str = ""
    read_only: bool = True


@attrs.frozen
class ScopedKeys:
    """Temporary S3 keys for the nodes, limited to the volumes by `policy`, for `seconds`."""

    access_key: str
    secret_key: str = attrs.field(repr=False)
    session_token: str = attrs.field(repr=False)
    seconds: int
    how: str  # "sts:GetFederationToken" or "sts:AssumeRole"
    policy: str


def volume_grants(volumes: Iterable[Any]) -> tuple[Grant, ...]:
    """The grants of `volumes` (`sky.Volume`s), in order."""
    return tuple(Grant(v.bucket, v.prefix, v.read_only) for v in volumes)


def _literal(text: str) -> str:
    """`text` as IAM reads it literally: `*`, `?` and `$` are wildcards or variables otherwise."""
    return "".join("${" + ch + "}" if ch in "*?$" else ch for ch in text)


def session_policy(grants: Sequence[Grant], partition: str = "aws") -> str:
    """The session policy (compact JSON) that allows exactly `grants`: reading (`s3:GetObject`) the
    objects under each prefix, listing (`s3:ListBucket`) only those prefixes, and for read-write
    grants `WRITE_ACTIONS` on the same objects. Nothing else: no other bucket, no bucket settings."""
    read: list[str] = []
    write: list[str] = []
    listing: dict[str, list[str] | None] = {}  # bucket -> the prefixes listed (None: all of it)
    for grant in grants:
        folder = _literal(grant.prefix.strip("/"))
        objects = f"arn:{partition}:s3:::{grant.bucket}/{folder + '/' if folder else ''}*"
        for kind, wanted in ((read, True), (write, not grant.read_only)):
            if wanted and objects not in kind:
                kind.append(objects)
        if not folder:
            listing[grant.bucket] = None
        elif listing.setdefault(grant.bucket, []) is not None:
            prefixes = listing[grant.bucket]
            assert prefixes is not None
            prefixes.extend(p for p in (f"{folder}/", f"{folder}/*") if p not in prefixes)
    statements: list[dict[str, Any]] = [
        {"Sid": "ReadObjects", "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": read},
    ]
    if write:
        statements.append(
            {"Sid": "WriteObjects", "Effect": "Allow", "Action": list(WRITE_ACTIONS), "Resource": write}
        )
    for index, (bucket, prefixes) in enumerate(listing.items()):
        statement: dict[str, Any] = {
            "Sid": f"List{index}", "Effect": "Allow", "Action": ["s3:ListBucket"],
            "Resource": f"arn:{partition}:s3:::{bucket}",
        }
        if prefixes is not None:
            statement["Condition"] = {"StringLike": {"s3:prefix": prefixes}}
        statements.append(statement)
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, separators=(",", ":"))


def scoped_s3_keys(
    session: Any, grants: Sequence[Grant], *, sts: Any = None, region: str | None = None
) -> ScopedKeys | None:
    """Temporary keys made by STS from `session`'s (a boto3 session's) credentials, limited to
    `grants` by `session_policy`; None when the session has no credentials.

    An IAM user's keys (or the root's) ask `sts:GetFederationToken` (`FEDERATION_SECONDS`); a
    role's session (a role, SSO, an instance profile: `sts:GetCallerIdentity` says
    `assumed-role/<name>/...`) asks `sts:AssumeRole` of that same role (`ROLE_SECONDS`), which its
    trust policy must allow. Anything else (an MFA session of a user, a federated user) cannot make
    such keys, and neither can a role AWS refuses: a `ConfigurationError` says so and names the way
    out, keys of the volumes' own. The secret and token are registered as secrets.
    `sts` is the client to ask (default: the session's, in `region`).
    """
    import botocore.exceptions

    credentials = session.get_credentials()
    if credentials is None:
        return None
    frozen = credentials.get_frozen_credentials()
    for secret in (frozen.secret_key, frozen.token):
        if secret:
            register_secret(secret)
    sts = sts or session.client("sts", region_name=region or session.region_name or "us-east-1")
    failures = (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError)
    try:
        arn = str(sts.get_caller_identity()["Arn"])
    except failures as exc:
        raise ConfigurationError(
            f"the pool's volumes: could not tell which AWS identity makes their keys "
            f"(sts:GetCallerIdentity: {_aws_error(exc)}); check the AWS credentials, {EXPLICIT_KEYS}"
        ) from None
    policy = _bounded_policy(grants, (arn.split(":") + ["", ""])[1] or "aws")
    how, seconds, call = _sts_request(arn, bool(frozen.token), policy)
    try:
        method = sts.assume_role if how == "sts:AssumeRole" else sts.get_federation_token
        answer = method(**call)["Credentials"]
    except failures as exc:
        raise _refused(how, call.get("RoleArn"), _aws_error(exc)) from None
    keys = ScopedKeys(
        answer["AccessKeyId"], answer["SecretAccessKey"], answer["SessionToken"], seconds, how, policy
    )
    for secret in (keys.secret_key, keys.session_token):
        register_secret(secret)
    _log.info("skyward.volume_keys", how=how, seconds=seconds, volumes=len(grants), session=SESSION_NAME)
    if seconds <= ROLE_SECONDS:
        _log.warning(
            "skyward.volume_keys_short", how=how, seconds=seconds,
            hint="the nodes' S3 keys end after an hour (AWS's limit for these credentials): a pool "
            "running longer loses its volumes then; pass keys of the volumes' own to avoid it",
        )
    return keys


def _bounded_policy(grants: Sequence[Grant], partition: str) -> str:
    """`session_policy` of `grants`, refused where it is over what AWS takes."""
    policy = session_policy(grants, partition)
    if len(policy) > POLICY_LIMIT:
        raise ConfigurationError(
            f"the pool's {len(grants)} volumes need a session policy of {len(policy)} characters, over "
            f"AWS's {POLICY_LIMIT}: use fewer volumes (or one prefix for several) per pool, {EXPLICIT_KEYS}"
        )
    return policy


def _refused(how: str, role: str | None, why: str) -> ConfigurationError:
    """AWS refused to make the keys: what to fix (a role's trust policy), or keys of their own."""
    refused = f"AWS refused {how}{f' of {role}' if role else ''} for the pool's volumes ({why})"
    trust = ""
    if role and ("AccessDenied" in why or "NoSuchEntity" in why):
        trust = (f": the role's trust policy must let it assume itself (allow sts:AssumeRole to {role} "
                 "or to its account), and a role under a path (/service/...) is not found this way")
    return ConfigurationError(f"{refused}{trust}; {EXPLICIT_KEYS}")


def _sts_request(arn: str, temporary: bool, policy: str) -> tuple[str, int, dict[str, Any]]:
    """Which STS call makes the volumes' keys for the identity `arn` (`temporary`: its keys carry a
    session token), how long they last, and the call's arguments; refused for identities that cannot
    make keys with a session policy of their own (an IAM user's MFA session, a federated user)."""
    _, partition, service, _, account, resource = (arn.split(":", 5) + [""] * 6)[:6]
    # An IAM user's ARN is arn:aws:iam::<account>:user/<name> (moto's stand-in says sts: for iam:).
    user = resource.startswith("user/") or (service == "iam" and resource == "root")
    if user and not temporary:  # AWS cuts the root's session to an hour whatever is asked
        seconds = ROLE_SECONDS if resource == "root" else FEDERATION_SECONDS
        call = {"Name": SESSION_NAME, "Policy": policy, "DurationSeconds": FEDERATION_SECONDS}
        return "sts:GetFederationToken", seconds, call
    if service == "sts" and resource.startswith("assumed-role/"):
        # The role's path is not in the session's ARN: a role under a path is not found here.
        role = f"arn:{partition}:iam::{account}:role/{resource.split('/')[1]}"
        call = {"RoleArn": role, "RoleSessionName": SESSION_NAME, "Policy": policy,
                "DurationSeconds": ROLE_SECONDS}
        return "sts:AssumeRole", ROLE_SECONDS, call
    kind = "an IAM user's session (MFA, sts:GetSessionToken)" if user else (resource.split("/")[0] or arn)
    raise ConfigurationError(
        f"the pool's volumes need S3 keys limited to their buckets; AWS makes those only from an IAM "
        f"user's own keys (sts:GetFederationToken) or a role's session (sts:AssumeRole of the role), "
        f"and this machine's keys are {kind} ({arn}): use an IAM user's keys or a role here, {EXPLICIT_KEYS}"
    )


def _aws_error(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        return f"{error.get('Code', '')}: {error.get('Message', '')}".strip(": ") or str(exc)
    return str(exc)


# -- the end of the pool ----------------------------------------------------------------------------

#: Minted keys held by each cluster's volumes: id(cluster) -> [(store, hold)]. Keyed by identity (a
#: `Cluster` is a value, and two pools' clusters may be equal); an entry goes with its cluster.
_HOLDS: dict[int, list[tuple[Storage, int]]] = {}
_HOLDS_LOCK = threading.Lock()


def _held(cluster: Any) -> list[tuple[Storage, int]]:
    key = id(cluster)
    with _HOLDS_LOCK:
        if key not in _HOLDS:
            _HOLDS[key] = []
            with contextlib.suppress(TypeError):  # not weak-referenceable: close_volume_stores forgets it
                weakref.finalize(cluster, _forget, key)
        return _HOLDS[key]


def _forget(key: int) -> None:
    with _HOLDS_LOCK:
        _HOLDS.pop(key, None)


def close_volume_stores(cluster: Any) -> list[str]:
    """Give back every minted key `cluster`'s volumes hold (`Storage.ephemeral_keys`), so that a
    key made for the pool stops working when the pool ends: the last hold deletes it (another pool,
    or an open `with store as s3:`, may still hold the same store's key; it is deleted when they
    let go, or at `store.close()`). Call it once the nodes have unmounted (their machines released),
    and also after a failed start. Every store is tried; the answer is what could not be deleted
    (each message names the key and where to delete it by hand), empty when all went. Calling it
    again does nothing."""
    with _HOLDS_LOCK:
        holds = _HOLDS.pop(id(cluster), [])
    failures: list[str] = []
    for storage, hold in holds:
        assert storage.ephemeral_keys is not None
        try:
            storage.ephemeral_keys.release(hold)
        except Exception as exc:  # noqa: BLE001 - reported to the caller; the others still go
            failures.append(
                f"the key minted for {storage.endpoint} was not deleted ({type(exc).__name__}: {exc})"
            )
    return failures
