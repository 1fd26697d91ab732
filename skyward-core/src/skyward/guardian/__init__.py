"""The node guardian: a machine, its processes and its secrets do not outlive the pool's client.

A worker cannot police itself: a task that holds the GIL starves any thread inside it, and a
worker whose client vanished only sees EOF and exits, leaving a billed cloud machine up. So every
node of an SSH or cloud pool runs a guardian beside the worker, a separate process that owns the
pool's lease on that node:

- **What runs.** `agent.py` with `processes.py` spliced in (`source`), one file of standard
  library only (so it starts in milliseconds,
  under the machine's own `python3`, before the bootstrap has installed anything). The client
  uploads it into the node folder as `guardian.py` and starts it the first time the pool reaches
  the machine (first in the bootstrap's script, `script_start`, before anything else), detached: a double fork
  into a session of its own, stdio on `guardian.log`. It is started again after the bootstrap
  (then with the venv's Python if the machine had no `python3`); a second start finds the first
  holding `guardian.lock` (an flock) and only claims its lease, so there is one guardian per node
  folder. A start that finds one ending its lease waits for that end and then guards the folder
  itself (`agent.Guardian.confirm_end`), and its client starts nothing there before the answer.
- **The lease.** The client renews it over the SSH connection it already has, no new port: one
  more session channel on the same connection runs `guardian.py renew`, and the client writes a
  byte on it every `renew_interval(ttl)` seconds (at most 2 s) from the pool's event loop. That
  process touches `guardian.lease` per byte; the guardian reads the file's mtime and times the
  renewals with its own monotonic clock. Nothing a task does in the worker can block either
  process. When the connection closes (the client is gone), the renewer sees EOF and exits.
- **When it lapses.** `Spec.ttl` seconds after the last renewal (the client was killed, the
  network dropped, the laptop slept); with `ttl=0`, as soon as no renewer is left open. Before
  the first renewal the initial lease holds: the node's bootstrap timeout plus ttl, for a
  machine whose client died before it could renew.
- **Ending the work.** SIGTERM to every process group the pool started there (the `*.pid` files
  of the node folder: workers, the bootstrap; the worker leaves its plugins' `around_app`
  contexts on SIGTERM), SIGKILL to what is left after a grace (30 s), then the pool's secret
  files are deleted (`env.sh`, `requirements/*.toml`), then the machine's end command runs: the
  provider's (`skyward_end_machine_command` hook; `Provider.shutdown_command` by default). Clouds
  power off or delete themselves; an SSH host has none, so only the pool's processes and secrets
  go, and the host stays up. The reusable parts of the folder (venv, caches) stay.
- **A clean stop** (`RemoteNodes.clean`) runs `release_command` (the guardian and its renewers
  exit, ending nothing), then kills the workers and removes the node folder; a guardian that finds
  its folder gone exits too. On a cloud the provider then deletes the machine through its API.

This module holds the client's side: the shell lines that upload and start the guardian, renew
and release its lease. They name no Skyward import on the node.
"""

from __future__ import annotations

import functools
import shlex
from importlib import resources

#: The guardian's file in the node folder.
FILE = "guardian.py"
#: What the start command prints when the machine has no Python to run the guardian yet.
NO_PYTHON = "no-python"
#: The first line of a start that says whether a guardian held the folder (`say_if_held`).
HELD = "held"
FREE = "free"
#: The longest pause between two renewals.
MAX_RENEW_INTERVAL = 2.0


#: The line of `agent.py` that `source` replaces with the body of `processes.py`.
SPLICE = "from skyward.guardian.processes import alive, group_members, signal_group, started_at  # spliced\n"


@functools.cache
def source() -> bytes:
    """The guardian's program, as uploaded to nodes: one file of standard library only.

    `agent.py` with `processes.py` spliced in where it imports it: two modules, each with one
    job, here, and one file on the node, where the start line, the renewers and five clouds' boot
    scripts write and run `guardian.py` before anything is installed.
    """
    files = resources.files(__package__)
    agent = files.joinpath("agent.py").read_text()
    processes = files.joinpath("processes.py").read_text()
    body = processes.split("from __future__ import annotations\n", 1)[1]
    if SPLICE not in agent:
        raise RuntimeError("agent.py no longer imports processes.py by the line source() replaces")
    return agent.replace(SPLICE, body.lstrip("\n") + "\n", 1).encode()


def renew_interval(ttl: float) -> float:
    """Seconds between renewals: several per ttl, so one late write never lets the lease lapse."""
    if ttl <= 0:
        return MAX_RENEW_INTERVAL
    return min(max(ttl / 4, 0.2), MAX_RENEW_INTERVAL)


def initial_lease(bootstrap_timeout: float, ttl: float) -> float:
    """The lease a guardian starts with, before any renewal: long enough for the bootstrap."""
    return max(float(bootstrap_timeout), 0.0) + max(float(ttl), 0.0)


def _with_python(folder: str, pythons: tuple[str, ...], args: str) -> str:
    """Run the guardian with the first of `pythons` the machine has (a relative path is taken in
    `folder`); print `NO_PYTHON` when it has none."""
    q = shlex.quote
    tries = []
    for python in pythons:
        path = python if "/" not in python or python.startswith("/") else f"{folder}/{python}"
        test = f"[ -x {q(path)} ]" if "/" in path else f"command -v {q(path)} >/dev/null 2>&1"
        # -S: the agent needs the standard library only, and site's .pth files cost a start ~20 ms
        tries.append(f"if {test}; then exec {q(path)} -S {q(folder + '/' + FILE)} {args}; fi")
    return "; ".join(tries) + f"; echo {NO_PYTHON}"


def start_command(
    folder: str,
    *,
    ttl: float,
    initial: float,
    grace: float = 30.0,
    end_command: str | None = None,
    pythons: tuple[str, ...] = ("python3",),
    say_if_held: bool = False,
) -> str:
    """The shell line that writes the guardian (its source on stdin) into `folder` and starts it.

    Prints "started <pid>", "running <pid>" (one already guards the folder) or `NO_PYTHON`.
    `say_if_held`: first a line `HELD` or `FREE`, as soon as the source is in place: whether a
    guardian's lock is in the folder. A guardian found there may be ending its lease, and then
    the start waits for it to finish (`agent._outlast_ending`): its client must start nothing in
    the folder before the answer (`ssh_lease.guard`).
    """
    q = shlex.quote
    say = ""
    if say_if_held:
        say = f"if [ -e {q(folder + '/guardian.lock')} ]; then echo {HELD}; else echo {FREE}; fi; "
    launch = launch_command(
        folder, ttl=ttl, initial=initial, grace=grace, end_command=end_command, pythons=pythons
    )
    return f"{_write_source(folder)} && {{ {say}{launch}; }}"


def _write_source(folder: str) -> str:
    """sh: the guardian's source, on stdin, into `folder` (made private first)."""
    q = shlex.quote
    target = q(f"{folder}/{FILE}")
    return f"mkdir -p {q(folder)} && chmod 700 {q(folder)} && cat > {target}.tmp && mv {target}.tmp {target}"


def launch_command(
    folder: str,
    *,
    ttl: float,
    initial: float,
    grace: float = 30.0,
    end_command: str | None = None,
    pythons: tuple[str, ...] = ("python3",),
) -> str:
    """sh: start the guardian already written into `folder` (it forks its daemon and answers
    "started <pid>" or "running <pid>"), or print `NO_PYTHON`."""
    q = shlex.quote
    args = (
        f"start --dir {q(folder)} --ttl {float(ttl)!r} --initial {float(initial)!r} --grace {float(grace)!r}"
        f" --end-command {q(end_command or '')}"
    )
    return _with_python(folder, pythons, args)


#: The marker line by which a bootstrap script that started the guardian (`script_start`) gives
#: its answer to the client: "started <pid>", "running <pid>" or `NO_PYTHON`.
ANSWER = "::skyward-guardian:"
#: Ends the guardian's source in a script's here-document (`script_start`).
_SOURCE_END = "__SKYWARD_GUARDIAN_SOURCE__"


def script_start(
    folder: str,
    *,
    ttl: float,
    initial: float,
    grace: float = 30.0,
    end_command: str | None = None,
    pythons: tuple[str, ...] = ("python3",),
) -> str:
    """Bash lines, first in a node's bootstrap script, that write the guardian (its source in a
    here-document: the script's own stdin, no round trip of its own) into `folder` and start it,
    giving its answer on a line `ANSWER<answer>`.

    Once the source is in place the guardian comes up whatever happens to the client, and it
    finds the bootstrap by its pid file: so the script goes on while the guardian's Python starts
    (in the background), as a client waits for no more than that. Unless a guardian holds the
    folder already: it may be ending its lease, and it answers once it has ended
    (`agent._outlast_ending`), so then the script waits for the answer and starts nothing in the
    folder before it. A failed start does not stop the script (the machine may have no Python yet);
    the last line of its output is the answer, which the client reports.
    """
    program = source().decode()
    if _SOURCE_END in program:
        raise RuntimeError(f"the guardian's source holds {_SOURCE_END}, which ends its here-document")
    launch = launch_command(
        folder, ttl=ttl, initial=initial, grace=grace, end_command=end_command, pythons=pythons
    )
    body = program if program.endswith("\n") else program + "\n"
    lock = shlex.quote(f"{folder}/guardian.lock")
    # One printf per answer: a line that short reaches the pipe whole, among the script's own.
    answer = (
        f"__sky_g=$( {{ {launch}; }} 2>&1 ) || true; "
        f'printf \'{ANSWER}%s\\n\' "$(printf \'%s\\n\' "$__sky_g" | tail -n 1)"'
    )
    return (
        f"{{ {_write_source(folder)}; }} <<'{_SOURCE_END}' || true\n{body}{_SOURCE_END}\n"
        f"if [ -e {lock} ]; then {answer}; else ( {answer} ) & fi\n"
    )


def renew_command(folder: str, pythons: tuple[str, ...] = ("python3",)) -> str:
    """The shell line of the renewer: every chunk on its stdin renews the lease, EOF ends it."""
    return _with_python(folder, pythons, f"renew --dir {shlex.quote(folder)}")


def release_command(folder: str) -> str:
    """The shell line of a clean stop: the guardian and its renewers exit now and end nothing.

    The release mark comes first (a guardian that looks sooner exits by itself), then both are
    killed, so that nothing of the pool is left running when the line returns.
    """
    f = shlex.quote(folder)
    return (
        f"if [ -d {f} ]; then : > {f}/guardian.release; "
        f"for p in $(cat {f}/guardian.lock 2>/dev/null) "
        f"$(cd {f} && ls renew-*.live 2>/dev/null | sed 's/^renew-//; s/[.]live$//'); "
        f'do kill -9 "$p" 2>/dev/null; done; rm -f {f}/guardian.lock; fi; true'
    )
