"""`sky.Local()` forks its workers from one pre-imported interpreter per pool (`skyward.worker.forkserver`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from core_support import assert_pool_works, cmdline, local_pool, parent_pid, pid_alive, wait_until, worker_pid

import skyward as sky
from skyward.extension.plugin import LaunchCommand, Plugin
from skyward.transport import forkserver
from skyward.transport.pipes import PipeChannel

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not forkserver.available(), reason="the fork server needs Linux pidfds"),
]


@sky.function
def where() -> tuple[int, str, str | None, str]:
    return os.getpid(), os.getcwd(), os.environ.get("FORK_SERVER_MARK"), sys.argv[0]


@sky.function
def run_child() -> int:
    return subprocess.run([sys.executable, "-c", "raise SystemExit(3)"], check=False).returncode


def test_workers_of_a_pool_are_forks_of_one_fork_server() -> None:
    with local_pool(3) as pool:
        pids = worker_pid() @ pool
        parents = {parent_pid(pid) for pid in pids}
        assert len(set(pids)) == 3
        assert len(parents) == 1
        (server,) = parents
        assert parent_pid(server) == os.getpid()
        assert "skyward.worker.forkserver" in cmdline(server)


def test_fork_false_starts_each_worker_from_a_fresh_interpreter() -> None:
    with sky.Compute(provider=sky.Local(fork=False), nodes=2, console=False, logging=False) as pool:
        pids = worker_pid() @ pool
        assert all(parent_pid(pid) == os.getpid() for pid in pids)
        assert all("skyward.worker" in cmdline(pid) for pid in pids)


def test_the_fork_server_and_its_workers_end_with_the_pool() -> None:
    with local_pool(2) as pool:
        pids = worker_pid() @ pool
        server = parent_pid(pids[0])
    assert wait_until(lambda: not pid_alive(server), timeout=5)
    assert wait_until(lambda: not any(pid_alive(pid) for pid in pids), timeout=5)


def test_a_forked_worker_has_the_image_env_and_the_client_s_folder_and_its_own_argv() -> None:
    image = sky.Image(env={"FORK_SERVER_MARK": "set at start"})
    with local_pool(2, image=image) as pool:
        for _, cwd, mark, argv0 in where() @ pool:
            assert (cwd, mark) == (os.getcwd(), "set at start")
            assert argv0.endswith(os.path.join("skyward", "worker", "__main__.py"))


def test_a_forked_worker_waits_for_its_own_subprocesses() -> None:
    # The server reaps its children on SIGCHLD; a worker must not inherit that, or `wait` fails.
    with local_pool(1) as pool:
        assert run_child() >> pool == 3


def test_a_killed_forked_worker_is_replaced_by_a_new_fork_of_the_same_server() -> None:
    with local_pool(2) as pool:
        first, second = worker_pid() @ pool
        server = parent_pid(first)
        os.kill(first, signal.SIGKILL)
        assert wait_until(lambda: first not in worker_pid() @ pool, timeout=10)
        pids = worker_pid() @ pool
        assert second in pids
        assert {parent_pid(pid) for pid in pids} == {server}


def test_a_dead_fork_server_leaves_later_workers_to_fresh_interpreters() -> None:
    with local_pool(1) as pool:
        (first,) = worker_pid() @ pool
        os.kill(parent_pid(first), signal.SIGKILL)
        pool.resize(2)
        pids = worker_pid() @ pool
        assert pids[0] == first
        assert parent_pid(pids[1]) == os.getpid()  # started from a fresh interpreter, and it works
        assert_pool_works(pool)


def fork_servers_of_this_process() -> list[int]:
    servers = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if parent_pid(int(entry)) == os.getpid() and "skyward.worker.forkserver" in cmdline(int(entry)):
                    servers.append(int(entry))
            except (FileNotFoundError, ProcessLookupError):
                continue
    return servers


def test_a_pool_that_fails_to_start_after_its_workers_leaves_no_fork_server() -> None:
    @contextlib.contextmanager
    def refuse(pool: object, cluster: object) -> Iterator[None]:
        assert fork_servers_of_this_process()  # the workers are up, forked from it
        raise RuntimeError("this client refuses to start")
        yield

    plugin = Plugin.create("refuser").with_around_client(refuse)
    with pytest.raises(Exception, match="refuses to start"), local_pool(2, plugins=[plugin]):
        pass
    assert wait_until(lambda: fork_servers_of_this_process() == [], timeout=5)


KILLED_SCRIPT = textwrap.dedent(
    """
    import os, time
    import skyward as sky

    @sky.function
    def pid():
        return os.getpid()

    with sky.Compute(provider=sky.Local(), nodes=2, console=False, logging=False) as pool:
        pids = pid() @ pool
        print(*pids, flush=True)
        time.sleep(60)
    """
)


def test_a_client_killed_outright_leaves_neither_fork_server_nor_workers(tmp_path: Path) -> None:
    script = tmp_path / "killed.py"
    script.write_text(KILLED_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert proc.stdout is not None
        workers = [int(p) for p in proc.stdout.readline().split()]
        server = parent_pid(workers[0])
        assert "skyward.worker.forkserver" in cmdline(server)
    finally:
        proc.kill()  # no teardown runs: EOF on their pipes and socket is all they get
        proc.wait()
    assert wait_until(lambda: not any(pid_alive(p) for p in [server, *workers]), timeout=10)


def test_a_launcher_plugin_s_workers_start_through_its_command() -> None:
    def launcher(command: LaunchCommand, context: object) -> LaunchCommand:
        return LaunchCommand("env FORK_SERVER_MARK=from-the-launcher", command.entrypoint, command.args)

    plugin = Plugin.create("launcher").with_launcher(launcher)
    with local_pool(1, plugins=[plugin]) as pool:
        pid, _, mark, _ = where() >> pool
        assert mark == "from-the-launcher"
        assert parent_pid(pid) == os.getpid()


def fork_one_worker(
    env: dict[str, str],
    before_fork: Callable[[forkserver.ForkServer], None] = lambda server: None,
    after_fork: Callable[[PipeChannel], None] = lambda channel: None,
) -> None:
    """Start a fork server with `env` and fork one channel's worker from it, then stop both."""

    async def fork() -> None:
        server = forkserver.ForkServer(env)
        server.start()
        channel = PipeChannel(["unused"])
        try:
            before_fork(server)
            await channel.spawn_forked(server)
            after_fork(channel)
        finally:
            await channel.close(timeout=1)
            server.close()

    asyncio.run(fork())


def test_a_fork_server_that_exited_says_so() -> None:
    def kill(server: forkserver.ForkServer) -> None:
        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)

    with pytest.raises(forkserver.ForkServerError, match="fork server"):
        fork_one_worker(dict(os.environ), before_fork=kill)


def test_a_forked_process_times_out_while_alive_and_ends_when_killed() -> None:
    def kill(channel: PipeChannel) -> None:
        process = channel._proc
        assert isinstance(process, forkserver.ForkedProcess)
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=0.2)  # a worker waits for its HELLO: it is alive
        process.kill()
        process.wait(timeout=5)
        assert not pid_alive(process.pid)

    fork_one_worker(dict(os.environ), after_fork=kill)


def test_a_fork_server_running_threads_refuses_to_fork(tmp_path: Path) -> None:
    # A site hook that starts a thread makes forking unsafe: the server says so instead.
    (tmp_path / "sitecustomize.py").write_text("import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n")

    python_path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))

    with pytest.raises(forkserver.ForkServerError, match="unsafe: the server runs 2 threads"):
        fork_one_worker({**os.environ, "PYTHONPATH": python_path})
