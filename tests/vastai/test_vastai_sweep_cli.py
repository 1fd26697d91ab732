"""`sky ls` and `sky down` against the fake Vast server: instances found by their Skyward label only.

The instances are put in the fake's account as a crashed client leaves them (labelled
`skyward-<pool>-node-<node>`), beside instances of someone else's; `sky` runs as a subprocess
pointed at the fake with `$VAST_SERVER_URL`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from vast_server import FakeVast
from vast_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky  # noqa: E402

#: Labels that are not Skyward's: none, a user's own, and one that only starts like Skyward's.
FOREIGN = (None, "my-training-box", "skyward-notes")


@pytest.fixture
def sky(tmp_path: Path, vast: FakeVast) -> Sky:
    runner = Sky(tmp_path)
    runner.env.update(VAST_API_KEY=API_KEY, VAST_SERVER_URL=vast.url)
    return runner


@pytest.fixture
def theirs(vast: FakeVast) -> list[int]:
    return [vast.add_instance(4, label=label).id for label in FOREIGN]


def live(vast: FakeVast) -> list[int]:
    return sorted(i.id for i in vast.live)


def test_ls_lists_the_instances_skyward_labelled_and_no_other(
    sky: Sky, vast: FakeVast, theirs: list[int]
) -> None:
    ours = [vast.add_instance(1, label=f"skyward-crashed1-node-{n}").id for n in (0, 1)]
    listed = sky.json("ls", "--provider", "vastai")["machines"]
    assert sorted(int(m["id"]) for m in listed) == ours
    assert sorted((m["pool"], m["node"], m["instance_type"], m["hourly_price"]) for m in listed) == [
        ("crashed1", 0, "1x RTX 4090", 0.31), ("crashed1", 1, "1x RTX 4090", 0.31)
    ]


def test_down_pool_destroys_that_pools_instances_only(sky: Sky, vast: FakeVast, theirs: list[int]) -> None:
    first = [vast.add_instance(1, label=f"skyward-first1-node-{n}").id for n in (0, 1)]
    second = vast.add_instance(2, label="skyward-second2-node-0").id
    done = sky("down", "first1", "--yes", "--provider", "vastai")
    assert done.returncode == 0, done.stderr
    assert sorted(vast.destroyed) == first
    assert live(vast) == sorted([second, *theirs])


def test_down_all_destroys_every_skyward_instance_but_never_another(
    sky: Sky, vast: FakeVast, theirs: list[int]
) -> None:
    ours = [vast.add_instance(1, label="skyward-first1-node-0").id,
            vast.add_instance(2, label="skyward-second2-node-0").id]
    done = sky("down", "--all", "--yes", "--provider", "vastai")
    assert done.returncode == 0, done.stderr
    assert sorted(vast.destroyed) == ours
    assert live(vast) == sorted(theirs)


def test_down_expired_destroys_the_instances_whose_label_lease_lapsed_only(
    sky: Sky, vast: FakeVast, theirs: list[int]
) -> None:
    now = int(time.time())
    lapsed = vast.add_instance(1, label=f"skyward-gone1-node-0@{now - 60}").id
    leased = vast.add_instance(2, label=f"skyward-alive2-node-0@{now + 3600}").id
    unleased = vast.add_instance(3, label="skyward-old3-node-0").id
    listed = {int(m["id"]): m for m in sky.json("ls", "--provider", "vastai")["machines"]}
    assert (listed[lapsed]["expired"], listed[leased]["expired"], listed[unleased]["expired"]) == (
        True, False, False
    )
    assert listed[lapsed]["pool"] == "gone1" and listed[lapsed]["node"] == 0

    done = sky("down", "--expired", "--yes", "--provider", "vastai")
    assert done.returncode == 0, done.stderr
    assert vast.destroyed == [lapsed]
    assert live(vast) == sorted([leased, unleased, *theirs])
