"""`SSHChannel` on its own: a worker over an exec channel, and how it stops (close, kill, a lost
connection), with no pool and no bootstrap (the worker runs from this interpreter)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from ssh_hosts import SSHHosts, SSHServer, cmdline, parent_pid, pid_alive, processes_of, wait_until

from skyward import fastpaths
from skyward.fastpaths.asyncssh_send import without_ignore_padding
from skyward.messages import Hello, TaskMessage, function_key, pickle_function
from skyward.task.instance import InstanceInfo
from skyward.transport.ssh import SSHChannel
from skyward.transport.ssh_commands import SSHRunner, worker_command
from skyward.transport.ssh_connect import ciphers, connect
from skyward.transport.ssh_outbox import CHUNK
from skyward.wire import Frame, FrameDecoder, Kind


def spawn_and_sleep(seconds: float) -> int:
    """A task that starts a child process (same process group) and blocks in C."""
    import subprocess
    import time

    child = subprocess.Popen(["sleep", str(seconds)])
    print(child.pid, flush=True)
    time.sleep(seconds)
    return child.pid


class Harness:
    """One worker on `server` over an SSHChannel, driven frame by frame."""

    def __init__(self, server: SSHServer, hosts: SSHHosts) -> None:
        self.server, self.hosts = server, hosts
        self.frames: asyncio.Queue[Frame] = asyncio.Queue()
        self.closed: asyncio.Future[BaseException | None] | None = None

    async def start(self) -> SSHChannel:
        self.conn = await connect(self.server.address, self.server.port, self.server.user,
                                  key_file=self.hosts.key_file, known_hosts=self.hosts.known_hosts)
        pid_file = f"{self.server.home}/worker.pid"
        launch = f"exec {sys.executable} -m skyward.worker"
        command = worker_command(launch, pid_file=pid_file, cwd=str(self.server.home))
        channel = await SSHChannel(self.conn, command, pid_file=pid_file).open()
        self.closed = asyncio.get_running_loop().create_future()
        channel.on_frame = self.frames.put_nowait
        channel.on_closed = lambda exc: self.closed.done() or self.closed.set_result(exc)
        channel.start()
        hello = Hello(info=InstanceInfo(node=0, total_nodes=1), concurrency=2, executor="thread",
                      reuse_processes=True, env={})
        channel.send(Kind.HELLO, 0, hello)
        ready = await asyncio.wait_for(self.frames.get(), 30)
        assert ready.kind is Kind.READY
        self.channel = channel
        return channel

    def run(self, task_id: int, fn: Any, *args: Any) -> None:
        data = pickle_function(fn, fn.__name__)
        key = function_key(data)
        self.channel.send(Kind.FUNCTION, 0, (key, data))
        self.channel.send(Kind.TASK, task_id, TaskMessage(key, args, {}, fn.__name__).to_wire())

    async def child_pid(self) -> int:
        while True:
            frame = await asyncio.wait_for(self.frames.get(), 30)
            if frame.kind is Kind.LOG:
                return int(frame.payload[1].split()[0])


def test_a_task_round_trips_and_close_stops_the_worker(ssh_hosts: SSHHosts) -> None:
    async def scenario() -> int:
        harness = Harness(ssh_hosts.servers[0], ssh_hosts)
        channel = await harness.start()
        harness.run(7, pow, 2, 10)
        result = await asyncio.wait_for(harness.frames.get(), 30)
        assert (result.kind, result.id, result.payload) == (Kind.RESULT, 7, 1024)
        worker = channel.pid
        assert worker is not None and pid_alive(worker)
        await channel.close(timeout=5)
        assert not harness.closed.done()  # a requested close is not a lost node
        harness.conn.close()
        return worker

    worker = asyncio.run(scenario())
    assert wait_until(lambda: not pid_alive(worker), timeout=5)


def _packet_types_of_an_echo(hosts: SSHHosts, unpadded: bool) -> tuple[list[int], bytes]:
    """The SSH packet types a raw asyncssh connection sends for one write on a `cat` channel, and
    what `cat` echoed; with `without_ignore_padding` applied to the connection if `unpadded`."""
    import asyncssh

    async def scenario() -> tuple[list[int], bytes]:
        server = hosts.servers[0]
        conn = await asyncssh.connect(
            server.address, port=server.port, username=server.user, client_keys=[str(hosts.key_file)],
            known_hosts=str(hosts.known_hosts), encryption_algs=ciphers(), compression_algs=None,
        )
        try:
            process = await conn.create_process("cat", encoding=None)
            sent: list[int] = []
            real = conn.send_packet

            def recorder(pkttype: int, *args: bytes, handler: Any = None) -> None:
                sent.append(pkttype)
                real(pkttype, *args, handler=handler)

            conn.send_packet = recorder  # under the wrapper, which asyncssh's own calls reach first
            if unpadded:
                assert without_ignore_padding(conn)
            process.stdin.write(b"ping")
            echoed = await asyncio.wait_for(process.stdout.readexactly(4), 30)
            return sorted(sent), echoed  # (asyncssh's IGNORE is recorded inside the packet it precedes)
        finally:
            conn.close()

    return asyncio.run(scenario())


def test_a_write_is_one_ssh_packet_without_the_ignore_asyncssh_puts_before_it(
    ssh_hosts: SSHHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under AES-GCM asyncssh's empty SSH_MSG_IGNORE before each packet (a CBC countermeasure)
    only costs a second encryption, socket write and sshd wake-up: Skyward's connections drop it,
    and the channel still carries its bytes."""
    from asyncssh.constants import MSG_CHANNEL_DATA, MSG_IGNORE

    monkeypatch.delenv(fastpaths.SWITCH, raising=False)  # this fast path's own test
    padded, echoed = _packet_types_of_an_echo(ssh_hosts, unpadded=False)
    assert echoed == b"ping" and padded == sorted([MSG_IGNORE, MSG_CHANNEL_DATA])  # what asyncssh does alone
    unpadded, echoed = _packet_types_of_an_echo(ssh_hosts, unpadded=True)
    assert echoed == b"ping" and unpadded == [MSG_CHANNEL_DATA]


def _cipher_and_unpadded(hosts: SSHHosts) -> tuple[str, bool]:
    """The cipher of a connection Skyward opens, and whether it drops asyncssh's IGNORE padding."""

    async def scenario() -> tuple[str, bool]:
        server = hosts.servers[0]
        conn = await connect(server.address, server.port, server.user, key_file=hosts.key_file,
                             known_hosts=hosts.known_hosts)
        try:
            return conn.get_extra_info("send_cipher"), "send_packet" in vars(conn)
        finally:
            conn.close()

    return asyncio.run(scenario())


def test_skywards_connections_send_no_ignore_padding(
    ssh_hosts: SSHHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(fastpaths.SWITCH, raising=False)
    cipher, unpadded = _cipher_and_unpadded(ssh_hosts)
    assert cipher.startswith("aes128-gcm") and unpadded


def test_with_fast_paths_off_skywards_connections_keep_asyncssh_padding(
    ssh_hosts: SSHHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(fastpaths.SWITCH, "off")
    cipher, unpadded = _cipher_and_unpadded(ssh_hosts)
    assert cipher.startswith("aes128-gcm") and not unpadded


def test_frames_sent_in_one_loop_iteration_leave_in_one_write_after_the_first(ssh_hosts: SSHHosts) -> None:
    """asyncssh writes each packet as two socket writes: a burst of frames (a pump placing a
    `map`'s tasks) goes as one packet after the first frame, which leaves at once."""

    async def scenario() -> tuple[list[int], list[Frame]]:
        harness = Harness(ssh_hosts.servers[0], ssh_hosts)
        channel = await harness.start()
        writes: list[int] = []
        real = channel._chan.write
        channel._chan.write = lambda data: (writes.append(len(data)), real(data))[1]
        await asyncio.sleep(0)  # a fresh loop iteration
        for task_id in range(1, 21):  # a FUNCTION and a TASK frame each: 40 sends
            harness.run(task_id, pow, 2, task_id)
        results = [await asyncio.wait_for(harness.frames.get(), 30) for _ in range(20)]
        sent = list(writes)
        await channel.close()
        return sent, results

    writes, results = asyncio.run(scenario())
    answers = sorted((frame.id, frame.kind, frame.payload) for frame in results)
    assert answers == [(i, Kind.RESULT, 2**i) for i in range(1, 21)]
    assert len(writes) == 2


def test_a_frame_sent_off_the_loop_thread_leaves_at_once_after_what_the_iteration_holds(
    ssh_hosts: SSHHosts,
) -> None:
    """A caller's thread sends while the loop waits its turn (`LoopThread.run_here`): nothing
    follows its frame to be joined with it, so it is written at once, unless the loop's iteration
    still holds frames, which it then follows in their write."""

    async def scenario() -> tuple[list[bytes], list[Frame]]:
        harness = Harness(ssh_hosts.servers[0], ssh_hosts)
        channel = await harness.start()
        data = pickle_function(pow, "pow")
        key = function_key(data)
        channel.send(Kind.FUNCTION, 0, (key, data))
        await asyncio.sleep(0.05)  # a fresh loop iteration
        writes: list[bytes] = []
        real = channel._chan.write
        channel._chan.write = lambda chunk: (writes.append(bytes(chunk)), real(chunk))[1]

        def task(task_id: int) -> None:
            channel.send(Kind.TASK, task_id, TaskMessage(key, (2, task_id), {}, "pow").to_wire())

        def from_another_thread(task_id: int) -> None:
            other = threading.Thread(target=task, args=(task_id,))
            other.start()
            other.join()  # the loop thread waits meanwhile, as it does for run_here

        task(1)  # the iteration's first frame: at once
        task(2)  # held to the iteration's end
        from_another_thread(3)  # 2 is held: 3 follows it
        await asyncio.sleep(0.05)  # the iteration ends: 2 and 3 leave together
        from_another_thread(4)  # nothing held: at once
        results = [await asyncio.wait_for(harness.frames.get(), 30) for _ in range(4)]
        sent = list(writes)  # not the SHUTDOWN that close sends
        await channel.close()
        return sent, results

    writes, results = asyncio.run(scenario())
    assert sorted((frame.id, frame.payload) for frame in results) == [(i, 2**i) for i in range(1, 5)]
    ids: list[list[int]] = []
    for chunk in writes:
        frames: list[Frame] = []
        FrameDecoder(frames.append).feed(chunk)
        ids.append([frame.id for frame in frames])
    assert ids == [[1], [2, 3], [4]]


def test_a_large_argument_is_handed_to_asyncssh_in_slices_as_it_is_sent(ssh_hosts: SSHHosts) -> None:
    """asyncssh copies each write whole before sending it: a 20 MB argument goes in slices
    (`ssh_outbox.CHUNK`), each when asyncssh has sent the ones before, and arrives whole."""

    async def scenario() -> tuple[list[int], Frame]:
        harness = Harness(ssh_hosts.servers[0], ssh_hosts)
        channel = await harness.start()
        writes: list[int] = []
        real = channel._chan.write
        channel._chan.write = lambda data: (writes.append(len(data)), real(data))[1]
        harness.run(1, len, bytearray(os.urandom(20 * 1024 * 1024)))  # random: lz4 leaves it whole
        result = await asyncio.wait_for(harness.frames.get(), 60)
        await channel.close()
        return writes, result

    writes, result = asyncio.run(scenario())
    assert (result.kind, result.id, result.payload) == (Kind.RESULT, 1, 20 * 1024 * 1024)
    assert sum(writes) > 20 * 1024 * 1024
    assert max(writes) <= CHUNK < 20 * 1024 * 1024


def test_kill_takes_the_workers_whole_process_group(ssh_hosts: SSHHosts) -> None:
    async def scenario() -> tuple[int, int]:
        harness = Harness(ssh_hosts.servers[1], ssh_hosts)
        channel = await harness.start()
        harness.run(1, spawn_and_sleep, 60)
        child = await harness.child_pid()
        worker = channel.pid
        assert worker is not None and pid_alive(child)
        channel.kill()
        await asyncio.wait_for(harness.closed, 10)  # the pool hears of it as a lost node
        await channel.close(timeout=1)
        harness.conn.close()
        return worker, child

    worker, child = asyncio.run(scenario())
    assert wait_until(lambda: not pid_alive(worker) and not pid_alive(child), timeout=5)


def test_a_dropped_connection_makes_the_worker_exit_by_itself(ssh_hosts: SSHHosts) -> None:
    """No kill is sent: sshd is gone, the worker's stdin closes, and it exits mid-task."""

    async def scenario() -> tuple[int, int]:
        harness = Harness(ssh_hosts.servers[0], ssh_hosts)
        channel = await harness.start()
        harness.run(1, spawn_and_sleep, 60)
        child = await harness.child_pid()
        worker = channel.pid
        assert worker is not None
        os.kill(parent_pid(worker), signal.SIGKILL)  # the sshd serving this connection
        exc = await asyncio.wait_for(harness.closed, 10)
        assert exc is None or isinstance(exc, Exception)
        harness.conn.close()
        return worker, child

    worker, child = asyncio.run(scenario())
    assert wait_until(lambda: not pid_alive(worker), timeout=10)
    # A task's own subprocess outlives it (the provider kills the group by pid file on reconnect).
    with contextlib.suppress(ProcessLookupError):
        os.kill(child, signal.SIGKILL)


def test_runner_streams_lines_and_put_copies_files_and_folders(ssh_hosts: SSHHosts, tmp_path: Path) -> None:
    server = ssh_hosts.servers[0]
    (tmp_path / "tree" / "sub").mkdir(parents=True)
    (tmp_path / "tree" / "a.txt").write_text("a")
    (tmp_path / "tree" / "sub" / "b.txt").write_text("b")
    (tmp_path / "one.txt").write_text("one")

    async def scenario() -> tuple[int, list[tuple[str, str]], int]:
        conn = await connect(server.address, server.port, server.user, key_file=ssh_hosts.key_file,
                             known_hosts=ssh_hosts.known_hosts)
        async with conn:
            runner = SSHRunner(conn)
            lines: list[tuple[str, str]] = []
            code = await runner.run("cat; echo out; echo err >&2; exit 3", stdin="in\n",
                                    on_line=lambda s, line: lines.append((s, line)), timeout=30)
            target = f"{server.home}/copied"
            await runner.put(tmp_path / "tree", f"{target}/tree")
            await runner.put(tmp_path / "tree", f"{target}/tree")  # merged, not nested
            await runner.put(tmp_path / "one.txt", f"{target}/deep/one.txt")
            try:
                await runner.run("sleep 30", stdin=None, on_line=lambda s, line: None, timeout=0.5)
            except TimeoutError:
                timed_out = 1
            else:
                timed_out = 0
            return code, lines, timed_out

    code, lines, timed_out = asyncio.run(scenario())
    assert code == 3 and timed_out == 1
    assert ("stdout", "in") in lines and ("stdout", "out") in lines and ("stderr", "err") in lines
    copied = server.home / "copied"
    assert (copied / "tree" / "a.txt").read_text() == "a"
    assert (copied / "tree" / "sub" / "b.txt").read_text() == "b"
    assert not (copied / "tree" / "tree").exists()
    # the timed-out command was stopped on the host, not just abandoned
    sleeping = lambda: [p for p in processes_of(server.home) if "sleep 30" in cmdline(p)]  # noqa: E731
    assert wait_until(lambda: not sleeping(), timeout=5)
    assert (copied / "deep" / "one.txt").read_text() == "one"
    import shutil

    shutil.rmtree(copied)


def test_runner_returns_when_the_command_exits_though_a_daemon_holds_its_output(ssh_hosts: SSHHosts) -> None:
    """As `LocalRunner`: the exit status counts; output a leftover process keeps open is abandoned
    after a grace, and that process is left running (a bootstrap op may start a daemon on purpose)."""
    server = ssh_hosts.servers[1]
    marker = "sleep 1207"  # an unusual duration, to find this daemon among the host's processes

    async def scenario() -> tuple[int, list[tuple[str, str]]]:
        conn = await connect(server.address, server.port, server.user, key_file=ssh_hosts.key_file,
                             known_hosts=ssh_hosts.known_hosts)
        async with conn:
            lines: list[tuple[str, str]] = []
            command = f"echo before; {marker} & echo after; echo err >&2; exit 4"
            # The runner's own timeout is far beyond its drain grace; the outer one only keeps a
            # broken runner from hanging the test.
            code = await asyncio.wait_for(
                SSHRunner(conn).run(command, on_line=lambda s, line: lines.append((s, line)), timeout=90), 60
            )
            return code, lines

    daemon = lambda: [p for p in processes_of(server.home) if marker in cmdline(p)]  # noqa: E731
    try:
        code, lines = asyncio.run(scenario())
        assert code == 4
        assert ("stdout", "before") in lines and ("stdout", "after") in lines and ("stderr", "err") in lines
        assert daemon()  # left alone, as LocalRunner leaves it
    finally:
        for pid in daemon():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
