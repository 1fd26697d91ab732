"""Lingering pods (`Options(linger=True)`): kept `ttl` seconds after a clean exit, for the next pool.

Against the fake RunPod API, whose pods are real sshd's with real boot guardians: a parked pod
stays up with its environment and no process of the pool; a pool with the same spec adopts it
(no new pod is created, its environment is found ready); a pool with another spec does not; and
when nobody comes, the pod's own guardian deletes it through the API once its lease lapses.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from client_kill import BOUND
from fake_runpod import FakeRunPod
from runpod_support import API_KEY, runpod_pool
from ssh_hosts import wait_until

import skyward as sky
from skyward.providers import linger

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky  # noqa: E402


@sky.function
def worker_pid() -> int:
    return os.getpid()


def running(pid: int) -> bool:
    """Whether `pid` is a live process (the fake's pods run on this machine); a zombie is not."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_a_lingering_pool_leaves_its_pod_up_without_its_worker(runpod_api: FakeRunPod) -> None:
    ended: list[sky.Event] = []
    with runpod_pool(runpod_api, accelerator="A100", linger=True, ttl=60, on_event=ended.append) as pool:
        pid = worker_pid() >> pool
    (pod,) = runpod_api.pods
    (last,) = [e for e in ended if isinstance(e, sky.ClusterDestroyed)]
    assert last.reason == "linger 60 s for the next pool with this spec"
    assert runpod_api.deleted == []
    assert wait_until(lambda: not running(pid), 10), "the worker outlived its pool"
    (record,) = linger.parked()
    assert [i.id for i in record.instances] == [pod] and 50 < record.left() <= 60
    with runpod_pool(runpod_api, accelerator="A100") as pool:  # adopts it, then deletes it
        pass
    assert runpod_api.deleted == [pod] and runpod_api.pods == {}


def test_a_pool_with_the_same_spec_adopts_the_parked_pod(runpod_api: FakeRunPod) -> None:
    with runpod_pool(runpod_api, accelerator="A100", linger=True, ttl=60) as pool:
        first = worker_pid() >> pool
    (pod,) = runpod_api.pods
    with runpod_pool(runpod_api, accelerator="A100") as pool:
        second = worker_pid() >> pool
        assert len(runpod_api.creates) == 1, "a new pod was created instead of adopting the parked one"
        assert second != first  # a fresh worker: only the environment is kept between pools
    assert runpod_api.deleted == [pod] and runpod_api.pods == {}
    assert linger.parked() == []


def test_an_adopting_pool_that_wants_fewer_nodes_deletes_the_rest(runpod_api: FakeRunPod) -> None:
    with runpod_pool(runpod_api, nodes=2, accelerator="A100", linger=True, ttl=60) as pool:
        assert len(worker_pid() @ pool) == 2
    assert len(runpod_api.pods) == 2
    with runpod_pool(runpod_api, nodes=1, accelerator="A100") as pool:
        assert len(runpod_api.pods) == 1 and len(runpod_api.creates) == 2
        worker_pid() >> pool
    assert runpod_api.pods == {}


def test_a_pool_with_another_spec_launches_its_own_pod(runpod_api: FakeRunPod) -> None:
    with runpod_pool(runpod_api, accelerator="A100", linger=True, ttl=60) as pool:
        worker_pid() >> pool
    (parked,) = runpod_api.pods
    with runpod_pool(runpod_api, accelerator="A100", image=sky.Image(env={"OTHER": "1"})) as pool:
        worker_pid() >> pool
        assert len(runpod_api.creates) == 2
    assert list(runpod_api.pods) == [parked]
    with runpod_pool(runpod_api, accelerator="A100") as pool:  # the parked one is still adoptable
        pass
    assert runpod_api.pods == {} and len(runpod_api.creates) == 2


def test_a_parked_pod_deletes_itself_when_no_pool_comes(runpod_api: FakeRunPod) -> None:
    with runpod_pool(runpod_api, accelerator="A100", linger=True, ttl=3) as pool:
        worker_pid() >> pool
    (pod,) = runpod_api.pods
    assert wait_until(lambda: pod in runpod_api.deleted, BOUND)
    assert runpod_api.pods == {}
    assert wait_until(lambda: linger.parked() == [], 10)  # its record is pruned at expiry, with its key
    assert list((Path(os.environ["SKYWARD_HOME"]) / "keys").glob("*_ed25519")) == []


def test_sky_ls_shows_a_parked_pod_as_idle_with_its_expiry(runpod_api: FakeRunPod, tmp_path: Path) -> None:
    with runpod_pool(runpod_api, accelerator="A100", linger=True, ttl=60) as pool:
        worker_pid() >> pool
    (pod,) = runpod_api.pods
    cli = Sky(tmp_path)
    cli.env.update(RUNPOD_API_KEY=API_KEY, RUNPOD_API_URL=runpod_api.rest_url)
    (listed,) = cli.json("ls", "--provider", "runpod")["machines"]
    assert (listed["id"], listed["state"], listed["expired"]) == (pod, "idle", False)
    assert listed["lease_expires"] is not None
    ended = cli.json("down", listed["pool"], "--yes", "--provider", "runpod")["ended"]
    assert [e["id"] for e in ended if e["kind"] == "machine"] == [pod]
    assert linger.parked() == [] and runpod_api.pods == {}
