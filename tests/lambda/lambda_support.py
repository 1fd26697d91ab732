"""Helpers the Lambda tests share: a config and a pool pointed at the fake API."""

from __future__ import annotations

from typing import Any

from cloud_workloads import login_here, quiet_pool
from fake_lambda import FakeLambda

import skyward as sky

#: The fake account's key: long and distinctive, so a leak into a log line cannot hide.
API_KEY = "secret_skyward-test_0123456789abcdefKEY"
#: A second key of the account, made for the machines alone.
GUARDIAN_KEY = "secret_skyward-guardian_fedcba9876543210KEY"


def lambda_cloud(api: FakeLambda, **kwargs: Any) -> sky.LambdaCloud:
    """`sky.LambdaCloud` pointed at the fake, logging in as this user, venvs from this interpreter."""
    kwargs.setdefault("api_key", API_KEY)
    return sky.LambdaCloud(api_url=api.url, ssh_port=api.ssh_port, **login_here(kwargs))


def lambda_pool(api: FakeLambda, *, provider: Any = None, **kwargs: Any) -> Any:
    """A quiet pool (not started) on the fake Lambda Cloud."""
    kwargs.setdefault("accelerator", "H100")
    return quiet_pool(provider or lambda_cloud(api), **kwargs)
