"""What the node's sampler reads: host figures (psutil), GPU figures (NVML, else `nvidia-smi`),
and the user's own commands (`sky.metrics.Custom`).

Each reader is cheap per call: psutil reads a `/proc` file, NVML asks the driver. `nvidia-smi` is
not cheap to start (tens of milliseconds of CPU), so the fallback starts it once, in its loop mode,
and keeps the last line it printed for each GPU. A node with neither has no GPU reader, and its GPU
collectors are skipped: no metrics, no errors.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import threading
import time
from typing import Any

#: A GPU reading for the node: utilisation % (mean), memory used and total in MB (sums), hottest °C.
GpuReading = dict[str, float]

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class HostProbe:
    """CPU, memory, disk and network figures of this machine, through psutil."""

    def __init__(self) -> None:
        import psutil

        self.psutil = psutil
        psutil.cpu_percent(interval=None)  # the first call only starts the count
        self._net: dict[str, tuple[float, int]] = {}

    def read(self, probe: str, arg: str) -> float | None:
        ps = self.psutil
        if probe == "cpu":
            return float(ps.cpu_percent(interval=None))
        if probe in ("memory", "memory_used", "memory_total"):
            vm = ps.virtual_memory()
            if probe == "memory":
                return float(vm.percent)
            used = vm.total - vm.available if probe == "memory_used" else vm.total
            return round(used / 1e9, 3)
        if probe == "disk":
            return float(ps.disk_usage(arg).percent)
        if probe in ("network_rx", "network_tx"):
            return self._rate(probe)
        return None

    def _rate(self, probe: str) -> float | None:
        """Bytes per second since this probe's last reading (None on the first: no interval yet)."""
        counters = self.psutil.net_io_counters(pernic=True)
        field = "bytes_recv" if probe == "network_rx" else "bytes_sent"
        total = sum(getattr(c, field) for name, c in counters.items() if name != "lo")
        now = time.monotonic()
        last = self._net.get(probe)
        self._net[probe] = (now, total)
        if last is None or now <= last[0]:
            return None
        return max(0.0, (total - last[1]) / (now - last[0]))


class NvmlReader:
    """The node's GPUs through NVML (the `pynvml` module of nvidia-ml-py)."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        nvml.nvmlInit()
        count = nvml.nvmlDeviceGetCount()
        self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        if not self.handles:
            raise RuntimeError("NVML sees no GPU")

    def read(self) -> GpuReading:
        nvml = self.nvml
        utils, used, total, temps = [], 0.0, 0.0, []
        for handle in self.handles:
            utils.append(float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            used += memory.used / 2**20
            total += memory.total / 2**20
            temps.append(float(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)))
        return _reading(utils, used, total, temps)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.nvml.nvmlShutdown()


class SmiReader:
    """The node's GPUs through one `nvidia-smi` left running in its loop mode (`-lms`)."""

    QUERY = "index,utilization.gpu,memory.used,memory.total,temperature.gpu"

    def __init__(self, binary: str, interval: float) -> None:
        period = max(int(interval * 1000), 100)
        self.proc = subprocess.Popen(
            [binary, f"--query-gpu={self.QUERY}", "--format=csv,noheader,nounits", f"-lms={period}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        self.latest: dict[str, list[float]] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._follow, name="skyward-nvidia-smi", daemon=True).start()

    def _follow(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            fields = [f.strip() for f in line.split(",")]
            if len(fields) != 5:
                continue
            try:
                values = [float(f) for f in fields[1:]]
            except ValueError:  # "[N/A]" on GPUs that do not report a figure
                continue
            with self._lock:
                self.latest[fields[0]] = values

    def read(self) -> GpuReading | None:
        with self._lock:
            rows = list(self.latest.values())
        if not rows:
            return None
        utils, used, total, temps = zip(*rows, strict=True)
        return _reading(list(utils), sum(used), sum(total), list(temps))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()


def _reading(utils: list[float], used: float, total: float, temps: list[float]) -> GpuReading:
    return {
        "gpu_utilization": sum(utils) / len(utils),
        "gpu_memory": round(used, 1),
        "gpu_memory_total": round(total, 1),
        "gpu_temp": max(temps),
    }


def gpu_reader(interval: float) -> NvmlReader | SmiReader | None:
    """NVML when the driver answers, else `nvidia-smi` when it is on PATH, else None (no GPU)."""
    try:
        import pynvml

        return NvmlReader(pynvml)
    except Exception:  # noqa: BLE001 - no module, no driver, no GPU: try the next way
        pass
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return None
    try:
        return SmiReader(binary, interval)
    except OSError:
        return None


def run_custom(command: str, timeout: float) -> float:
    """The last number `command` prints on stdout; raises with its reason when there is none."""
    done = subprocess.run(
        command, shell=True, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"exited with status {done.returncode}: {tail[0][:200]}")
    numbers = _NUMBER.findall(done.stdout)
    if not numbers:
        raise RuntimeError(f"printed no number: {done.stdout.strip()[:200]!r}")
    return float(numbers[-1])

