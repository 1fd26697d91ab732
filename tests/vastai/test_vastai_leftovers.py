"""The sweep at teardown: the pool's instances Vast still lists (by label) are destroyed.

It exists for a create whose answer was lost: Vast rented the machine but the provider never got
its id, so nothing else would ever destroy it and it would bill until someone noticed.
"""

from __future__ import annotations

import asyncio

import pytest
from vast_server import FakeVast
from vast_support import API_KEY, vast_pool, vast_provider

from skyward.errors import ProvisionError
from skyward.providers.base import Cluster
from skyward_vastai.api import VastAPI
from skyward_vastai.provider import VastAIProvider


def test_an_instance_rented_but_whose_answer_was_lost_is_destroyed_when_the_start_fails(
    vast: FakeVast,
) -> None:
    vast.lost_replies.add(2)  # node 1 rents offer 2: Vast rents it, the answer is a server error
    with pytest.raises(ProvisionError, match="internal_error"), vast_pool(vast, nodes=2):
        pass
    assert vast.live == [], f"left on Vast: {[(i.id, i.request.get('label')) for i in vast.live]}"
    assert sorted(vast.destroyed) == [1001, 1002]  # node 0 by the launch, the orphan by the sweep
    listed = [path for method, path, *_ in vast.requests if method == "GET" and path == "/api/v1/instances/"]
    assert listed, "teardown never listed the account's instances"


def test_instances_of_other_pools_survive_the_sweep(vast: FakeVast) -> None:
    other = vast.add_instance(4, label="skyward-someone-else-node-0")
    unlabelled = vast.add_instance(4)
    with vast_pool(vast, nodes=1) as pool:
        # A pool whose name extends ours: the `-node-` suffix keeps it out of our prefix.
        near = vast.add_instance(4, label=f"skyward-{pool.name}x-node-0")
    assert sorted(i.id for i in vast.live) == sorted([other.id, unlabelled.id, near.id])
    assert not {other.id, unlabelled.id, near.id} & set(vast.destroyed)


def test_leftovers_pick_this_pools_labels_across_pages_and_skip_those_being_destroyed(
    vast: FakeVast,
) -> None:
    ours = [vast.add_instance(1, label=f"skyward-p1-node-{n}").id for n in range(30)]
    vast.add_instance(1, label="skyward-p1-node-30", status="destroying")
    vast.add_instance(1, label="skyward-p10-node-0")
    vast.add_instance(1, label="skyward-p2-node-0")
    provider = VastAIProvider(vast_provider(vast))
    cluster = Cluster(id="p1", provider="vastai", spec=None)
    left = asyncio.run(provider.leftovers(cluster))
    assert sorted(int(i.id) for i in left) == sorted(ours)
    assert all(i.node == -1 for i in left)


def test_listing_instances_reads_every_page(vast: FakeVast) -> None:
    made = [vast.add_instance(1, label=f"row-{n}").id for n in range(57)]
    rows = asyncio.run(VastAPI(API_KEY, vast.url).instances())
    assert [row["id"] for row in rows] == sorted(made)
    assert rows[0]["label"] == "row-0" and rows[0]["extra_env"] == {}
    pages = [body for method, path, body, _ in vast.requests if path == "/api/v1/instances/"]
    assert len(pages) == 3  # 25 + 25 + 7
    assert "after_token" not in pages[0] and all("after_token" in page for page in pages[1:])


def test_listing_instances_with_a_refused_key_says_so(vast: FakeVast) -> None:
    with pytest.raises(ProvisionError, match="API key was refused"):
        asyncio.run(VastAPI("not-the-key", vast.url).instances())
