"""What the fake cloud APIs of the provider tests share (tests/runpod, tests/novita, tests/verda).

Each fake is an aiohttp app served on 127.0.0.1 from a thread of its own, whose machines boot for
real: an sshd (`ssh_hosts.start_machine`) with the keys the provider sent, and the start script's
lines a real machine runs before anyone logs in (its credentials line, its boot guardian line).
The API each one speaks is its own; how it serves, boots, powers off and checks for leaks is here,
once. Importing this module needs tests/ssh on `sys.path` (each provider's conftest puts it there).
"""

from __future__ import annotations

import asyncio
import base64
import os
import shlex
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import attrs
from aiohttp import web
from ssh_hosts import SSHServer, start_machine, workers_of

#: How the start script's line that starts the node's guardian at boot begins (`BootGuardian.command`).
GUARDIAN_MARK = "if command -v python3"
#: How the start script's line that keeps the machine's own credentials begins.
CREDENTIALS_MARK = "(umask 077;"

F = TypeVar("F", bound="FakeCloud")


class Invalid(Exception):
    """A request the cloud would refuse with 400 (the message says why)."""


def expect(condition: bool, message: str) -> None:
    """Refuse the request being checked (`Invalid`) with `message` unless `condition` holds."""
    if not condition:
        raise Invalid(message)


def expect_fields(body: Any, fields: set[str]) -> None:
    """The body is a JSON object with no field but the documented `fields`, as the API checks it."""
    expect(isinstance(body, dict), "the body must be a JSON object")
    unknown = set(body) - fields
    expect(not unknown, f"unknown fields: {sorted(unknown)}")


@attrs.define
class FakeCloud:
    """A fake cloud API on loopback; a subclass answers its provider's calls (`app`) and boots
    machines with `boot_machine`. Every field but `folder` is keyword-only, so a subclass's own
    required fields (its credentials) follow `folder` in its constructor."""

    #: Where the machines' homes, keys and sshd configs go, one folder per machine id.
    folder: Path
    port: int = attrs.field(default=0, kw_only=True)
    #: The sshd of each machine still up, by machine id.
    machines: dict[str, SSHServer] = attrs.field(factory=dict, kw_only=True)
    #: Every machine's sshd ever started, gone or not (their homes outlive them, for leak checks).
    booted: list[SSHServer] = attrs.field(factory=list, kw_only=True)
    #: What each machine's boot guardian line answered ("started <pid>"), by machine id.
    boot_guardians: dict[str, str] = attrs.field(factory=dict, kw_only=True)
    #: Machines whose sshd never comes up: their clients never log in (the machine still boots).
    sshd_down: bool = attrs.field(default=False, kw_only=True)
    _loop: asyncio.AbstractEventLoop | None = attrs.field(default=None, init=False)
    _thread: threading.Thread | None = attrs.field(default=None, init=False)
    _runner: web.AppRunner | None = attrs.field(default=None, init=False)

    #: The cloud's name, in the server thread's name and in its errors.
    NAME: ClassVar[str] = "cloud"

    def app(self) -> web.Application:
        """The provider's API: its routes and its authentication (built on the server's loop)."""
        raise NotImplementedError

    def check_nothing_left(self) -> None:
        """Fail if a test left anything behind; a subclass checks its own resources, then this."""
        assert not any(workers_of(server.home) for server in self.booted), "workers left running"

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self: F) -> F:
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        async def serve() -> None:
            self._runner = web.AppRunner(self.app(), access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            self.port = self._runner.addresses[0][1]
            ready.set()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(serve())  # type: ignore[union-attr]
            self._loop.run_forever()  # type: ignore[union-attr]

        self._thread = threading.Thread(target=run, name=f"fake-{self.NAME.lower()}", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError(f"the fake {self.NAME} API did not start")
        return self

    def stop(self) -> None:
        for server in self.machines.values():
            server.stop()
        self.machines.clear()
        if self._loop is not None and self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            assert self._thread is not None
            self._thread.join(10)
            self._loop.close()
        self._loop = None

    # -- machines ----------------------------------------------------------------------------------

    def boot_machine(
        self, machine_id: str, address: str, port: int, host_key: str, login_key: str,
        env: dict[str, str] | None = None,
    ) -> SSHServer:
        """Start the machine's sshd (unless `sshd_down`) with the host key it was given and the
        login key it lets in (`env` added to its logins' environment), and keep it as up and as
        booted."""
        server = start_machine(
            self.folder / machine_id, address, port, host_key, login_key, start=not self.sshd_down, env=env
        )
        self.machines[machine_id] = server
        self.booted.append(server)
        return server

    async def power_off(self, machine_id: str) -> None:
        """Stop the machine's sshd, if it is still up (a deleted machine's, from a handler)."""
        server = self.machines.pop(machine_id, None)
        if server is not None:
            await asyncio.to_thread(server.stop)

    def run_boot_lines(
        self, machine_id: str, server: SSHServer, script: str, env: dict[str, str], *,
        credentials: bool = True,
    ) -> None:
        """Run the start script's guardian line (and with `credentials`, its credentials line) as
        the machine would at boot, with `env` and the login's home; keep what the guardian said."""
        run_env = {**env, "HOME": str(server.home), "PATH": os.environ["PATH"]}
        for line in script.splitlines():
            if (credentials and line.startswith(CREDENTIALS_MARK)) or GUARDIAN_MARK in line:
                result = subprocess.run(
                    ["bash", "-c", line], capture_output=True, text=True, timeout=30, check=False, env=run_env
                )
                if GUARDIAN_MARK in line:
                    self.boot_guardians[machine_id] = result.stdout.strip() + result.stderr.strip()


def exported_host_key(script: str) -> str | None:
    """The private host key a start script exports (`export SKYWARD_SSH_HOST_KEY=<base64>`), as
    the machine would install it; None when it exports none."""
    for line in script.splitlines():
        if line.startswith("export SKYWARD_SSH_HOST_KEY="):
            (assignment,) = shlex.split(line.removeprefix("export "))
            return base64.b64decode(assignment.split("=", 1)[1]).decode()
    return None


@contextmanager
def serving(fake: F) -> Iterator[F]:
    """The fake, started; stopped when done, after failing if the test left anything behind."""
    fake.start()
    try:
        yield fake
        fake.check_nothing_left()
    finally:
        fake.stop()
