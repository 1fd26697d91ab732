"""One pool never ends another's machines: each pool has an id of its own (its label plus random
digits), and a pool's clean-up matches its machines by that whole id, never by a prefix.

Reproduced as a user meets it on the fake API: a pool labelled `train-2` runs while a pool
labelled `train` starts and ends, and a pool runs while another of the same label starts and ends.
"""

from __future__ import annotations

from cloud_workloads import square
from fake_novita import FakeNovita
from novita_support import novita_pool


def live(api: FakeNovita) -> set[object]:
    return set(api.instances)


def test_ending_a_pool_leaves_the_machines_of_a_pool_whose_label_extends_its_own(
    novita_api: FakeNovita,
) -> None:
    api = novita_api
    with novita_pool(api, label="train-2", accelerator="RTX_4090") as other:
        theirs = live(api)
        with novita_pool(api, label="train", accelerator="RTX_4090") as pool:
            assert square(2) >> pool == 4
        assert theirs <= live(api), "ending `train` ended the machines of `train-2`"
        assert square(3) >> other == 9


def test_two_pools_of_one_label_keep_apart(novita_api: FakeNovita) -> None:
    api = novita_api
    with novita_pool(api, label="Train", accelerator="RTX_4090") as first:
        theirs = live(api)
        with novita_pool(api, label="train", accelerator="RTX_4090") as second:
            assert first.id != second.id
            assert square(2) >> second == 4
        assert theirs <= live(api), "the second `train` ended the first's machines"
        assert square(3) >> first == 9
