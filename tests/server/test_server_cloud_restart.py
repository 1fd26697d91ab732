"""A killed server's cloud pool is started again on the same pods (the fake RunPod API).

The server holds a RunPod pool whose pod is a real sshd; the server is SIGKILLed. Started again
within the pool's `ttl`, it releases the pool's held record (`skyward.providers.linger`) and
starts the pool again, which adopts the pod instead of renting a new one: the same pod answers,
its lease renewed in time. Deleting the pool then deletes the pod.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_support import Server
from test_server_restart import kill, wait_ready

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runpod"))

from cloud_fakes import serving  # noqa: E402
from fake_runpod import FakeRunPod  # noqa: E402
from runpod_support import API_KEY  # noqa: E402

TTL = 30
HOST = "import socket, os\nprint(os.environ.get('HOME'))\n"


@pytest.fixture
def runpod_api(tmp_path: Path) -> Iterator[FakeRunPod]:
    with serving(FakeRunPod(tmp_path / "pods", API_KEY)) as fake:
        yield fake


def runpod_config(api: FakeRunPod, root: Path) -> None:
    import getpass

    (root / "skyward.toml").write_text(
        f'[pools.gpu]\nttl = {TTL}\naccelerator = "A100"\n'
        f'[pools.gpu.provider]\ntype = "runpod"\napi_url = "{api.rest_url}"\n'
        f'graphql_url = "{api.graphql_url}"\nssh_user = "{getpass.getuser()}"\npython = "{sys.executable}"\n'
    )


def home_of_pod(server: Server) -> str:
    (server.root / "home.py").write_text(HOST)
    done = server.sky("compute", "run", "gpu", "home.py")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_killed_servers_runpod_pool_is_adopted_on_the_same_pod(
    fresh: Server, runpod_api: FakeRunPod
) -> None:
    fresh.env["RUNPOD_API_KEY"] = API_KEY
    runpod_config(runpod_api, fresh.root)
    fresh.start()
    assert fresh.sky("compute", "create", "gpu").returncode == 0
    wait_ready(fresh, "gpu")
    home = home_of_pod(fresh)
    (pod,) = runpod_api.pods
    kill(fresh)

    fresh.start()
    assert fresh.request("GET", "/v1/server")[1]["restored"]["adopted"] == ["gpu"]
    wait_ready(fresh, "gpu")
    assert home_of_pod(fresh) == home
    assert list(runpod_api.pods) == [pod] and len(runpod_api.creates) == 1, "a new pod was rented"
    time.sleep(3)
    assert runpod_api.deleted == []

    assert fresh.sky("compute", "delete", "gpu").returncode == 0
    assert runpod_api.deleted == [pod] and runpod_api.pods == {}
