"""One pool never ends another's machines: each pool has an id of its own (its label plus random
digits), and a pool's clean-up matches its machines by that whole id, never by a prefix.

Reproduced as a user meets it on the fake API: a pool labelled `train-2` runs while a pool
labelled `train` starts and ends, and a pool runs while another of the same label starts and ends.
"""

from __future__ import annotations

from cloud_workloads import square
from fake_verda import FakeVerda
from verda_support import verda_pool


def live(api: FakeVerda) -> set[object]:
    return set(api.instances)


def test_ending_a_pool_leaves_the_machines_of_a_pool_whose_label_extends_its_own(
    verda_api: FakeVerda,
) -> None:
    api = verda_api
    with verda_pool(api, label="train-2", accelerator="A100") as other:
        theirs = live(api)
        with verda_pool(api, label="train", accelerator="A100") as pool:
            assert square(2) >> pool == 4
        assert theirs <= live(api), "ending `train` ended the machines of `train-2`"
        assert square(3) >> other == 9


def test_two_pools_of_one_label_keep_apart(verda_api: FakeVerda) -> None:
    api = verda_api
    with verda_pool(api, label="Train", accelerator="A100") as first:
        theirs = live(api)
        with verda_pool(api, label="train", accelerator="A100") as second:
            assert first.id != second.id
            assert square(2) >> second == 4
        assert theirs <= live(api), "the second `train` ended the first's machines"
        assert square(3) >> first == 9
