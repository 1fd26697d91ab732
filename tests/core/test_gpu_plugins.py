"""The GPU plugins of core: `cuml`, `mig`, `mps` and `huggingface`.

Everything a plugin decides on the client (image changes, bootstrap ops, env values, validation)
is tested exactly here, on any machine. The bootstrap scripts are also syntax-checked with
`bash -n` and run against fake `nvidia-smi` / `nvidia-cuda-mps-control` / `hf` programs that record
how they were called. Tests marked `gpu` talk to a real driver and skip where `nvidia-smi` is
missing or lists no GPU.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import shutil
import stat
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import cloudpickle
import pytest
import structlog
from core_support import local_pool

import skyward as sky
from skyward.bootstrap import Op
from skyward.client.hooks import PoolHooks
from skyward.errors import ConfigurationError, PluginError
from skyward.image import PipIndex
from skyward.observe.logging import configure_logging, reset_logging
from skyward.plugins.builtin.huggingface import HUGGINGFACE_PACKAGES, LOGIN_SCRIPT, TOKEN_PATH_SNIPPET
from skyward.plugins.builtin.mig import (
    MIG_PROFILES,
    mig_instances_per_gpu,
    mig_profile,
    mig_setup_script,
    mig_workers_per_node,
    parse_mig_uuids,
    workers_per_node,
)
from skyward.plugins.builtin.mps import mps_daemon_script
from skyward.task.instance import InstanceInfo

# `from skyward.plugins import mig` gives the factory (`sky.plugins.mig`), not the module.
cuml_module = importlib.import_module("skyward.plugins.builtin.cuml")
hf_module = importlib.import_module("skyward.plugins.builtin.huggingface")
mig_module = importlib.import_module("skyward.plugins.builtin.mig")
mps_module = importlib.import_module("skyward.plugins.builtin.mps")

pytestmark = pytest.mark.timeout(120)

BASH = shutil.which("bash") or "/bin/bash"
TOKEN = "hf_SkywardTestToken0123456789abcdef"


def cluster(accelerator: Any = None) -> Any:
    """What the hooks read from a cluster: `cluster.spec.accelerator`."""
    return types.SimpleNamespace(spec=types.SimpleNamespace(accelerator=accelerator))


def info(worker: int = 0, workers_per_node: int = 1) -> InstanceInfo:
    return InstanceInfo(node=0, total_nodes=1, worker=worker, workers_per_node=workers_per_node)


def _gpu_listed() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.startswith("GPU ") for line in out.splitlines())


HAS_GPU = _gpu_listed()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="nvidia-smi is not installed or lists no GPU")


# -- cuml ------------------------------------------------------------------------------------------------


def test_cuml_adds_rapids_packages_and_a_scoped_nvidia_index() -> None:
    image = sky.plugins.cuml().transform(sky.Image(pip=["pandas"]), cluster())
    assert image.pip == ("pandas", "cudf-cu12", "cuml-cu12")
    assert image.pip_indexes == (
        PipIndex(url="https://pypi.nvidia.com", packages=("cudf-cu12", "cuml-cu12")),
    )
    assert image.env == {}


def test_cuml_cuda_13_picks_the_cu13_wheels() -> None:
    image = sky.plugins.cuml(cuda="cu13").transform(sky.Image(), cluster())
    assert image.pip == ("cudf-cu13", "cuml-cu13")
    assert image.pip_indexes == (
        PipIndex(url="https://pypi.nvidia.com", packages=("cudf-cu13", "cuml-cu13")),
    )


def test_cuml_transform_twice_does_not_repeat_packages_or_the_index() -> None:
    plugin = sky.plugins.cuml()
    once = plugin.transform(sky.Image(), cluster())
    assert plugin.transform(once, cluster()) == once


@pytest.mark.parametrize("cuda", ["cu11", "12", "cuda12", "", None])
def test_cuml_rejects_unsupported_cuda(cuda: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        sky.plugins.cuml(cuda=cuda)
    assert str(caught.value) == (
        f"sky.plugins.cuml(cuda={cuda!r}): RAPIDS publishes pip wheels for 'cu12', 'cu13'; "
        "pass e.g. cuda=\"cu12\" (match the CUDA major of the worker's driver)"
    )


def test_cuml_hooks() -> None:
    plugin = sky.plugins.cuml()
    assert plugin.name == "cuml"
    assert plugin.bootstrap is None and plugin.decorate is None and plugin.around_client is None
    assert plugin.around_app is not None
    assert plugin.around_process is plugin.around_app  # executor="process" subprocesses get it too


def test_cuml_around_app_installs_the_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    fake_cuml = types.ModuleType("cuml")
    fake_accel = types.ModuleType("cuml.accel")
    fake_accel.install = lambda: calls.append("install")  # type: ignore[attr-defined]
    fake_cuml.accel = fake_accel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuml", fake_cuml)
    monkeypatch.setitem(sys.modules, "cuml.accel", fake_accel)
    with sky.plugins.cuml().around_app(info()):
        assert calls == ["install"]
    assert calls == ["install"]


def test_cuml_around_app_without_cuml_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cuml", None)  # import fails as if not installed
    with pytest.raises(PluginError, match=r"could not import cuml\.accel on this worker"), \
            sky.plugins.cuml().around_app(info()):
        pass


def test_cuml_building_the_plugin_imports_no_cuml() -> None:
    code = "import sys, skyward as sky; sky.plugins.cuml(); assert 'cuml' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_cuml_hook_failure_reaches_the_caller_from_a_real_worker() -> None:
    """The around_app hook ships to a real worker process, runs before the task, and its error comes back."""

    @sky.function
    def noop() -> int:
        return 1

    if importlib.util.find_spec("cuml") is not None:
        pytest.skip("cuml is installed here; the failure path needs it missing")
    pool = local_pool(1, plugins=[sky.plugins.cuml()])
    pool.start()
    try:
        with pytest.raises(Exception, match=r"could not import cuml\.accel"):
            noop() >> pool
    finally:
        pool.stop()


# -- mig: profiles and workers per node ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "instances"),
    [
        ("7g.80gb", 1), ("4g.40gb", 1), ("3g.40gb", 2), ("2g.20gb", 3), ("1g.10gb", 7), ("1g.20gb", 4),
        ("7g.40gb", 1), ("4g.20gb", 1), ("3g.20gb", 2), ("2g.10gb", 3), ("1g.5gb", 7),
        ("7g.141gb", 1), ("3g.71gb", 2), ("1g.18gb", 7), ("1g.35gb", 4),
        ("4g.24gb", 1), ("2g.12gb", 2), ("1g.6gb", 4),
    ],
)
def test_mig_instances_per_gpu(profile: str, instances: int) -> None:
    assert mig_instances_per_gpu(profile) == instances
    assert mig_workers_per_node(profile) == instances
    assert mig_workers_per_node(profile, gpus=8) == 8 * instances


def test_mig_1g10gb_is_a_quarter_of_an_a100_40gb_but_a_seventh_of_an_80gb_card() -> None:
    assert mig_instances_per_gpu("1g.10gb") == 7
    assert mig_instances_per_gpu("1g.10gb", gpu="A100", memory_gb=80) == 7
    assert mig_instances_per_gpu("1g.10gb", gpu="H100", memory_gb=80) == 7
    assert mig_instances_per_gpu("1g.10gb", gpu="A100", memory_gb=40) == 4
    assert mig_instances_per_gpu("1g.10gb", memory_gb=40) == 4


def test_mig_profile_names_are_normalized() -> None:
    assert mig_profile(sky.plugins.mig(" 3G.40GB ")) == "3g.40gb"
    assert mig_profile(sky.plugins.mig("MIG 3g.40gb")) == "3g.40gb"
    assert mig_profile(sky.plugins.mig("mig-1g.10gb")) == "1g.10gb"


VALID_PROFILES_TEXT = (
    "valid profiles by GPU:\n"
    "  A100 80GB: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb\n"
    "  H100 80GB: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb\n"
    "  A100 40GB: 1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb\n"
    "  H100 NVL 94GB: 1g.12gb, 1g.24gb, 2g.24gb, 3g.47gb, 4g.47gb, 7g.94gb\n"
    "  H200 141GB: 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb\n"
    "  B200 180GB: 1g.23gb, 1g.45gb, 2g.45gb, 3g.90gb, 4g.90gb, 7g.180gb\n"
    "  A30 24GB: 1g.6gb, 2g.12gb, 4g.24gb"
)


@pytest.mark.parametrize("profile", ["3g.30gb", "8g.80gb", "3g", "1g.10gb+me", ""])
def test_mig_rejects_unknown_profiles_listing_the_valid_ones(profile: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        sky.plugins.mig(profile)
    assert str(caught.value) == f"sky.plugins.mig({profile!r}) is not a MIG profile; {VALID_PROFILES_TEXT}"


def test_mig_rejects_a_non_string_profile() -> None:
    with pytest.raises(ConfigurationError) as caught:
        sky.plugins.mig(3)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f'sky.plugins.mig(profile=3): the profile is a string such as "3g.40gb"; {VALID_PROFILES_TEXT}'
    )


def test_mig_profiles_cover_the_documented_ones() -> None:
    documented = {
        "1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
        "1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", "1g.20gb",
    }
    assert documented <= set(MIG_PROFILES)


def test_mig_profile_that_does_not_fit_the_pools_card_is_rejected() -> None:
    with pytest.raises(ConfigurationError) as caught:
        workers_per_node([sky.plugins.mig("3g.40gb")], sky.accelerators.A100(memory="40GB"))
    assert str(caught.value) == (
        "sky.plugins.mig('3g.40gb') is not a profile of this pool's A100 40GB; its profiles:\n"
        "  A100 40GB: 1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb"
    )


def test_mig_on_a_gpu_without_mig_is_rejected() -> None:
    with pytest.raises(ConfigurationError) as caught:
        workers_per_node([sky.plugins.mig("3g.40gb")], sky.accelerators.L4())
    assert str(caught.value) == (
        "sky.plugins.mig() needs a MIG-capable GPU (A100, A30, H100, H200, B200), but this pool asks for "
        "L4; pick e.g. accelerator=sky.accelerators.A100() or H100()"
    )


def test_mig_needs_whole_gpus() -> None:
    with pytest.raises(ConfigurationError, match=r"MIG partitions whole GPUs, but the node has 0\.5 of them"):
        workers_per_node([sky.plugins.mig("3g.40gb")], sky.accelerators.A100(count=0.5))


def test_workers_per_node_is_what_the_pool_sets() -> None:
    assert workers_per_node([]) == 1
    assert workers_per_node([sky.plugins.cuml()], sky.accelerators.A100()) == 1
    assert workers_per_node([sky.plugins.mig("3g.40gb")]) == 2
    assert workers_per_node([sky.plugins.mig("3g.40gb")], sky.accelerators.A100()) == 2
    assert workers_per_node([sky.plugins.mig("1g.10gb")], sky.accelerators.H100(count=8)) == 56
    assert workers_per_node([sky.plugins.mig("1g.10gb")], sky.accelerators.A100(memory="40GB", count=2)) == 8
    assert workers_per_node([sky.plugins.cuml(), sky.plugins.mig("2g.35gb")], sky.accelerators.H200()) == 3
    # Still recognized after the builder changed the plugin.
    assert workers_per_node([sky.plugins.mig("7g.80gb").with_decorator(lambda fn: fn)]) == 1
    assert mig_profile(sky.plugins.mig("7g.80gb").with_decorator(lambda fn: fn)) == "7g.80gb"
    assert mig_profile(sky.plugins.cuml()) is None


def test_workers_per_node_takes_one_mig_plugin() -> None:
    with pytest.raises(ConfigurationError) as caught:
        workers_per_node([sky.plugins.mig("3g.40gb"), sky.plugins.mig("1g.10gb")])
    assert str(caught.value) == (
        "a pool takes one mig plugin, got 2 (3g.40gb, 1g.10gb); keep the one whose profile you want"
    )


# -- mig: bootstrap op ---------------------------------------------------------------------------------


MIG_SCRIPT_3G40 = """\
# skyward mig: 2 x 3g.40gb MIG instance(s) on every GPU, one worker each
SKYWARD_MIG_SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SKYWARD_MIG_SUDO="sudo -n"; fi
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "skyward mig: nvidia-smi not found; MIG needs an A100, A30, H100, H200 or B200 GPU" >&2
  exit 1
fi
for gpu in $(nvidia-smi --query-gpu=index --format=csv,noheader); do
  mode="$(nvidia-smi -i "$gpu" --query-gpu=mig.mode.current --format=csv,noheader | tr -d ' ')"
  if [ "$mode" != "Enabled" ]; then
    $SKYWARD_MIG_SUDO nvidia-smi -i "$gpu" -mig 1 || {
      echo "skyward mig: could not enable MIG mode on GPU $gpu (needs root and a MIG-capable GPU)" >&2
      exit 1
    }
    mode="$(nvidia-smi -i "$gpu" --query-gpu=mig.mode.current --format=csv,noheader | tr -d ' ')"
    if [ "$mode" != "Enabled" ]; then
      $SKYWARD_MIG_SUDO nvidia-smi -i "$gpu" -r >/dev/null 2>&1 || true
      mode="$(nvidia-smi -i "$gpu" --query-gpu=mig.mode.current --format=csv,noheader | tr -d ' ')"
    fi
    if [ "$mode" != "Enabled" ]; then
      echo "skyward mig: MIG mode on GPU $gpu is pending a GPU reset or a reboot (current mode: $mode)" >&2
      exit 1
    fi
  fi
  have="$(nvidia-smi mig -i "$gpu" -lgi 2>/dev/null | grep -c 'MIG 3g.40gb ' || true)"
  if [ "$have" != "2" ]; then
    $SKYWARD_MIG_SUDO nvidia-smi mig -i "$gpu" -dci >/dev/null 2>&1 || true
    $SKYWARD_MIG_SUDO nvidia-smi mig -i "$gpu" -dgi >/dev/null 2>&1 || true
    $SKYWARD_MIG_SUDO nvidia-smi mig -i "$gpu" -cgi 3g.40gb,3g.40gb -C || {
      echo "skyward mig: could not create 2 x 3g.40gb on GPU $gpu (not a profile of it?)" >&2
      exit 1
    }
  fi
done
nvidia-smi -L
"""


def test_mig_bootstrap_op_exact_script() -> None:
    ops = sky.plugins.mig("3g.40gb").bootstrap(cluster(sky.accelerators.A100()))
    assert ops == (Op(name="mig", script=MIG_SCRIPT_3G40),)
    assert ops[0].secrets == ()


def test_mig_bootstrap_creates_as_many_instances_as_fit_the_card() -> None:
    (op,) = sky.plugins.mig("1g.10gb").bootstrap(cluster(sky.accelerators.A100(memory="40GB")))
    assert "-cgi 1g.10gb,1g.10gb,1g.10gb,1g.10gb -C" in op.script
    (op,) = sky.plugins.mig("1g.10gb").bootstrap(cluster(sky.accelerators.H100()))
    assert "-cgi " + ",".join(["1g.10gb"] * 7) + " -C" in op.script
    (op,) = sky.plugins.mig("7g.80gb").bootstrap(cluster())  # accelerator unknown: the 80 GB cards
    assert "-cgi 7g.80gb -C" in op.script
    assert op.script == mig_setup_script("7g.80gb", 1)


def test_mig_bootstrap_rejects_a_card_without_mig_before_anything_is_provisioned() -> None:
    with pytest.raises(ConfigurationError, match=r"needs a MIG-capable GPU .* asks for T4"):
        sky.plugins.mig("3g.40gb").bootstrap(cluster(sky.accelerators.T4()))


def test_mig_plugin_hooks() -> None:
    plugin = sky.plugins.mig("3g.40gb")
    assert plugin.name == "mig"
    assert plugin.transform is None and plugin.decorate is None and plugin.around_client is None
    assert plugin.around_app == plugin.around_process == mig_module.MigDevice("3g.40gb")
    assert plugin.bootstrap == mig_module.MigSetup("3g.40gb")
    assert plugin.workers_per_node == mig_module.MigWorkers("3g.40gb")
    # Worker-side hooks travel to workers with cloudpickle.
    assert cloudpickle.loads(cloudpickle.dumps(plugin)) == plugin


# -- mig: each worker gets its own instance -------------------------------------------------------------

LISTING = """\
GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)
  MIG 3g.40gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de4-9bd4-9ee6f2d3bb47)
  MIG 3g.40gb     Device  1: (UUID: MIG-cba663e8-9bed-5b6f-b2d2-22ef8e4c4c48)
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-0a1b2c3d-0000-1111-2222-333344445555)
  MIG 3g.40gb     Device  0: (UUID: MIG-11111111-2222-3333-4444-555555555555)
  MIG 1g.10gb     Device  1: (UUID: MIG-99999999-8888-7777-6666-555555555555)
"""

OLD_DRIVER_LISTING = """\
GPU 0: A100-SXM4-40GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)
  MIG 3g.20gb Device 0: (UUID: MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1/0)
  MIG 3g.20gb Device 1: (UUID: MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/2/0)
"""


def test_parse_mig_uuids() -> None:
    assert parse_mig_uuids(LISTING, "3g.40gb") == [
        "MIG-c6d4f1ef-42e4-5de4-9bd4-9ee6f2d3bb47",
        "MIG-cba663e8-9bed-5b6f-b2d2-22ef8e4c4c48",
        "MIG-11111111-2222-3333-4444-555555555555",
    ]
    assert parse_mig_uuids(LISTING) == [
        *parse_mig_uuids(LISTING, "3g.40gb"), "MIG-99999999-8888-7777-6666-555555555555",
    ]
    assert parse_mig_uuids(OLD_DRIVER_LISTING, "3g.20gb") == [
        "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1/0",
        "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/2/0",
    ]
    assert parse_mig_uuids("GPU 0: Tesla T4 (UUID: GPU-123)\n") == []


@pytest.fixture
def listing(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    text = [LISTING]
    monkeypatch.setattr(mig_module, "_nvidia_smi_list", lambda: text[0])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    yield text


@pytest.mark.parametrize(
    ("worker", "uuid"),
    [
        (0, "MIG-c6d4f1ef-42e4-5de4-9bd4-9ee6f2d3bb47"),
        (1, "MIG-cba663e8-9bed-5b6f-b2d2-22ef8e4c4c48"),
        (2, "MIG-11111111-2222-3333-4444-555555555555"),
    ],
)
def test_mig_around_app_pins_each_worker_to_its_instance(listing: list[str], worker: int, uuid: str) -> None:
    plugin = sky.plugins.mig("3g.40gb")
    with plugin.around_app(info(worker=worker, workers_per_node=3)):
        assert os.environ["CUDA_VISIBLE_DEVICES"] == uuid
    assert "CUDA_VISIBLE_DEVICES" not in os.environ
    with plugin.around_process(info(worker=worker, workers_per_node=3)):
        assert os.environ["CUDA_VISIBLE_DEVICES"] == uuid


def test_mig_around_app_restores_a_previous_value(
    listing: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with sky.plugins.mig("3g.40gb").around_app(info()):
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "MIG-c6d4f1ef-42e4-5de4-9bd4-9ee6f2d3bb47"
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0"


def test_mig_worker_beyond_the_instances_is_an_error(listing: list[str]) -> None:
    with pytest.raises(PluginError) as caught, sky.plugins.mig("3g.40gb").around_app(info(worker=3)):
        pass
    assert str(caught.value) == (
        "worker 3 has no 3g.40gb MIG instance of its own: this node has 3, for workers 0..2"
    )


def test_mig_without_instances_is_an_error(listing: list[str]) -> None:
    listing[0] = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5d5ba0d6)\n"
    with pytest.raises(PluginError) as caught, sky.plugins.mig("3g.40gb").around_app(info()):
        pass
    assert str(caught.value) == (
        "the mig plugin found no 3g.40gb MIG instance on this node (nvidia-smi -L lists none); "
        "the mig bootstrap op creates them, so check the bootstrap log"
    )


def test_mig_devices_uses_nvidia_smi(listing: list[str]) -> None:
    assert mig_module.mig_devices("1G.10GB") == ["MIG-99999999-8888-7777-6666-555555555555"]


# -- mps -------------------------------------------------------------------------------------------------


def test_mps_defaults_only_point_workers_at_the_daemon() -> None:
    plugin = sky.plugins.mps()
    image = plugin.transform(sky.Image(env={"A": "1"}), cluster())
    assert image.env == {
        "A": "1",
        "CUDA_MPS_PIPE_DIRECTORY": "/tmp/nvidia-mps",
        "CUDA_MPS_LOG_DIRECTORY": "/tmp/nvidia-mps-log",
    }
    assert image.pip == () and image.pip_indexes == ()
    assert plugin.bootstrap(cluster()) == (Op(name="mps", script=MPS_SCRIPT_DEFAULT),)


MPS_SCRIPT_DEFAULT = """\
# skyward mps: start the NVIDIA MPS control daemon
if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
  echo "skyward mps: nvidia-cuda-mps-control not found; MPS needs an NVIDIA GPU driver" >&2
  exit 1
fi
export CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps
export CUDA_MPS_LOG_DIRECTORY=/tmp/nvidia-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
skyward_mps_pid="$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
if [ -f "$skyward_mps_pid" ] && kill -0 "$(cat "$skyward_mps_pid")" 2>/dev/null; then
  echo "skyward mps: the MPS control daemon is already running"
else
  nvidia-cuda-mps-control -d ||
    echo get_server_list | nvidia-cuda-mps-control >/dev/null 2>&1 || {
    echo "skyward mps: could not start the MPS control daemon; see $CUDA_MPS_LOG_DIRECTORY" >&2
    exit 1
  }
fi
"""

MPS_SCRIPT_LIMITS = """\
# skyward mps: start the NVIDIA MPS control daemon
if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
  echo "skyward mps: nvidia-cuda-mps-control not found; MPS needs an NVIDIA GPU driver" >&2
  exit 1
fi
export CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps
export CUDA_MPS_LOG_DIRECTORY=/tmp/nvidia-mps-log
export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25
export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8G,1=8G
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
skyward_mps_pid="$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
if [ -f "$skyward_mps_pid" ] && kill -0 "$(cat "$skyward_mps_pid")" 2>/dev/null; then
  echo "skyward mps: the MPS control daemon is already running"
else
  nvidia-cuda-mps-control -d ||
    echo get_server_list | nvidia-cuda-mps-control >/dev/null 2>&1 || {
    echo "skyward mps: could not start the MPS control daemon; see $CUDA_MPS_LOG_DIRECTORY" >&2
    exit 1
  }
fi
echo "set_default_active_thread_percentage 25" | nvidia-cuda-mps-control >/dev/null || {
  echo "skyward mps: the MPS control daemon refused: set_default_active_thread_percentage 25" >&2
  exit 1
}
echo "set_default_device_pinned_mem_limit 0 8G" | nvidia-cuda-mps-control >/dev/null || {
  echo "skyward mps: the MPS control daemon refused: set_default_device_pinned_mem_limit 0 8G" >&2
  exit 1
}
echo "set_default_device_pinned_mem_limit 1 8G" | nvidia-cuda-mps-control >/dev/null || {
  echo "skyward mps: the MPS control daemon refused: set_default_device_pinned_mem_limit 1 8G" >&2
  exit 1
}
"""


def test_mps_limits_for_every_gpu_of_the_node() -> None:
    plugin = sky.plugins.mps(active_thread_percentage=25, pinned_memory_limit="8G")
    two_gpus = cluster(sky.accelerators.A100(count=2))
    assert plugin.transform(sky.Image(), two_gpus).env == {
        "CUDA_MPS_PIPE_DIRECTORY": "/tmp/nvidia-mps",
        "CUDA_MPS_LOG_DIRECTORY": "/tmp/nvidia-mps-log",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25",
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=8G,1=8G",
    }
    assert plugin.bootstrap(two_gpus) == (Op(name="mps", script=MPS_SCRIPT_LIMITS),)


def test_mps_limit_per_device_and_unit_spelling() -> None:
    plugin = sky.plugins.mps(pinned_memory_limit={1: "4gb", 0: " 512 MB "})
    env = plugin.transform(sky.Image(), cluster(sky.accelerators.A100(count=2))).env
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=512M,1=4G"
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" not in env
    (op,) = plugin.bootstrap(cluster(sky.accelerators.A100(count=2)))
    assert "export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=512M,1=4G\n" in op.script
    assert 'echo "set_default_device_pinned_mem_limit 0 512M" | nvidia-cuda-mps-control' in op.script
    assert 'echo "set_default_device_pinned_mem_limit 1 4G" | nvidia-cuda-mps-control' in op.script
    assert "set_default_active_thread_percentage" not in op.script


def test_mps_single_limit_without_an_accelerator_is_device_0() -> None:
    env = sky.plugins.mps(pinned_memory_limit="1T").transform(sky.Image(), cluster()).env
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=1T"
    half = cluster(sky.accelerators.A100(count=0.5))
    env = sky.plugins.mps(pinned_memory_limit="16G").transform(sky.Image(), half).env
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=16G"


@pytest.mark.parametrize("value", [1, 50, 100])
def test_mps_accepts_percentages_1_to_100(value: int) -> None:
    env = sky.plugins.mps(active_thread_percentage=value).transform(sky.Image(), cluster()).env
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == str(value)


@pytest.mark.parametrize("value", [0, 101, -5, 50.0, "50", True])
def test_mps_rejects_bad_percentages(value: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        sky.plugins.mps(active_thread_percentage=value)
    assert str(caught.value) == (
        f"sky.plugins.mps(active_thread_percentage={value!r}): the share of the GPU's SMs one client may "
        "use is a whole percentage from 1 to 100, e.g. active_thread_percentage=50"
    )


@pytest.mark.parametrize("value", ["8", "8X", "0G", "1.5G", "-1G", "G", 8, "8 G B"])
def test_mps_rejects_bad_memory_limits(value: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        sky.plugins.mps(pinned_memory_limit=value)
    assert str(caught.value) == (
        f"sky.plugins.mps(pinned_memory_limit={value!r}): {value!r} is not a memory limit; write a positive "
        'whole amount with a unit K, M, G or T (optionally followed by B), e.g. "8G" or "512MB"'
    )


def test_mps_rejects_bad_device_mappings() -> None:
    with pytest.raises(ConfigurationError, match=r"the mapping is empty"):
        sky.plugins.mps(pinned_memory_limit={})
    with pytest.raises(ConfigurationError) as caught:
        sky.plugins.mps(pinned_memory_limit={"0": "8G"})
    assert str(caught.value) == (
        "sky.plugins.mps(pinned_memory_limit=...): '0' is not a device ordinal; keys are GPU indices "
        '0, 1, ..., e.g. {0: "8G", 1: "4G"}'
    )
    with pytest.raises(ConfigurationError, match=r"-1 is not a device ordinal"):
        sky.plugins.mps(pinned_memory_limit={-1: "8G"})
    with pytest.raises(ConfigurationError) as caught:
        sky.plugins.mps(pinned_memory_limit={0: "8G", 1: "lots"})
    assert str(caught.value).startswith(
        "sky.plugins.mps(pinned_memory_limit={1: 'lots'}): 'lots' is not a memory limit;"
    )


def test_mps_plugin_hooks() -> None:
    plugin = sky.plugins.mps()
    assert plugin.name == "mps"
    assert plugin.around_app is None and plugin.around_process is None and plugin.decorate is None


# -- huggingface ----------------------------------------------------------------------------------------


@pytest.fixture
def clean_logging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path))
    reset_logging()
    structlog.reset_defaults()
    yield tmp_path
    reset_logging()


def test_huggingface_installs_the_libraries_and_sets_the_token(clean_logging: Path) -> None:
    plugin = sky.plugins.huggingface(token=TOKEN)
    image = plugin.transform(sky.Image(pip=["torch"], env={"A": "1"}), cluster())
    assert image.pip == ("torch", "transformers", "datasets", "tokenizers", "huggingface_hub")
    assert HUGGINGFACE_PACKAGES == ("transformers", "datasets", "tokenizers", "huggingface_hub")
    assert image.env == {"A": "1", "HF_TOKEN": TOKEN}
    assert image.shell_vars == {"HF_TOKEN_PATH": TOKEN_PATH_SNIPPET}
    assert image.pip_indexes == ()


def test_huggingface_login_op_exact_script_and_secret(clean_logging: Path) -> None:
    (op,) = sky.plugins.huggingface(token=TOKEN).bootstrap(cluster())
    assert op.name == "huggingface-login"
    assert op.secrets == (TOKEN,)
    assert op.script == LOGIN_SCRIPT == """\
# skyward huggingface: store $HF_TOKEN for the Hub's tools at $HF_TOKEN_PATH (the node folder's)
if [ -z "${HF_TOKEN:-}" ] || [ -z "${HF_TOKEN_PATH:-}" ]; then
  echo "skyward huggingface: HF_TOKEN or HF_TOKEN_PATH is not set in the bootstrap environment" >&2
  exit 1
fi
rm -f "$HF_TOKEN_PATH"
(umask 077 && printf '%s' "$HF_TOKEN" > "$HF_TOKEN_PATH")
"""


def test_huggingface_stores_the_token_in_the_node_folder_privately_and_nowhere_else(
    clean_logging: Path, tmp_path: Path
) -> None:
    import asyncio
    import stat

    from skyward.bootstrap.prepare import prepare_node
    from skyward.bootstrap.runner import LocalRunner
    from skyward.extension.plugin import LaunchCommand
    from skyward.providers.base import NodeSetup

    plugin = sky.plugins.huggingface(token=TOKEN)
    image = attrs.evolve(plugin.transform(sky.Image(), cluster()), pip=())  # the login, not the installs
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    setup = NodeSetup(image=image, ops=plugin.bootstrap(cluster()), launch=LaunchCommand(entrypoint="true"),
                      emit=lambda event: None, bootstrap_timeout=240, secrets=(TOKEN,))
    workdir = tmp_path / "node"
    asyncio.run(prepare_node(LocalRunner(env=env), setup, node=0, workdir=str(workdir), python=None))
    stored = workdir / "huggingface-token"
    assert stored.read_text() == TOKEN
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert f"export HF_TOKEN_PATH='{stored}'" in (workdir / "env.sh").read_text()
    assert not (home / ".cache" / "huggingface").exists()


def test_huggingface_token_never_shows(clean_logging: Path) -> None:
    plugin = sky.plugins.huggingface(token=TOKEN)
    (op,) = plugin.bootstrap(cluster())
    assert TOKEN not in repr(plugin)
    assert TOKEN not in str(plugin)
    assert TOKEN not in op.script
    assert TOKEN not in repr(op)
    assert TOKEN not in str(op)

    # A structlog line through Skyward's configured logging (the processor masks registered secrets).
    path = configure_logging(types.SimpleNamespace(
        level="DEBUG", file="~/.skyward/logs/skyward.log", console=False, rotation="50 MB", retention=1,
    ))
    assert path is not None
    structlog.get_logger("skyward.bootstrap").info(
        "skyward.bootstrap_command", command=f"export HF_TOKEN={TOKEN}", op=op, token=TOKEN,
    )
    logging.getLogger("skyward.bootstrap").warning("stdlib line with %s", TOKEN)
    for handler in logging.getLogger("skyward").handlers:
        handler.flush()
    text = path.read_text()
    assert "skyward.bootstrap_command" in text
    assert "HF_TOKEN=***" in text
    assert "stdlib line with ***" in text
    assert TOKEN not in text


def test_huggingface_token_is_registered_even_when_logging_is_reset_later(clean_logging: Path) -> None:
    plugin = sky.plugins.huggingface(token=TOKEN)
    reset_logging()  # clears registered secrets; the hooks register the token again when they run
    plugin.transform(sky.Image(), cluster())
    path = configure_logging(types.SimpleNamespace(
        level="INFO", file="~/.skyward/logs/skyward.log", console=False, rotation="50 MB", retention=1,
    ))
    structlog.get_logger("skyward.test").info("skyward.token", value=TOKEN)
    for handler in logging.getLogger("skyward").handlers:
        handler.flush()
    assert TOKEN not in path.read_text()


def test_huggingface_token_defaults_to_hf_token_from_the_environment(
    clean_logging: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    plugin = sky.plugins.huggingface()
    assert plugin.transform(sky.Image(), cluster()).env == {"HF_TOKEN": TOKEN}
    (op,) = plugin.bootstrap(cluster())
    assert op.secrets == (TOKEN,)


def test_huggingface_without_a_token_installs_only(
    clean_logging: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    plugin = sky.plugins.huggingface()
    assert plugin.bootstrap is None
    image = plugin.transform(sky.Image(), cluster())
    assert image.pip == HUGGINGFACE_PACKAGES
    assert image.env == {}
    monkeypatch.setenv("HF_TOKEN", "  ")
    assert sky.plugins.huggingface().bootstrap is None


@pytest.mark.parametrize("token", ["", "   ", 123, "hf_abc def"])
def test_huggingface_rejects_bad_tokens(clean_logging: Path, token: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"^sky\.plugins\.huggingface\(token=\.\.\.\): the token"):
        sky.plugins.huggingface(token=token)


def test_huggingface_plugin_hooks(clean_logging: Path) -> None:
    plugin = sky.plugins.huggingface(token=TOKEN)
    assert plugin.name == "huggingface"
    assert plugin.around_app is None and plugin.around_process is None and plugin.decorate is None
    assert plugin.around_client is None and plugin.launcher is None


# -- together in a pool's hooks: transforms fold and ops append in plugin order ------------------------


def test_plugins_compose_in_plugin_order(clean_logging: Path) -> None:
    plugins = (
        sky.plugins.mps(active_thread_percentage=50),
        sky.plugins.huggingface(token=TOKEN),
        sky.plugins.cuml(),
        sky.plugins.mig("3g.40gb"),
    )
    hooks = PoolHooks(plugins)
    where = cluster(sky.accelerators.A100())
    image = hooks.transform_image(sky.Image(pip=["numpy"]), where)
    assert image.pip == (
        "numpy", "transformers", "datasets", "tokenizers", "huggingface_hub", "cudf-cu12", "cuml-cu12",
    )
    assert image.env["HF_TOKEN"] == TOKEN
    assert image.env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"
    assert [op.name for op in hooks.bootstrap_ops(where)] == ["mps", "huggingface-login", "mig"]
    assert [p.name for p in hooks.worker_plugins()] == ["cuml", "mig"]


def test_factories_are_the_builtins_registered_by_core() -> None:
    modules = [("cuml", cuml_module), ("mig", mig_module), ("mps", mps_module), ("huggingface", hf_module)]
    for name, module in modules:
        factory = getattr(sky.plugins, name)
        assert callable(factory)
        assert factory.__name__ == name
        assert getattr(module, name).__module__ == module.__name__


# -- the scripts: bash -n, and runs against fake GPU tools ----------------------------------------------


def all_scripts() -> dict[str, str]:
    return {
        "mig-3g.40gb": MIG_SCRIPT_3G40,
        "mig-1g.5gb": mig_setup_script("1g.5gb", 7),
        "mps-default": MPS_SCRIPT_DEFAULT,
        "mps-limits": MPS_SCRIPT_LIMITS,
        "huggingface": LOGIN_SCRIPT,
    }


@pytest.mark.parametrize("name", list(all_scripts()))
def test_scripts_pass_bash_syntax_check(tmp_path: Path, name: str) -> None:
    script = tmp_path / f"{name}.sh"
    script.write_text(all_scripts()[name])
    result = subprocess.run([BASH, "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


def fake_tool(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!{BASH}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


FAKE_NVIDIA_SMI = r"""
s="$FAKE_STATE"; printf '%s\n' "$*" >> "$s/calls"
args="$*"; gpu=""
if [ "$1" = "-i" ]; then gpu="$2"; fi
if [ "$1" = "mig" ] && [ "$2" = "-i" ]; then gpu="$3"; fi
case "$args" in
  "--query-gpu=index --format=csv,noheader") seq 0 $((FAKE_GPUS - 1)) ;;
  "-i $gpu --query-gpu=mig.mode.current --format=csv,noheader")
    cat "$s/mode.$gpu" 2>/dev/null || echo "Disabled" ;;
  "-i $gpu -mig 1")
    if [ -n "${FAKE_NO_MIG:-}" ]; then echo "Unable to enable MIG Mode: Not Supported" >&2; exit 3; fi
    mode="Enabled"; if [ -n "${FAKE_PENDING:-}" ]; then mode="Disabled"; fi
    echo "$mode" > "$s/mode.$gpu" ;;
  "-i $gpu -r") if [ -n "${FAKE_STUCK:-}" ]; then exit 1; fi; echo "Enabled" > "$s/mode.$gpu" ;;
  "mig -i $gpu -lgi")
    if [ -s "$s/inst.$gpu" ]; then cat "$s/inst.$gpu"; else echo "No GPU instances found"; exit 6; fi ;;
  "mig -i $gpu -dci") : ;;
  "mig -i $gpu -dgi") rm -f "$s/inst.$gpu" ;;
  "mig -i $gpu -cgi "*" -C")
    list="${args#mig -i $gpu -cgi }"; list="${list% -C}"
    IFS=, read -ra profiles <<< "$list"
    for p in "${profiles[@]}"; do
      echo "|   0  MIG $p          9        1          4:4     |" >> "$s/inst.$gpu"
    done ;;
  "-L")
    for g in $(seq 0 $((FAKE_GPUS - 1))); do
      echo "GPU $g: NVIDIA H100 80GB HBM3 (UUID: GPU-0000000$g)"
      n=0
      if [ -f "$s/inst.$g" ]; then
        while read -r _ _ _ p _; do
          echo "  MIG $p     Device  $n: (UUID: MIG-fake-$g-$n)"; n=$((n + 1))
        done < "$s/inst.$g"
      fi
    done ;;
  *) echo "fake nvidia-smi: unexpected arguments: $args" >&2; exit 99 ;;
esac
"""


TOOLS = ("id", "tr", "grep", "seq", "cat", "rm", "mkdir", "basename")


def run_script(script: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run `script` with a PATH of the fakes in tmp_path/bin plus the few ordinary tools the scripts
    use, so a real nvidia-smi, hf or sudo on this machine is never reached."""
    tools = tmp_path / "tools"
    if not tools.exists():
        tools.mkdir()
        for tool in TOOLS:
            found = shutil.which(tool)
            assert found is not None, f"{tool} is needed to run the bootstrap scripts"
            (tools / tool).symlink_to(found)
    file = tmp_path / "op.sh"
    file.write_text(script)
    base = {"HOME": str(tmp_path), "PATH": f"{tmp_path / 'bin'}:{tools}"}
    return subprocess.run([BASH, str(file)], capture_output=True, text=True, env={**base, **env}, timeout=60)


@pytest.fixture
def fake_gpu(tmp_path: Path) -> dict[str, str]:
    state = tmp_path / "state"
    state.mkdir()
    fake_tool(tmp_path / "bin", "nvidia-smi", FAKE_NVIDIA_SMI)
    return {"FAKE_STATE": str(state), "FAKE_GPUS": "2"}


def calls(env: dict[str, str]) -> list[str]:
    return Path(env["FAKE_STATE"], "calls").read_text().splitlines()


def test_mig_script_partitions_every_gpu_then_is_idempotent(tmp_path: Path, fake_gpu: dict[str, str]) -> None:
    result = run_script(MIG_SCRIPT_3G40, tmp_path, fake_gpu)
    assert result.returncode == 0, result.stderr
    assert calls(fake_gpu) == [
        "--query-gpu=index --format=csv,noheader",
        "-i 0 --query-gpu=mig.mode.current --format=csv,noheader",
        "-i 0 -mig 1",
        "-i 0 --query-gpu=mig.mode.current --format=csv,noheader",
        "mig -i 0 -lgi",
        "mig -i 0 -dci",
        "mig -i 0 -dgi",
        "mig -i 0 -cgi 3g.40gb,3g.40gb -C",
        "-i 1 --query-gpu=mig.mode.current --format=csv,noheader",
        "-i 1 -mig 1",
        "-i 1 --query-gpu=mig.mode.current --format=csv,noheader",
        "mig -i 1 -lgi",
        "mig -i 1 -dci",
        "mig -i 1 -dgi",
        "mig -i 1 -cgi 3g.40gb,3g.40gb -C",
        "-L",
    ]
    # The worker side reads the listing the script ends with: one instance per worker, GPU 0 first.
    assert parse_mig_uuids(result.stdout, "3g.40gb") == [
        "MIG-fake-0-0", "MIG-fake-0-1", "MIG-fake-1-0", "MIG-fake-1-1",
    ]

    Path(fake_gpu["FAKE_STATE"], "calls").unlink()
    again = run_script(MIG_SCRIPT_3G40, tmp_path, fake_gpu)
    assert again.returncode == 0, again.stderr
    assert calls(fake_gpu) == [
        "--query-gpu=index --format=csv,noheader",
        "-i 0 --query-gpu=mig.mode.current --format=csv,noheader",
        "mig -i 0 -lgi",
        "-i 1 --query-gpu=mig.mode.current --format=csv,noheader",
        "mig -i 1 -lgi",
        "-L",
    ]


def test_mig_script_resets_a_gpu_left_pending(tmp_path: Path, fake_gpu: dict[str, str]) -> None:
    result = run_script(MIG_SCRIPT_3G40, tmp_path, {**fake_gpu, "FAKE_GPUS": "1", "FAKE_PENDING": "1"})
    assert result.returncode == 0, result.stderr
    assert "-i 0 -r" in calls(fake_gpu)
    Path(fake_gpu["FAKE_STATE"], "mode.0").unlink()
    stuck_env = {**fake_gpu, "FAKE_GPUS": "1", "FAKE_PENDING": "1", "FAKE_STUCK": "1"}
    stuck = run_script(MIG_SCRIPT_3G40, tmp_path, stuck_env)
    assert stuck.returncode == 1
    assert stuck.stderr.strip() == (
        "skyward mig: MIG mode on GPU 0 is pending a GPU reset or a reboot (current mode: Disabled)"
    )


def test_mig_script_fails_clearly_without_mig(tmp_path: Path, fake_gpu: dict[str, str]) -> None:
    result = run_script(MIG_SCRIPT_3G40, tmp_path, {**fake_gpu, "FAKE_NO_MIG": "1"})
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        "skyward mig: could not enable MIG mode on GPU 0 (needs root and a MIG-capable GPU)"
    )


def test_mig_script_without_nvidia_smi(tmp_path: Path) -> None:
    result = run_script(MIG_SCRIPT_3G40, tmp_path, {})
    assert result.returncode == 1
    assert result.stderr == (
        "skyward mig: nvidia-smi not found; MIG needs an A100, A30, H100, H200 or B200 GPU\n"
    )


FAKE_MPS_CONTROL = r"""
s="$FAKE_STATE"
if [ "$1" = "-d" ]; then
  threads="${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE:-}"; mem="${CUDA_MPS_PINNED_DEVICE_MEM_LIMIT:-}"
  pipe="$CUDA_MPS_PIPE_DIRECTORY"; log="$CUDA_MPS_LOG_DIRECTORY"
  echo "start pipe=$pipe log=$log threads=$threads mem=$mem" >> "$s/calls"
  echo "$FAKE_LIVE_PID" > "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
  exit 0
fi
read -r command
echo "command $command" >> "$s/calls"
"""


def test_mps_script_starts_the_daemon_once_and_sets_defaults(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    fake_tool(tmp_path / "bin", "nvidia-cuda-mps-control", FAKE_MPS_CONTROL)
    pipe, log = tmp_path / "pipe", tmp_path / "log"
    script = mps_daemon_script(
        active_thread_percentage=25, pinned_limits={0: "8G", 1: "4G"},
        pipe_directory=str(pipe), log_directory=str(log),
    )
    env = {"FAKE_STATE": str(state), "FAKE_LIVE_PID": str(os.getpid())}
    result = run_script(script, tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert pipe.is_dir() and log.is_dir()
    assert (state / "calls").read_text().splitlines() == [
        f"start pipe={pipe} log={log} threads=25 mem=0=8G,1=4G",
        "command set_default_active_thread_percentage 25",
        "command set_default_device_pinned_mem_limit 0 8G",
        "command set_default_device_pinned_mem_limit 1 4G",
    ]
    (state / "calls").unlink()
    again = run_script(script, tmp_path, env)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "skyward mps: the MPS control daemon is already running\n"
    assert (state / "calls").read_text().splitlines()[0] == "command set_default_active_thread_percentage 25"


def test_mps_script_without_the_control_program(tmp_path: Path) -> None:
    result = run_script(MPS_SCRIPT_DEFAULT, tmp_path, {})
    assert result.returncode == 1
    assert result.stderr == (
        "skyward mps: nvidia-cuda-mps-control not found; MPS needs an NVIDIA GPU driver\n"
    )


FAKE_HF = r"""
printf '%s %s env=%s\n' "$(basename "$0")" "$*" "${HF_TOKEN:+set}" >> "$FAKE_STATE/calls"
"""


def test_huggingface_script_writes_the_token_file_with_no_command_holding_the_token(tmp_path: Path) -> None:
    # The Hub's CLIs would take it as an argument (`--token`), in every user's `ps`: none may run.
    state = tmp_path / "state"
    state.mkdir()
    fake_tool(tmp_path / "bin", "hf", FAKE_HF)
    fake_tool(tmp_path / "bin", "huggingface-cli", FAKE_HF)
    stored = tmp_path / "node" / "huggingface-token"
    stored.parent.mkdir()
    env = {"FAKE_STATE": str(state), "HF_TOKEN": TOKEN, "HF_TOKEN_PATH": str(stored)}
    result = run_script(LOGIN_SCRIPT, tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert not (state / "calls").exists()
    assert stored.read_text() == TOKEN
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600


def test_huggingface_script_fails_clearly(tmp_path: Path) -> None:
    missing = run_script(LOGIN_SCRIPT, tmp_path, {})
    assert missing.returncode == 1
    assert missing.stderr == (
        "skyward huggingface: HF_TOKEN or HF_TOKEN_PATH is not set in the bootstrap environment\n"
    )
    assert TOKEN not in missing.stdout + missing.stderr


# -- on a real GPU -------------------------------------------------------------------------------------


@pytest.mark.gpu
@needs_gpu
def test_gpu_nvidia_smi_listing_parses() -> None:
    listing = mig_module._nvidia_smi_list()
    assert any(line.startswith("GPU ") for line in listing.splitlines())
    uuids = parse_mig_uuids(listing)
    assert all(uuid.startswith("MIG-") for uuid in uuids)
    assert len(uuids) == sum(1 for line in listing.splitlines() if line.strip().startswith("MIG "))


@pytest.mark.gpu
@needs_gpu
def test_gpu_queries_of_the_mig_script_work_on_this_driver() -> None:
    indexes = subprocess.run(
        ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
        capture_output=True, text=True, timeout=60,
    )
    assert indexes.returncode == 0, indexes.stderr
    first = indexes.stdout.split()[0]
    mode = subprocess.run(
        ["nvidia-smi", "-i", first, "--query-gpu=mig.mode.current", "--format=csv,noheader"],
        capture_output=True, text=True, timeout=60,
    )
    assert mode.returncode == 0, mode.stderr
    assert mode.stdout.replace(" ", "").strip() in {"Enabled", "Disabled", "[N/A]"}


@pytest.mark.gpu
@needs_gpu
def test_gpu_mig_device_on_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Non-destructive: uses the MIG instances that exist; on a GPU without them, says so."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    listing = mig_module._nvidia_smi_list()
    profiles = [line.split()[1] for line in listing.splitlines() if line.strip().startswith("MIG ")]
    if profiles and profiles[0] in MIG_PROFILES:
        with mig_module.MigDevice(profiles[0])(info()):
            assert os.environ["CUDA_VISIBLE_DEVICES"] == parse_mig_uuids(listing, profiles[0])[0]
    else:
        with pytest.raises(PluginError, match="found no 3g.40gb MIG instance"), \
                mig_module.MigDevice("3g.40gb")(info()):
            pass


@pytest.mark.gpu
@needs_gpu
def test_gpu_mps_daemon_starts_takes_settings_and_stops(tmp_path: Path) -> None:
    pipe, log = tmp_path / "pipe", tmp_path / "log"
    script = mps_daemon_script(
        active_thread_percentage=50, pinned_limits={0: "1G"}, pipe_directory=str(pipe), log_directory=str(log)
    )
    file = tmp_path / "mps.sh"
    file.write_text(script)
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": str(pipe), "CUDA_MPS_LOG_DIRECTORY": str(log)}
    try:
        result = subprocess.run([BASH, str(file)], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        servers = subprocess.run(
            ["nvidia-cuda-mps-control"], input="get_server_list\n", capture_output=True, text=True, env=env,
            timeout=60,
        )
        assert servers.returncode == 0, servers.stderr
        again = subprocess.run([BASH, str(file)], capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stdout + again.stderr
        if (pipe / "nvidia-cuda-mps-control.pid").exists():
            assert "already running" in again.stdout
    finally:
        subprocess.run(
            ["nvidia-cuda-mps-control"], input="quit\n", capture_output=True, text=True, env=env, timeout=60
        )
