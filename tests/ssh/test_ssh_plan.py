"""`sky.plan(...)` against what a pool really runs on an SSH host: the same commands, in the same
order, and the same line starting the worker."""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any

from ssh_hosts import SSHHosts, ssh_pool, ssh_provider

import skyward as sky
from skyward.client.planning import PLAN_WORKDIR
from skyward.extension.plugin import LaunchCommand


def _launcher(command: LaunchCommand, context: Any) -> LaunchCommand:
    return LaunchCommand(
        launcher="env SKYWARD_PLAN_LAUNCHER=yes", entrypoint=command.entrypoint, args=command.args
    )


PLUGIN = sky.plugins.Plugin.create("planned").with_launcher(_launcher).with_bootstrap(
    lambda cluster: ["echo planned-op-ran"]
)


@sky.function
def started_as() -> dict[str, Any]:
    """How this worker was started: its command line, its folder, and what the launcher set."""
    with open("/proc/self/cmdline", "rb") as f:
        argv = [part.decode() for part in f.read().split(b"\0") if part]
    return {"argv": argv, "cwd": os.getcwd(), "launcher": os.environ.get("SKYWARD_PLAN_LAUNCHER")}


def _planned_commands(script: str) -> list[str]:
    """The `::skyward-command:` texts the script announces, with `$W` as the plan's workdir."""
    commands = []
    for line in script.splitlines():
        line = line.strip()
        if line.startswith("__sky_cmd "):
            commands.append(shlex.split(line)[1].replace("$W", PLAN_WORKDIR))
    return commands


def _is_subsequence(items: list[str], within: list[str]) -> bool:
    rest = iter(within)
    return all(any(item == candidate for candidate in rest) for item in items)


def test_the_plan_shows_the_commands_and_the_launch_line_a_pool_runs(ssh_hosts: SSHHosts) -> None:
    provider = ssh_provider(ssh_hosts, servers=[0])  # SSH(python=sys.executable): the host's own
    planned = sky.plan(provider=provider, plugins=[PLUGIN])
    commands: list[str] = []
    compute = ssh_pool(ssh_hosts, provider=provider, plugins=[PLUGIN])
    compute.on(sky.BootstrapCommand, lambda event: commands.append(event.command))
    said: list[str] = []
    compute.on(sky.BootstrapConsole, lambda event: said.append(event.line))
    with compute:
        worker = started_as() >> compute
    ran = [command.replace(worker["cwd"], PLAN_WORKDIR) for command in commands]
    # Every command the host ran is in the plan, in order (the plan also has the branches not
    # taken there, such as installing uv on a host without it).
    assert ran and _is_subsequence(ran, _planned_commands(planned.script)), (ran, planned.script)
    # the venv is made on a cold host; a warm one (an earlier test's pool) reuses its environment
    venv = f"uv venv --system-site-packages --python {sys.executable} {PLAN_WORKDIR}/venv"
    assert venv in _planned_commands(planned.script)
    assert venv in ran or any("reusing the environment" in line for line in said), (ran, said)
    # The worker was started by the line the plan shows, launcher included, in its node folder.
    assert worker["launcher"] == "yes"
    assert planned.launch == (
        f". {PLAN_WORKDIR}/env.sh && exec env SKYWARD_PLAN_LAUNCHER=yes {shlex.join(worker['argv'])}"
    )
    assert planned.launch in str(planned)
