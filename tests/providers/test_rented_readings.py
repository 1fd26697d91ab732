"""`skyward.providers.rented`'s readings a rented cloud makes: the `Instance` a machine created on
an offer is, and the machines an account listing names for a pool (and for no other)."""

from __future__ import annotations

from skyward.market.offer import Offer
from skyward.market.rental import Rental
from skyward.providers.rented import named_leftovers, rented_instance


def test_a_rented_instance_carries_the_offers_prices_kind_and_size() -> None:
    offer = Offer(
        provider="cloud",
        instance_type="gpu_1x_l40",
        accelerator="L40",
        accelerator_count=1,
        vcpus=12,
        memory_gb=64,
        on_demand_price=0.99,
        spot_price=0.4,
    )
    instance = rented_instance("m-1", 3, Rental(offer=offer, spot=True), ssh_user="root", ssh_port=2222)
    assert (instance.id, instance.node, instance.ssh_user, instance.ssh_port) == ("m-1", 3, "root", 2222)
    assert (instance.hourly_rate, instance.on_demand_rate, instance.spot) == (0.4, 0.99, True)
    assert (instance.instance_type, instance.vcpus, instance.memory_gb) == ("gpu_1x_l40", 12, 64.0)


def test_named_leftovers_are_the_pools_own_machines_not_gone() -> None:
    rows = [
        {"uuid": "a", "name": "skyward-pool-1-0", "status": "running"},
        {"uuid": "b", "name": "skyward-pool-1-extra-0", "status": "running"},  # a pool whose id extends it
        {"uuid": "c", "name": "skyward-pool-1-1", "status": "deleting"},
        {"uuid": "", "name": "skyward-pool-1-2"},
        {"uuid": "d", "name": "notes"},
    ]
    found = named_leftovers(
        rows, "POOL-1", id_field="uuid", name_field="name", gone=lambda row: row.get("status") == "deleting"
    )
    assert [(i.id, i.node) for i in found] == [("a", -1)]
