"""The API client reads Hyperstack's paged VM listing to its end (`GET /core/virtual-machines`)."""

from __future__ import annotations

from fake_infrahub import FakeInfrahub
from hyperstack_support import API_KEY

from skyward.providers.calls import run_closing
from skyward_hyperstack.api import PAGE_SIZE, HyperstackAPI


def test_listing_vms_reads_every_page_and_filters_by_name(hyperstack_api: FakeInfrahub) -> None:
    for vm_id in range(PAGE_SIZE * 2 + 5):
        hyperstack_api.vms[vm_id] = {"id": vm_id, "name": f"skyward-big1-{vm_id}", "status": "ACTIVE"}
    hyperstack_api.vms[999] = {"id": 999, "name": "theirs", "status": "ACTIVE"}

    async def listed(api: HyperstackAPI) -> list[int]:
        return [row["id"] for row in await api.vms(search="skyward-")]

    found = run_closing(lambda: HyperstackAPI(API_KEY, hyperstack_api.url), listed)
    assert found == list(range(PAGE_SIZE * 2 + 5))
    hyperstack_api.vms.clear()
