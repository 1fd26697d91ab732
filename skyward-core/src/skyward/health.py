"""``sky.HealthChecker``: a predicate every node runs at an interval, and when to give up on a node.

A node can be alive to the pool (its worker answers) and still be useless: a GPU that fell off
the bus, a full disk, a mount that hangs. ``Options(health_checker=sky.HealthChecker(check))``
has each node run ``check()`` every ``interval`` seconds, beside its tasks (never in a task
slot, so a long task does not hold a check up). A check fails when it returns something falsy,
raises, or has not answered within ``timeout``; after ``failures`` failures in a row the node's
machine is replaced and its in-flight tasks retried (``Options.retry_on_interruption``).
The pool's side is ``skyward.client.health``, the worker's ``skyward.worker.health``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from skyward.dataclass_view import dataclass_view
from skyward.errors import ConfigurationError

__all__ = ["HealthChecker"]


def _check_callable(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not callable(value):
        raise ConfigurationError(
            f"HealthChecker(check={value!r}): expected a function of no arguments that returns True "
            "while the node is healthy, e.g. HealthChecker(check=lambda: shutil.disk_usage('/').free > 1e9)"
        )


def _positive(example: str, *, integer: bool = False) -> Any:
    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or value <= 0:
            what = "a whole number" if integer else "a number of seconds"
            raise ConfigurationError(
                f"HealthChecker({attribute.name}={value!r}): expected {what} above 0, "
                f"e.g. {attribute.name}={example}"
            )

    return check


@dataclass_view
@attrs.frozen(kw_only=True)
class HealthChecker:
    """Run ``check()`` on every node each ``interval`` seconds; replace a node after ``failures``
    failed checks in a row (falsy, raised, or no answer within ``timeout`` seconds).

    ``check`` runs in the worker process, in a thread of its own, with the image's environment;
    it is pickled with cloudpickle, so a lambda or a closure will do.
    """

    check: Callable[[], Any] = attrs.field(validator=_check_callable)
    interval: float = attrs.field(default=30.0, validator=_positive("30.0"))
    failures: int = attrs.field(default=3, validator=_positive("3", integer=True))
    timeout: float = attrs.field(default=10.0, validator=_positive("10.0"))
