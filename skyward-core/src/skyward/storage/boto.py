"""boto3 sessions that share what botocore reads from its data files.

Every `boto3.session.Session` gets a botocore loader of its own, and each loader parses the JSON
service descriptions again: EC2's is megabytes, and with the endpoints file it is most of the
CPU a new client costs (a pool, a sweep, an `sky.storage` open each make theirs). Sessions made
here get loaders that keep one cache for the process per data path (`AWS_DATA_PATH`, a
profile's `data_path`). The files do not change while it runs, loaders of one data path search
the same folders, and botocore keys its cache by method and arguments, so sharing it changes no
answer. Sessions themselves stay one per use: boto3 says they are not
safe to share between threads, and they hold the profile and credentials.
"""

from __future__ import annotations

from typing import Any

#: botocore's `Loader` caches (`instance_cache` keeps one in `_cache`), one per data path.
_shared_caches: dict[str | None, dict[Any, Any]] = {}


def boto3_session(profile: str | None = None) -> Any:
    """A new `boto3.session.Session` (for `profile`) whose loader shares the process's cache."""
    import boto3.session
    import botocore.loaders
    import botocore.session

    core = botocore.session.Session(profile=profile)
    data_path = core.get_config_variable("data_path")
    loader = botocore.loaders.create_loader(data_path)
    loader._cache = _shared_caches.setdefault(data_path, {})  # noqa: SLF001 - see the module
    core.register_component("data_loader", loader)
    return boto3.session.Session(botocore_session=core)
