"""Skyward's exceptions. Each one says what happened, to what, and what to do next."""

from __future__ import annotations

import queue


class SkywardError(Exception):
    """Base class for every error Skyward raises itself."""


class ConfigurationError(SkywardError, ValueError):
    """A spec, option or image is invalid; raised at construction, before anything is provisioned."""


class NoActivePoolError(SkywardError, RuntimeError):
    """`>> sky` (or a runtime helper) was used outside a `with sky.Compute(...)` block."""


class SerializationError(SkywardError, TypeError):
    """A function, argument, closure or return value could not be pickled."""


class RemoteError(SkywardError):
    """A remote exception that could not be rebuilt on the client with its own type.

    Carries the remote type name, message and traceback text so nothing is lost.
    """

    def __init__(self, type_name: str, message: str, traceback: str = "") -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message
        self.traceback = traceback

    def __reduce__(self):  # keep the three fields through pickling
        return (type(self), (self.type_name, self.message, self.traceback))


class NodeLostError(SkywardError, RuntimeError):
    """A node died (or its connection could not be restored) and a task ran out of retries."""


class PoolClosedError(SkywardError, RuntimeError):
    """A task was dispatched to a pool that is not running."""


class TaskProcessError(SkywardError, RuntimeError):
    """A task's executor subprocess (`Worker(executor="process")`) ended while it ran the task.

    It exited (`os._exit`, a C library calling `exit`) or was killed by a signal (the kernel's
    out-of-memory killer, a segfault in native code). No exception was raised in the task, so there
    is nothing of its own to re-raise; the message says how the process ended. `exitcode` is the
    process's exit status, negative for a signal (`-9` is SIGKILL), as in `multiprocessing`. The
    task is not retried (a crash usually repeats); the node keeps serving with a fresh subprocess.
    """

    def __init__(self, message: str, exitcode: int | None = None) -> None:
        super().__init__(message)
        self.exitcode = exitcode


class MissingPackageError(SkywardError, ImportError):
    """A public name needs a distribution that is not installed; the message names the pip command."""


class PluginError(SkywardError):
    """A plugin failed to load or a hook raised; names the plugin and its distribution."""


class BootstrapFailed(SkywardError):
    """A bootstrap phase failed on a node.

    `node`, `phase` (`"timeout"` when `bootstrap_timeout` ran out), `command` (the failing shell
    command, secrets masked) and `output_tail` (the last lines of output, masked) say where and why;
    the message repeats them, so a traceback alone is enough to act on.
    """

    def __init__(
        self,
        message: str,
        *,
        node: int | None = None,
        phase: str = "",
        command: str = "",
        output_tail: str = "",
    ) -> None:
        super().__init__(message)
        self.node = node
        self.phase = phase
        self.command = command
        self.output_tail = output_tail

    def __reduce__(self):  # keyword fields survive pickling (e.g. across a worker boundary)
        return (_rebuild_bootstrap_failed, (str(self), self.node, self.phase, self.command, self.output_tail))


def _rebuild_bootstrap_failed(
    message: str, node: int | None, phase: str, command: str, output_tail: str
) -> BootstrapFailed:
    return BootstrapFailed(message, node=node, phase=phase, command=command, output_tail=output_tail)


class HostKeyError(SkywardError, ConnectionError):
    """An SSH host's key is unknown or differs from the trusted one; the connection was refused.

    The message names the host, the fingerprint it presented and how to trust it (ssh-keyscan,
    known_hosts); Skyward never accepts an unverified host key.
    """


class ProvisioningError(SkywardError, RuntimeError):
    """A pool could not get its machines. The base of every provisioning failure, so one
    `except sky.ProvisioningError` covers them all: no offer matched (`NoOffersError`), no capacity
    (`CapacityError`), the cloud refused the account or a request (`ProvisionError`)."""


class ProvisionError(ProvisioningError):
    """A cloud could not give the pool its machines: the account was refused, a request failed, or
    machines never became reachable. The message names the provider, what was asked for and what
    to change. (The name providers raise; `ProvisioningError` is the base to catch.)"""


class NoOffersError(ProvisionError):
    """No offer of the provider matches the spec (accelerator, count, memory, region,
    `max_hourly_cost`): nothing was rented. The message names what the provider has instead; change
    the spec, or add a `sky.Spec` on another provider for the pool to fall over to."""


class CapacityError(ProvisionError):
    """The cloud has no capacity for this request right now (spot or on-demand); retried with
    backoff until `Options.provision_timeout`, then raised."""


class LockTimeoutError(SkywardError, TimeoutError):
    """`sky.lock(name, timeout=...)` could not be acquired in time; the message names the holder."""


class BarrierBrokenError(SkywardError, RuntimeError):
    """A `sky.barrier` can never complete: a participant's node was lost, or a participant stopped
    waiting. The message names the node; the barrier stays broken (use a new name)."""


class QueueEmptyError(SkywardError, queue.Empty):
    """`sky.queue(name).get(timeout=...)` found no item in time (also a `queue.Empty`)."""



class GuardianError(SkywardError, RuntimeError):
    """A node's guardian could not start, so the node is not used: nothing would end its worker or
    its machine if the client died (see docs/cost-safety.md). The message names the node and why."""
