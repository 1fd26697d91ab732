"""`sky.Local()`: `instance_info()` reports this machine's CPUs and memory, not zeros."""

from __future__ import annotations

import os

import pytest

import skyward as sky

pytestmark = pytest.mark.timeout(60)


def _expected_vcpus() -> int:
    getaffinity = getattr(os, "sched_getaffinity", None)
    return len(getaffinity(0)) if getaffinity is not None else os.cpu_count() or 0


def _meminfo_gb() -> float:
    with open("/proc/meminfo") as f:
        kib = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
    return kib / 1024 / 1024


@sky.function
def resources() -> tuple[int, float, str]:
    info = sky.instance_info()
    return info.vcpus, info.memory_gb, info.instance_type


def test_machine_resources_are_this_machines_cpus_and_memory() -> None:
    from skyward.providers.local import machine_resources

    vcpus, memory_gb = machine_resources()
    assert vcpus == _expected_vcpus() >= 1
    if os.path.exists("/proc/meminfo"):
        assert memory_gb == pytest.approx(_meminfo_gb(), abs=0.1)
    assert memory_gb > 0


def test_instance_info_on_local_reports_the_machine(pool: sky.Pool) -> None:
    seen = resources() @ pool
    assert len(seen) == 2
    for vcpus, memory_gb, instance_type in seen:
        assert vcpus == _expected_vcpus() >= 1
        assert memory_gb > 0
        if os.path.exists("/proc/meminfo"):
            assert memory_gb == pytest.approx(_meminfo_gb(), abs=0.1)
        assert instance_type == "process"
