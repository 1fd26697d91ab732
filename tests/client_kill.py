"""A client killed outright (SIGKILL): the client process the cloud providers' guardian tests kill.

The client is a real process running a pool script (`CLIENT`) against a provider's fake API: a
task that holds its node (it writes `started`, then sleeps), optionally behind a bootstrap step
that holds the bootstrap (`op`). The tests kill it at a chosen point and watch the node's guardian
end the machine once its lease lapses; how that shows is each provider's own, so the two checks
every cloud makes (`ends_itself_mid_task`, `ends_itself_before_first_login`) take the fake's
listing of its machines and of those it saw ended.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import attrs
from ssh_hosts import wait_until

from skyward.guardian import renew_interval

#: The lease the clients take (seconds).
TTL = 2
#: The bootstrap timeout of a client that never logs in (the boot guardian's initial lease is it + TTL).
BOOTSTRAP_TIMEOUT = 3
#: The issue's bound: the machine is ended within ttl + 30 s of the kill (plus the bootstrap
#: timeout when the client never logged in).
BOUND = TTL + 30

CLIENT = """
import getpass, sys, time
import skyward as sky

provider = {provider}
{setup}
@sky.function
def hold() -> None:
    open({started!r}, "w").write("running")
    time.sleep(600)

with sky.Compute(provider=provider, {compute}ttl={ttl}, console=False, logging=False) as pool:
    hold() >> pool
"""

#: A plugin whose bootstrap step runs the shell command `op` (one that holds the bootstrap, say).
HOLD_BOOTSTRAP = 'hold_bootstrap = sky.plugins.Plugin.create("hold").with_bootstrap(lambda cluster: {op!r})\n'


@attrs.frozen
class Client:
    process: subprocess.Popen[bytes]
    #: Written by the task once it runs on the node.
    started: Path
    #: The client's stdout and stderr.
    log: Path


def start_client(
    folder: Path, provider: str, *, op: str | None = None, bootstrap_timeout: int | None = None,
    **compute: Any,
) -> Client:
    """Run the client script in `folder` with `provider` (the Python expression that builds the
    provider; `getpass` and `sys` are imported). With `op`, a plugin's bootstrap step runs that
    shell command; with `bootstrap_timeout`, the pool's options set it (and a provision timeout
    of 600 s); `compute` are more `sky.Compute` arguments, as values."""
    setup, arguments = "", "".join(f"{name}={value!r}, " for name, value in compute.items())
    if op is not None:
        setup += HOLD_BOOTSTRAP.format(op=op)
        arguments += "plugins=[hold_bootstrap], "
    if bootstrap_timeout is not None:
        setup += f"options = sky.Options(bootstrap_timeout={bootstrap_timeout}, provision_timeout=600)\n"
        arguments += "options=options, "
    started = folder / "task-started"
    script = folder / "client.py"
    script.write_text(CLIENT.format(
        provider=provider, setup=setup, started=str(started), compute=arguments, ttl=TTL,
    ))
    log = folder / "client.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, str(script)], stdout=out, stderr=out, cwd=folder)
    return Client(process, started, log)


def kill_when(client: Client, ready: Callable[[], bool], timeout: float) -> float:
    """Wait until `ready` (at most `timeout` seconds, less if the client exits first; the client's
    log tells why not), then kill the client outright, whatever happened; returns when it was dead."""
    try:
        exited = client.process.poll
        wait_until(lambda: ready() or exited() is not None, timeout)
        assert ready(), client.log.read_text()
    finally:
        client.process.send_signal(signal.SIGKILL)
        client.process.wait()
    return time.monotonic()


def kill_before_first_login(
    client: Client, boot_guardians: dict[Any, str], timeout: float
) -> tuple[Any, float]:
    """Kill the client once its one machine's boot guardian has started (the fake's sshd never
    answers, so the client never logs in: that guardian's initial lease is all there is); returns
    the machine's id and when the client was dead."""
    killed = kill_when(client, lambda: bool(boot_guardians), timeout)
    ((machine, answer),) = boot_guardians.items()
    assert answer.startswith("started "), answer
    return machine, killed


def assert_lease_ran_out(killed: float) -> None:
    """The machine ended no sooner than the lease allowed: ttl from the last renewal, which came at
    most one renewal interval before the kill."""
    assert time.monotonic() - killed >= TTL - renew_interval(TTL)


def ends_itself_mid_task(
    client: Client, machines: Callable[[], Collection[Any]], ended: Callable[[], Collection[Any]]
) -> Any:
    """Kill the client once its task runs on its one machine (`machines()`), then see that machine
    ended (in `ended()`) within `BOUND`, and no sooner than its lease allowed: by its guardian's
    lapse, not by a teardown. Returns the machine."""
    killed = kill_when(client, client.started.exists, 120)
    (machine,) = machines()
    assert wait_until(lambda: machine in ended(), BOUND), client.log.read_text()
    assert_lease_ran_out(killed)
    return machine


def ends_itself_before_first_login(
    client: Client, boot_guardians: dict[Any, str], ended: Callable[[], Collection[Any]]
) -> Any:
    """Kill the client once its one machine's boot guardian has started (the fake's sshd down), then
    see the machine ended within the initial lease and `BOUND`. Returns the machine."""
    machine, _ = kill_before_first_login(client, boot_guardians, 120)
    assert wait_until(lambda: machine in ended(), BOOTSTRAP_TIMEOUT + BOUND), boot_guardians
    return machine
