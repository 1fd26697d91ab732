"""`RentedCloud`: a cloud whose machines are rented one per node from a list of offers, through a
REST API (`providers/rest.py`): RunPod, Verda, Novita, and a new cloud written on the kit.

Such a cloud writes what only it knows, and inherits the moves every one of them makes:

- `offers_for(cluster, node)`: the offers to try for a node, in order (its listing, filtered and
  ordered for the spec: `skyward.market.rental.plan` does the ordering);
- `create_on(cluster, node, offer)`: create the machine on that offer; a `CapacityError` (the API
  said "sold out": `rest.ApiErrors`) moves on to the next offer;
- `delete_machines(cluster, instances)`: one delete call (or one per machine), what is gone is fine;
- `machine_gone(instance)`: whether the API no longer lists it (None: no need to ask).

`launch` then creates every node together (`launch_together`), each trying the offers in order
(`first_created`) and retried while no offer has room (`retry_capacity`); `destroy` deletes through
`rest.delete_retrying` and waits until the cloud no longer lists the machines (`confirm_gone`).

Two readings such a cloud makes the same way: `rented_instance` (the `Instance` a created machine
is, from the offer it was created on) and `named_leftovers` (the machines an account listing
names for a pool, for `leftovers`).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from skyward.providers.base import Cluster, Instance
from skyward.providers.cloud import CloudProvider
from skyward.providers.naming import of_pool
from skyward.providers.rest import delete_retrying

if TYPE_CHECKING:
    from skyward.market.rental import Rental


class RentedCloud(CloudProvider):
    """A cloud of rented machines (see the module); a subclass sets `cloud` and writes the four calls."""

    #: The cloud's name in messages ("Verda").
    cloud = "cloud"
    #: Where a machine is deleted by hand when the API keeps refusing ("the Verda console").
    console = "the cloud's console"
    #: How long `destroy` waits for the cloud to stop listing a deleted machine before it says so.
    confirm_timeout = 90.0
    #: The first wait between delete attempts and between reads while confirming.
    poll_interval = 2.0

    @abc.abstractmethod
    async def offers_for(self, cluster: Cluster, node: int) -> Sequence[Any]:
        """The offers `node` may be created on, in the order to try them."""

    @abc.abstractmethod
    async def create_on(self, cluster: Cluster, node: int, offer: Any) -> Instance:
        """Create `node`'s machine on `offer`; `CapacityError` when the cloud has no room there."""

    @abc.abstractmethod
    async def delete_machines(self, cluster: Cluster, instances: list[Instance]) -> None:
        """Ask the cloud to delete these machines; one already gone is not an error."""

    async def machine_gone(self, instance: Instance) -> bool | None:
        """Whether the cloud no longer lists `instance` (None: its delete needs no confirming)."""
        return None

    def refused(self, tried: list[str]) -> str:
        """What the capacity error says was tried (the offers refused, in words)."""
        return "; ".join(tried) or "no offer free"

    async def launch(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        """One machine per node, created together; if any cannot be, the others are deleted again."""

        def one(node: int) -> Any:
            what = f"{self.cloud} machine for node {node}"
            return self.retry_capacity(lambda: self._create(cluster, node), what)

        return await self.launch_together(cluster, nodes, one)

    async def _create(self, cluster: Cluster, node: int) -> Instance:
        offers = await self.offers_for(cluster, node)
        return await self.first_created(
            node,
            offers,
            lambda offer: self.create_on(cluster, node, offer),
            cloud=self.cloud,
            refused=self.refused,
        )

    async def destroy(self, cluster: Cluster, instances: list[Instance]) -> None:
        """Delete the machines (a passing failure retried), then wait until none is listed."""
        ids = ", ".join(i.id for i in instances)
        await delete_retrying(
            lambda: self.delete_machines(cluster, instances),
            cloud=self.cloud,
            what=ids,
            where=self.console,
            delay=self.poll_interval,
        )
        await self.confirm_gone(
            instances, self._gone, cloud=self.cloud, timeout=self.confirm_timeout, interval=self.poll_interval
        )
        for instance in instances:
            self._log.info(f"skyward.{self.name}_machine_deleted", instance=instance.id, node=instance.node)

    async def _gone(self, instance: Instance) -> bool:
        answer = await self.machine_gone(instance)
        return True if answer is None else answer


def rented_instance(machine_id: str, node: int, offer: Rental, *, ssh_user: str, ssh_port: int) -> Instance:
    """The machine created for `node` on `offer`: its prices, kind and size are the offer's."""
    listed = offer.offer
    return Instance(
        id=machine_id, node=node, ssh_user=ssh_user, ssh_port=ssh_port, hourly_rate=offer.price,
        on_demand_rate=offer.on_demand_price, spot=offer.spot, instance_type=listed.instance_type,
        vcpus=int(listed.vcpus or 0), memory_gb=float(listed.memory_gb or 0.0),
    )


def named_leftovers(
    rows: Iterable[dict[str, Any]], pool_id: str, *, id_field: str, name_field: str,
    gone: Callable[[dict[str, Any]], bool] = lambda row: False,
) -> list[Instance]:
    """The rows of an account's listing named for exactly `pool_id` (`naming.of_pool`, in lower case
    as the clouds that fold names keep them) and not `gone`, as instances of no known node."""
    return [
        Instance(id=str(row[id_field]), node=-1)
        for row in rows
        if row.get(id_field) and of_pool(row.get(name_field), pool_id.lower()) is not None and not gone(row)
    ]
