"""The client's end of a node guardian's lease (`skyward.guardian`), over the pool's SSH connection.

`guard(conn, folder, ...)` uploads the guardian into the node folder and starts it there (a no-op
when one already guards the folder), then opens a `LeaseRenewal`: one more session channel on the
same connection, running the guardian's `renew`, with one byte written every
`renew_interval(ttl)` seconds from the pool's event loop. No port is opened, and nothing a task
does on the worker can hold a renewal up: the renewer is a process of its own. When the
connection ends (the client was killed, the network dropped), the renewer sees EOF.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import asyncssh
import structlog

from skyward import guardian
from skyward.transport.ssh_connect import Connection

#: How long starting the guardian may take (it forks and answers at once).
START_TIMEOUT = 30.0
#: How much longer a start may take that found a guardian in the folder: one ending its lease
#: answers once it has ended (its grace, the pool's exit scripts and the machine's end command).
ENDING_TIMEOUT = 300.0
#: The first pause before a dead renew channel is opened again (doubling while it fails).
REOPEN_PAUSE = 0.5


class LeaseRenewal:
    """One renew channel: a byte every `interval` seconds until `close()` or the connection ends.

    A channel that dies while its connection lives (the node's renewer process killed, the server
    closing the session) is opened again, after a pause that doubles up to `interval`: a lease
    left unrenewed on a live pool would have its guardian end the pool's worker, or its machine.
    """

    def __init__(self, conn: Connection, command: str, interval: float) -> None:
        self.conn = conn
        self._command = command
        self._interval = interval
        self._chan: Any = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        #: How many times a dead channel was opened again (for the logs and the tests).
        self.reopened = 0

    async def open(self) -> LeaseRenewal:
        await self._open_channel()
        self._task = asyncio.get_running_loop().create_task(self._renew())
        return self

    async def _open_channel(self) -> None:
        session = asyncssh.SSHClientSession
        self._chan, _ = await self.conn.create_session(session, self._command, encoding=None)

    @property
    def open_now(self) -> bool:
        return self._task is not None and not self._task.done() and not self.conn.is_closed()

    async def _renew(self) -> None:
        pause = REOPEN_PAUSE
        while True:
            with contextlib.suppress(OSError, asyncssh.Error):
                while not self._chan.is_closing():
                    self._chan.write(b".")
                    await asyncio.sleep(self._interval)
            if self._closed or self.conn.is_closed():
                return
            structlog.get_logger().warning("skyward.guardian_renewer_lost", reopen_in=pause)
            await asyncio.sleep(pause)
            if self._closed or self.conn.is_closed():
                return
            try:
                await self._open_channel()
            except (OSError, asyncssh.Error) as exc:
                structlog.get_logger().warning("skyward.guardian_renewer_reopen_failed", error=str(exc))
                pause = min(pause * 2, max(self._interval, REOPEN_PAUSE))
            else:
                self.reopened += 1
                pause = REOPEN_PAUSE

    def close(self) -> None:
        """Stop renewing and close the channel (the guardian then counts down its ttl)."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
        if self._chan is not None:
            self._chan.close()


async def guard(
    conn: Connection,
    folder: str,
    *,
    ttl: float,
    initial: float,
    end_command: str | None,
    pythons: tuple[str, ...],
    sent: asyncio.Future[None] | None = None,
) -> LeaseRenewal | None:
    """Start the guardian of `folder` (unless one runs) and open a renewal of its lease on `conn`.

    None when the machine has no Python to run it yet (the bootstrap installs one: call again).
    `sent`, when given, is resolved as soon as the node's shell holds the guardian's source and
    has found no guardian in the folder (what comes after is the guardian's own start, a Python
    start on the node): a bootstrap may run from then on, since the guardian comes up even if this
    client is gone by then, and it finds the bootstrap through its pid file. Where a guardian was
    found (a client back on its pool's node: a restarted server, a lingering machine), `sent` waits
    for the answer: that guardian may be ending its lease, which would end a bootstrap started
    meanwhile, and the start answers once it has ended (`skyward.guardian.agent._outlast_ending`).
    """
    line = guardian.start_command(
        folder, ttl=ttl, initial=initial, end_command=end_command, pythons=pythons, say_if_held=True
    )

    async def start() -> tuple[int | None, str, str]:
        async with asyncio.timeout(START_TIMEOUT) as window:
            process = await conn.create_process(line)
            process.stdin.write(guardian.source().decode())
            process.stdin.write_eof()
            if (await process.stdout.readline()).strip() == guardian.HELD:
                # That guardian may be ending its lease: then nothing may start in the folder
                # before the answer, which comes once it has ended.
                window.reschedule(asyncio.get_running_loop().time() + START_TIMEOUT + ENDING_TIMEOUT)
            elif sent is not None and not sent.done():
                sent.set_result(None)
            out, err = await process.communicate()
        if sent is not None and not sent.done():
            sent.set_result(None)
        return process.exit_status, str(out or ""), str(err or "")

    _, stdout, stderr = await start()
    answer = stdout.strip()
    log = structlog.get_logger()
    if answer == guardian.NO_PYTHON or not answer.startswith(("started", "running")):
        log.info("skyward.guardian_not_started", folder=folder, answer=answer, error=stderr)
        return None
    log.info("skyward.guardian", folder=folder, state=answer, ttl=ttl, ends_machine=bool(end_command))
    command = guardian.renew_command(folder, pythons)
    return await LeaseRenewal(conn, command, guardian.renew_interval(ttl)).open()
