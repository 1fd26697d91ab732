"""One pool never ends another's VMs: each pool has an id of its own (its label plus random
digits), and a pool's clean-up matches its VMs by that whole id, never by a prefix
(`cloud_workloads` holds the two cases, run here on the fake Compute Engine).
"""

from __future__ import annotations

from typing import Any

import pytest
from cloud_workloads import assert_a_pool_leaves_the_machines_of_a_label_extending_its_own as extends
from cloud_workloads import assert_two_pools_of_one_label_keep_apart as same_label
from fake_gcp import FakeGCP
from gcp_support import gcp_pool


@pytest.mark.parametrize("case", [extends, same_label], ids=["label-extends-its-own", "same-label"])
def test_a_pools_end_leaves_the_vms_of_another_pool(gcp_api: FakeGCP, case: Any) -> None:
    case(lambda **kwargs: gcp_pool(gcp_api, **kwargs), lambda: set(gcp_api.instances), "T4")
