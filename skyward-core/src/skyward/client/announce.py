"""The machine lifecycle events a pool tells, at their moments, whatever the provider.

Per node, in order: `InstanceRequested` (the pool asks its provider for a machine), then
`InstanceLaunched` and `InstanceRunning`, then `InstanceProvisioned`, the bootstrap's events,
`InstanceBootstrapped` and `NodeReady`. A cloud (`CloudProvider`) says launched when its API
accepted the machine and running when the machine has an address, during `provision`. For `Local`
and `SSH` the machine is already there and the worker process is what starts: launched when it is
started, running when it answers the handshake; so there they come after `InstanceProvisioned`
and the bootstrap. Providers and the bootstrap emit through `emit`, which stamps the pool's name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from skyward.observe.bus import EventBus
from skyward.observe.events import Event, InstanceLaunched, InstanceRequested, InstanceRunning


class Announcer:
    def __init__(self, bus: EventBus, pool: str) -> None:
        self.bus = bus
        self.pool = pool

    def emit(self, event: Event) -> None:
        """Emit `event` with the pool's name (a provider or the bootstrap does not know it)."""
        if not event.pool:
            event = attrs.evolve(event, pool=self.pool)
        self.bus.emit(event)

    def attach(self, provider: Any) -> None:
        """Let `provider` tell the pool about its machines (see `Provider.announce`)."""
        provider.announce = self.emit

    def requested(self, nodes: Iterable[int]) -> None:
        for node in nodes:
            self.bus.emit(InstanceRequested(node=node, pool=self.pool))

    def launched(self, provider: Any, instance: Any, worker: int) -> None:
        """A node's worker process was started: for a provider whose machines are there already,
        the moment its node is launched."""
        if worker == 0 and not provider.announces_machines:
            self.bus.emit(InstanceLaunched(node=instance.node, instance_id=instance.id, pool=self.pool))

    def running(self, provider: Any, instance: Any, worker: int) -> None:
        """A node's worker answered the handshake: for such a provider, its node is running."""
        if worker == 0 and not provider.announces_machines:
            self.bus.emit(InstanceRunning(
                node=instance.node, instance_id=instance.id, ip=instance.public_ip, pool=self.pool
            ))
