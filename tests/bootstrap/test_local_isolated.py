"""`sky.Local(isolated=True)`: every node gets its own venv from the same bootstrap as a remote host."""

from __future__ import annotations

import glob
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import cloudpickle
import pytest
from bootstrap_support import needs_uv, use_shared_uv_cache

import skyward as sky
from skyward.errors import BootstrapFailed
from skyward.observe.events import BootstrapPhase

pytestmark = [needs_uv, pytest.mark.timeout(300)]

# The node's venv cannot import this test module: ship its functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(autouse=True)
def _uv_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    use_shared_uv_cache(monkeypatch)
    yield


def isolated_pool(**kwargs: object) -> sky.Pool:
    return sky.Compute(provider=sky.Local(isolated=True), console=False, logging=False, **kwargs)


@sky.function
def six_location() -> dict[str, str]:
    import six

    return {
        "six": six.__file__, "python": sys.executable, "cwd": os.getcwd(), "greeting": os.environ["GREETING"],
    }


def test_a_node_installs_image_pip_into_its_own_venv() -> None:
    phases: list[tuple[str, str]] = []
    compute = isolated_pool(nodes=1, image=sky.Image(pip=["six"], env={"GREETING": "it's $isolated"}))
    compute.on(BootstrapPhase, lambda e: phases.append((e.phase, e.event)))
    with compute as pool:
        base = Path(pool.cluster.state["local_dir"])
        seen = six_location() >> pool
    node_dir = base / "node-0"
    assert Path(seen["six"]).is_relative_to(node_dir / "venv")
    assert not Path(seen["six"]).is_relative_to(sys.prefix)
    assert Path(seen["python"]).parent == node_dir / "venv" / "bin"
    assert seen["cwd"] == str(node_dir)
    assert seen["greeting"] == "it's $isolated"
    assert ("pip", "completed") in phases and ("skyward", "completed") in phases
    assert not base.exists()  # removed at teardown


def test_nodes_have_separate_venvs() -> None:
    with isolated_pool(nodes=2, image=sky.Image(pip=["six"], env={"GREETING": "hi"})) as pool:
        seen = six_location() @ pool
    assert [Path(s["python"]).parts[-4] for s in seen] == ["node-0", "node-1"]


def test_a_missing_package_fails_the_pool_with_the_pip_phase_and_cleans_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # uv wraps its error to the terminal's width: one line here
    compute = isolated_pool(nodes=1, image=sky.Image(pip=["this-package-does-not-exist-skyward"]))
    with pytest.raises(BootstrapFailed) as caught:
        compute.start()
    error = caught.value
    assert (error.node, error.phase) == (0, "pip")
    assert "this-package-does-not-exist-skyward" in error.command
    assert "not found in the package registry" in str(error)  # uv's own words
    base = compute.cluster.state["local_dir"]
    assert not os.path.exists(base)
    assert not glob.glob(os.path.join(tempfile.gettempdir(), f"skyward-{compute.name}-*"))


def test_plain_local_is_unchanged() -> None:
    assert sky.Local() == sky.Local(isolated=False)
    provider = sky.Local().create()
    assert provider.isolated is False
    assert provider.python_bin(None) == sys.executable  # type: ignore[arg-type]


def test_a_credential_in_image_env_is_masked_in_bootstrap_events_and_errors() -> None:
    token = "ghp_" + "s3cr3t" * 5
    script = 'echo "using $API_TOKEN"; exit 3'
    echo = sky.plugins.Plugin.create("echoes").with_bootstrap(lambda cluster: script)
    compute = isolated_pool(nodes=1, image=sky.Image(env={"API_TOKEN": token}), plugins=[echo])
    seen: list[sky.Event] = []
    compute.on(sky.Event, seen.append)
    with pytest.raises(BootstrapFailed) as caught:
        compute.start()
    assert caught.value.phase == "echoes"
    assert "using ***" in caught.value.output_tail
    assert token not in str(caught.value) and token not in caught.value.output_tail
    assert any("using ***" in repr(event) for event in seen)
    assert not [event for event in seen if token in repr(event)]


def test_a_node_with_several_workers_is_bootstrapped_once(tmp_path: Path) -> None:
    runs = tmp_path / "op-runs.txt"
    two = (
        sky.plugins.Plugin.create("two")
        .with_workers_per_node(lambda spec: 2)
        .with_bootstrap(lambda cluster: f"echo ran >> {runs}")
    )
    phases: list[str] = []
    compute = isolated_pool(nodes=1, plugins=[two])
    compute.on(BootstrapPhase, lambda e: phases.append(f"{e.phase} {e.event}"))
    with compute as pool:
        assert len(set(worker_pid() @ pool)) == 2  # both workers run, from the one venv
    assert runs.read_text().count("ran") == 1
    assert phases.count("venv started") == 1


@sky.function
def worker_pid() -> int:
    return os.getpid()
