"""Deleting what a pool made on EC2, in the order AWS allows, and naming what could not be deleted.

Kept apart from the provider because the order is the whole point: the machines first (also one
whose launch answer was lost: everything tagged with the pool), then a wait until they are gone
(`TERMINATION_TIMEOUT`), and only then the security group (AWS refuses while a machine's network
interface still uses it, so it is retried for `GROUP_DELETE_TIMEOUT`), any disk left, and the key
pair. Every step is tried whatever failed before it, and one error lists every problem, with the
tag to find what is left in the EC2 console: nothing is left behind unsaid.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from skyward.errors import ProvisionError
from skyward.retry import retry
from skyward_aws import resources
from skyward_aws.clients import Clients

if TYPE_CHECKING:
    from skyward_aws.provider import Plan

#: How long `release_pool` waits for the pool's machines to be gone before deleting the security group.
TERMINATION_TIMEOUT = 600.0
#: How long, and how often, `release_pool` retries deleting a security group AWS still holds (the
#: network interface of a machine just terminated lingers for a minute or two).
GROUP_DELETE_TIMEOUT = 120.0
GROUP_RETRY_DELAY = 5.0


def release_timeout() -> float:
    """The longest `release_pool` may take: termination can take minutes on EC2, and the group is
    deleted only after it."""
    return TERMINATION_TIMEOUT + GROUP_DELETE_TIMEOUT


async def release_pool(
    clients: Clients, pool: str, plan: Plan, terminate_left: Callable[[], Awaitable[None]], log: Any
) -> None:
    """Terminate what of pool `pool` is still listed (`terminate_left`), wait for it to go, then
    delete the security group and the key pair; raise naming what could not be deleted."""
    problems: list[str] = []
    try:
        await terminate_left()
        still = await asyncio.to_thread(resources.wait_terminated, clients, pool, TERMINATION_TIMEOUT)
        if still:
            waited = f"not confirmed after {TERMINATION_TIMEOUT:.0f} s"
            problems.append(f"termination of {', '.join(still)} {waited}")
    except Exception as exc:  # noqa: BLE001 - reported with the rest below
        problems.append(str(exc))
    try:
        await asyncio.to_thread(resources.delete_volumes, clients, pool)
    except Exception as exc:  # noqa: BLE001
        problems.append(f"volumes: {exc}")
    if plan.created_group:
        try:
            await retry(
                lambda: asyncio.to_thread(resources.delete_security_group, clients, plan.security_group),
                retry_on=resources.GroupInUse, delays=itertools.repeat(GROUP_RETRY_DELAY),
                deadline=time.monotonic() + GROUP_DELETE_TIMEOUT,
            )
        except Exception as exc:  # noqa: BLE001
            problems.append(f"security group {plan.security_group}: {exc}")
    if plan.key_name:
        try:
            await asyncio.to_thread(resources.delete_key, clients, plan.key_name)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"key pair {plan.key_name}: {exc}")
    if problems:
        raise ProvisionError(
            f"aws: could not delete everything of {pool} in {plan.region} ({'; '.join(problems)}); "
            f"delete what is tagged {resources.POOL_TAG}={pool} in the EC2 console"
        )
    log.info("skyward.aws_released", pool=pool, security_group=plan.security_group, key_pair=plan.key_name)
