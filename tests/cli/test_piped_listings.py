"""Listings read through a pipe (`sky ls | grep NAME`, `sky offers > file`): whole values, one
record per line, whatever `$COLUMNS` says; the rich table stays on a terminal.

`sky` runs as a subprocess whose stdout is a pipe (subprocess.run capture_output), with
`COLUMNS=40`, narrower than any of the records, against the fake RunPod API (`sky ls`: pods named
as Skyward names them) and the fake Vast.ai server (`sky offers`), with long names and ids.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import Sky
from offers_support import RUNPOD_KEY, VAST_KEY, start_runpod
from vast_server import FakeVast, offer

#: A pool label of 60 characters and pod ids of 40: longer than a 40-column table could hold.
POOL = "acc-live-sweep-of-learning-rates-for-the-bert-large-run-0042"
POD_IDS = ("pod-7f3a9c2e1b4d8f6a0c5e9b2d7a1f4c8e3b6d", "pod-0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f")
#: Vast.ai cards whose instance types ("1x " + name) are longer than the terminal is wide.
LONG_GPUS = ("RTX PRO 6000 Blackwell Max-Q Workstation Edition 96GB",
             "RTX PRO 6000 Blackwell Server Edition Passive Cooling 96GB")


def columns_of(line: str) -> list[str]:
    """A plain table's line split as its docs say: on runs of two spaces or more."""
    return re.split(r"  +", line)


@pytest.fixture
def runpod_sky(sky: Sky, tmp_path: Path) -> Iterator[tuple[Sky, Any]]:
    """`sky` with a RunPod key, pointed at a fake RunPod holding two pods of the pool POOL."""
    api = start_runpod(tmp_path / "runpod")
    for node, pod_id in enumerate(POD_IDS):
        api.pods[pod_id] = {
            "id": pod_id, "name": f"skyward-{POOL}-{node}", "desiredStatus": "RUNNING",
            "env": {"SKYWARD_POOL": POOL}, "interruptible": False, "costPerHr": "0.44",
            "adjustedCostPerHr": 0.44, "gpuCount": 1, "vcpuCount": 8,
            "gpu": {"id": "NVIDIA A40", "count": 1, "displayName": "A40"},
            "machine": {"dataCenterId": "EU-RO-1"}, "lastStartedAt": "2026-11-25T10:00:00Z",
        }
    sky.env.update(RUNPOD_API_KEY=RUNPOD_KEY, RUNPOD_API_URL=api.rest_url)
    yield sky, api
    api.stop()


@pytest.fixture
def vast_sky(sky: Sky, tmp_path: Path) -> Iterator[Sky]:
    """`sky` with a Vast.ai key, pointed at a fake Vast.ai offering two long-named cards."""
    rows = [offer(21 + i, 521 + i, gpu, price=1.5 + i, min_bid=0.75, gpu_ram=98304)
            for i, gpu in enumerate(LONG_GPUS)]
    vast = FakeVast(tmp_path / "vast", VAST_KEY, rows).start()
    sky.env.update(VAST_API_KEY=VAST_KEY, VAST_SERVER_URL=vast.url)
    yield sky
    vast.stop()


def test_ls_on_a_pipe_prints_each_machine_on_one_line_with_its_pool_and_id_whole(
    runpod_sky: tuple[Sky, Any],
) -> None:
    sky, _ = runpod_sky
    done = sky("ls", COLUMNS="40")
    assert done.returncode == 0, done.stderr
    header, *records = done.stdout.splitlines()
    assert columns_of(header)[:4] == ["pool", "node", "where", "id"]
    assert [columns_of(record)[:4] for record in records] == [
        [POOL, "0", "RunPod EU-RO-1", POD_IDS[0]], [POOL, "1", "RunPod EU-RO-1", POD_IDS[1]],
    ]


def test_grep_on_ls_finds_the_pool_by_its_whole_name(runpod_sky: tuple[Sky, Any]) -> None:
    sky, _ = runpod_sky
    command = f"{sys.executable} -m skyward.cli ls | grep {POOL}"
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=60, cwd=sky.root,
                          env={**sky.env, "COLUMNS": "40"})
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == [POOL, POOL]


def test_ls_on_a_pipe_pads_each_column_so_a_value_starts_under_its_header(
    runpod_sky: tuple[Sky, Any],
) -> None:
    sky, _ = runpod_sky
    header, *records = sky("ls", COLUMNS="40").stdout.splitlines()
    starts = [match.start() for match in re.finditer(r"(?:^|(?<=  ))\S", header)]
    assert len(starts) == 10
    for record in records:
        assert [record[start - 2:start] for start in starts[1:]] == ["  "] * 9
        assert all(record[start] != " " for start in starts)


def test_ls_on_a_pipe_says_which_providers_it_skipped_on_stderr_not_between_the_records(
    runpod_sky: tuple[Sky, Any],
) -> None:
    sky, _ = runpod_sky
    done = sky("ls")
    assert len(done.stdout.splitlines()) == 1 + len(POD_IDS)
    assert "AWS: skipped, no credentials found" in done.stderr


def test_ls_json_lists_the_same_machines_with_their_whole_pool_and_id(runpod_sky: tuple[Sky, Any]) -> None:
    sky, _ = runpod_sky
    machines = sky.json("ls", COLUMNS="40")["machines"]
    assert [(m["pool"], m["id"]) for m in machines] == [(POOL, pod_id) for pod_id in POD_IDS]


def test_ls_on_a_terminal_still_draws_the_rich_table(runpod_sky: tuple[Sky, Any]) -> None:
    sky, _ = runpod_sky
    shown = on_terminal(sky, "ls", COLUMNS="250")
    assert "Skyward machines" in shown and "┃ pool" in shown
    assert all(pod_id in shown for pod_id in POD_IDS)  # the id column is never folded


def on_terminal(sky: Sky, *args: str, **env: str) -> str:
    """What `sky ARGS` prints when its stdout is a terminal (a pseudo-terminal read here), its
    colours taken out."""
    main, terminal = pty.openpty()
    command = [sys.executable, "-m", "skyward.cli", *args]
    chunks: list[bytes] = []
    with subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=terminal, stderr=subprocess.DEVNULL,
                          cwd=sky.root, env={**sky.env, **env}) as process:
        os.close(terminal)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 1.0)
            try:
                chunk = os.read(main, 65536) if ready else b""
            except OSError:  # EIO: the command exited and closed the terminal
                break
            if ready and not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=10)
    os.close(main)
    assert process.returncode == 0
    return re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode())  # without the colours


def test_offers_on_a_pipe_print_each_offer_on_one_line_with_its_instance_type_whole(vast_sky: Sky) -> None:
    done = vast_sky("offers", "--provider", "vastai", COLUMNS="40")
    assert done.returncode == 0, done.stderr
    header, *records = done.stdout.splitlines()
    assert columns_of(header)[:2] == ["provider", "instance type"]
    assert [columns_of(record)[:2] for record in records] == [["vastai", f"1x {gpu}"] for gpu in LONG_GPUS]


def test_offers_on_a_pipe_print_as_many_records_as_json_lists_offers(vast_sky: Sky) -> None:
    listed = vast_sky.json("offers", "--provider", "vastai", COLUMNS="40")["offers"]
    piped = vast_sky("offers", "--provider", "vastai", COLUMNS="40").stdout.splitlines()[1:]
    assert [o["instance_type"] for o in listed] == [columns_of(line)[1] for line in piped]


def test_offers_on_a_pipe_give_each_providers_state_on_stderr(vast_sky: Sky) -> None:
    done = vast_sky("offers", "--provider", "vastai")
    assert "vastai: 2 offers, fresh" in done.stderr and "fresh" not in done.stdout


def test_providers_on_a_pipe_keep_each_providers_where_whole_on_its_line(sky: Sky) -> None:
    listing = {row["type"]: row for row in sky.json("providers")["providers"]}
    done = sky("providers", COLUMNS="40")
    assert done.returncode == 0, done.stderr
    vast = next(line for line in done.stdout.splitlines() if line.startswith("VastAI "))
    assert columns_of(vast) == ["VastAI", "vastai", "skyward-vastai", "missing",
                                listing["vastai"]["credentials"]["where"]]


def test_two_tables_on_a_pipe_are_separated_by_one_empty_line(sky: Sky) -> None:
    providers, plugins = sky("providers", COLUMNS="40").stdout.rstrip("\n").split("\n\n")
    assert columns_of(providers.splitlines()[0]) == ["provider", "type", "from", "credentials",
                                                     "where / how to install"]
    assert columns_of(plugins.splitlines()[0]) == ["plugin", "from", "state"]
    assert "" not in plugins.splitlines()


def test_a_missing_package_shows_its_install_command_whole(sky: Sky) -> None:
    done = sky.lacking_a_provider("providers", COLUMNS="40")
    nimbus = next(line for line in done.stdout.splitlines() if line.startswith("Nimbus "))
    assert columns_of(nimbus)[3:] == ["not installed", "pip install skyward-nimbus"]


def test_every_builtin_command_takes_json_but_those_that_stream_output() -> None:
    import click

    from skyward.cli.app import BUILTIN, cli

    def without_json(command: click.Command, path: str) -> list[str]:
        missing = [] if any("--json" in p.opts for p in command.params) else [path]
        if not isinstance(command, click.Group):
            return missing
        own = missing if command.invoke_without_command else []  # `sky offers` lists on its own
        return own + [found for name, sub in command.commands.items()
                      for found in without_json(sub, f"{path} {name}")]

    with click.Context(cli) as ctx:
        commands = {name: cli.get_command(ctx, name) for name in BUILTIN}
    missing = [found for name, command in commands.items() if command
               for found in without_json(command, name)]
    # `logs` and `log` print log lines and JSON lines of their own; `compute run` the script's output.
    assert sorted(missing) == ["compute run", "log", "logs"]
