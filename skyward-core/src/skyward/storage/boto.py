"""boto3 sessions that share what botocore reads from its data files.

Every `boto3.session.Session` gets a botocore loader of its own, and each loader parses the JSON
service descriptions again: EC2's is megabytes, and with the endpoints file it is most of the
CPU a new client costs (a pool, a sweep, an `sky.storage` open each make theirs). Sessions made
here get loaders that keep one cache for the process. The files do not change while it runs,
every loader here searches the same paths, and botocore keys its cache by method and arguments,
so sharing it changes no answer. Sessions themselves stay one per use: boto3 says they are not
safe to share between threads, and they hold the profile and credentials.
"""

from __future__ import annotations

from typing import Any

#: botocore's `Loader` cache (`instance_cache` keeps it in `_cache`), shared by every loader here.
_shared_cache: dict[Any, Any] = {}


def boto3_session(profile: str | None = None) -> Any:
    """A new `boto3.session.Session` (for `profile`) whose loader shares the process's cache."""
    import boto3.session
    import botocore.loaders
    import botocore.session

    core = botocore.session.Session(profile=profile)
    loader = botocore.loaders.create_loader(core.get_config_variable("data_path"))
    loader._cache = _shared_cache  # noqa: SLF001 - see the module: one cache, the same search paths
    core.register_component("data_loader", loader)
    return boto3.session.Session(botocore_session=core)
