"""The start command Novita runs: it joins the script's chunks from the envs, decodes and runs it,
and everything fits Novita's limits (a command of 2047 characters, env values of 2048)."""

from __future__ import annotations

import subprocess

import asyncssh

from skyward.guardian.boot import BootGuardian, packed
from skyward.providers.cloud import MachineAccess
from skyward_novita.machine import chunks, environment, start_command, start_script


def _access() -> MachineAccess:
    login = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    return MachineAccess.create(login)


def test_the_command_runs_a_script_longer_than_one_env_value() -> None:
    script = "\n".join(f"echo line{i}" for i in range(400))  # ~4.8 kB: three chunks
    env = environment(_access(), "key", "pool-x", script, "")
    assert sum(name.startswith("SKYWARD_BOOT_") for name in env) > 1
    command = ["sh", "-c", start_command(env)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == [f"line{i}" for i in range(400)]


def test_the_real_start_script_fits_novitas_limits() -> None:
    access = _access()
    source = packed()
    guardian = BootGuardian("pool-abcdef12", 3, 600.0, 900.0, "curl -fsS https://example.invalid/x")
    script = start_script(access, guardian, len(chunks("SKYWARD_GUARDIAN", source)))
    env = environment(access, "sk_key", "pool-abcdef12", script, source)
    assert len(start_command(env)) <= 2047
    assert all(len(value) <= 2048 for value in env.values()) and len(env) <= 100
