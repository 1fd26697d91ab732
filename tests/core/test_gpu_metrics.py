"""GPU metrics, with the GPU faked only where the sampler meets it: the `pynvml` module it imports
(a stand-in put first on the workers' path through `Image.includes`) and the `nvidia-smi` on PATH.

Everything between (the sampler process, the worker's relay, the frames, the events) is real.
"""

from __future__ import annotations

import os
import stat
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

from core_support import local_pool, wait_until

import skyward as sky

GPU_METRICS = [
    sky.metrics.GPU(interval=0.2), sky.metrics.GPUMemory(interval=0.2),
    sky.metrics.GPUMemoryTotal(interval=0.2), sky.metrics.GPUTemp(interval=0.2),
]

#: Two GPUs: 30% and 50% busy, 1 and 3 GiB of 8 GiB used each, at 60 and 71 degrees.
FAKE_NVML = '''
class NVMLError(Exception):
    pass

NVML_TEMPERATURE_GPU = 0
_UTIL, _USED, _TEMP = [30, 50], [1024, 3072], [60, 71]

class _Rates:
    def __init__(self, gpu):
        self.gpu, self.memory = gpu, 0

class _Memory:
    def __init__(self, used, total):
        self.used, self.total, self.free = used, total, total - used

def nvmlInit():
    pass

def nvmlShutdown():
    pass

def nvmlDeviceGetCount():
    return 2

def nvmlDeviceGetHandleByIndex(index):
    return index

def nvmlDeviceGetUtilizationRates(handle):
    return _Rates(_UTIL[handle])

def nvmlDeviceGetMemoryInfo(handle):
    return _Memory(_USED[handle] * 2**20, 8192 * 2**20)

def nvmlDeviceGetTemperature(handle, sensor):
    assert sensor == NVML_TEMPERATURE_GPU
    return _TEMP[handle]
'''

#: What a machine without an NVIDIA driver gives: the module is there, the library is not.
NO_DRIVER = '''
class NVMLError(Exception):
    pass

def nvmlInit():
    raise NVMLError("NVML Shared Library Not Found")
'''

#: `nvidia-smi --query-gpu=... -lms=N` in loop mode: a line per GPU every period, until killed.
FAKE_SMI = """\
#!/bin/sh
while true; do
  echo "0, 20, 2048, 16384, 55"
  echo "1, 40, 4096, 16384, 66"
  sleep 0.1
done
"""


def _module(folder: Path, source: str) -> str:
    folder.mkdir()
    path = folder / "pynvml.py"
    path.write_text(textwrap.dedent(source))
    return str(path)


def _gpu_figures(image: sky.Image, expect: int = 4) -> tuple[dict[str, tuple[float, str]], list[Any]]:
    """Run a one-node pool until `expect` metrics have a figure, and five sampling intervals more;
    the last figure of each name, and any errors."""
    events: list[Any] = []
    lock = threading.RLock()

    def record(event: Any) -> None:
        with lock:
            events.append(event)

    def figures() -> dict[str, tuple[float, str]]:
        with lock:
            return {e.name: (e.value, e.unit) for e in events if isinstance(e, sky.Metric)}

    with local_pool(1, image=image, on_event=record):
        wait_until(lambda: len(figures()) >= expect, timeout=10)
        time.sleep(1.0)
    with lock:
        return figures(), [e for e in events if isinstance(e, sky.Error)]


def test_nvml_figures_are_the_nodes_mean_utilisation_summed_memory_and_hottest_gpu(tmp_path: Path) -> None:
    fake = _module(tmp_path / "nvml", FAKE_NVML)
    figures, errors = _gpu_figures(sky.Image(metrics=GPU_METRICS, includes=[fake]))
    assert errors == []
    assert figures == {
        "gpu_utilization": (40.0, "%"),
        "gpu_memory": (4096.0, "MB"),
        "gpu_memory_total": (16384.0, "MB"),
        "gpu_temp": (71.0, "C"),
    }


def test_without_nvml_the_sampler_follows_nvidia_smi(tmp_path: Path) -> None:
    no_driver = _module(tmp_path / "nvml", NO_DRIVER)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    figures, errors = _gpu_figures(sky.Image(metrics=GPU_METRICS, includes=[no_driver], env=env))
    assert errors == []
    assert figures == {
        "gpu_utilization": (30.0, "%"),
        "gpu_memory": (6144.0, "MB"),
        "gpu_memory_total": (32768.0, "MB"),
        "gpu_temp": (66.0, "C"),
    }


def test_a_node_without_a_gpu_sends_no_gpu_figure_and_no_error(tmp_path: Path) -> None:
    no_driver = _module(tmp_path / "nvml", NO_DRIVER)
    metrics = [*GPU_METRICS, sky.metrics.Memory(interval=0.2)]
    env = {"PATH": "/usr/bin:/bin"}  # no nvidia-smi either
    figures, errors = _gpu_figures(sky.Image(metrics=metrics, includes=[no_driver], env=env), expect=1)
    assert errors == []
    assert set(figures) == {"memory"}
