"""`sky.Slurm(...)` as a value: what each setting asks of `sbatch`, and what a cluster refuses."""

from __future__ import annotations

import pytest
from slurm_cluster import SlurmCluster

import skyward as sky
from skyward.errors import ConfigurationError


def test_the_spec_maps_onto_sbatch_options() -> None:
    slurm = sky.Slurm(
        partition="gpu",
        account="lab",
        qos="high",
        time_limit=90,
        constraint="ib",
        sbatch_args=["--exclusive"],
        gres_types={"A100": "a100"},
    )
    spec = sky.Spec(provider=slurm, nodes=2, accelerator="A100:4", vcpus=16, memory_gb=64)
    assert slurm.sbatch_options(spec, 2) == [
        "--nodes=2",
        "--ntasks-per-node=1",
        "--partition=gpu",
        "--account=lab",
        "--qos=high",
        "--time=90",
        "--constraint=ib",
        "--gres=gpu:a100:4",
        "--cpus-per-task=16",
        "--mem=65536M",
        "--exclusive",
    ]


def test_an_accelerator_without_a_gres_type_asks_for_any_gpu() -> None:
    assert sky.Slurm().gres(sky.Spec(provider=sky.Slurm(), accelerator="H100:2")) == "gpu:2"


@pytest.mark.parametrize("bad", [0, "two hours", True])
def test_a_time_limit_slurm_cannot_read_is_refused(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="2:00:00"):
        sky.Slurm(time_limit=bad)


def test_sbatch_args_as_one_string_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="list of arguments"):
        sky.Slurm(sbatch_args="--exclusive")


def test_apt_is_refused_with_the_reason(slurm: SlurmCluster) -> None:
    pool = sky.Compute(
        provider=sky.Slurm(partition=slurm.partition),
        image=sky.Image(apt=["ffmpeg"]),
        console=False,
        logging=False,
    )
    with pytest.raises(ConfigurationError, match="no root"), pool:
        pass
    assert slurm.jobs() == []


def test_a_machine_with_slurm_tools_but_no_cluster_is_skipped_by_sky_ls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from skyward_slurm import config
    from skyward_slurm.sweep import SlurmSweeper

    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.setattr(config, "CONF_FILES", ())
    status = SlurmSweeper().credentials()
    assert not status.found
    assert "$SLURM_CONF" in status.where


def test_slurm_conf_names_the_cluster_sky_ls_reaches(slurm: SlurmCluster) -> None:
    from skyward_slurm.sweep import SlurmSweeper

    status = SlurmSweeper().credentials()
    assert status.found
    assert slurm.conf in status.where
