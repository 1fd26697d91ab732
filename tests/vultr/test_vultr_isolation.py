"""One pool never ends another's instances: each pool has an id of its own (its label plus random
digits), and a pool's clean-up matches its instances by that whole id, never by a prefix
(`cloud_workloads` holds the two cases, run here on the fake API).
"""

from __future__ import annotations

from typing import Any

import pytest
from cloud_workloads import assert_a_pool_leaves_the_machines_of_a_label_extending_its_own as extends
from cloud_workloads import assert_two_pools_of_one_label_keep_apart as same_label
from fake_vultr import FakeVultr
from vultr_support import vultr_pool


@pytest.mark.parametrize("case", [extends, same_label], ids=["label-extends-its-own", "same-label"])
def test_a_pools_end_leaves_the_instances_of_another_pool(vultr_api: FakeVultr, case: Any) -> None:
    case(lambda **kwargs: vultr_pool(vultr_api, **kwargs), lambda: set(vultr_api.instances), "A100")
