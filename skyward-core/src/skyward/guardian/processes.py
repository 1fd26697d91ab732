"""The guardian's view of the node's processes: whether one runs, a process group's members, when
one started, a signal to a whole group. Standard library only, like `agent.py`, into whose
uploaded file it is spliced (`skyward.guardian.source`): it runs on nodes before anything is
installed, under any Python 3.8+.
"""

from __future__ import annotations

import contextlib
import os


def _state(pid: int) -> str | None:
    """The process's state letter (None: no such process). Without /proc, "R" for any that exists."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode()
    except FileNotFoundError:
        return None
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return "R"


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, which only waits to be reaped, does not)."""
    state = _state(pid)
    return state is not None and state not in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (on systems without /proc: the leader alone)."""
    if not os.path.isdir("/proc"):
        return [pgid] if alive(pgid) else []
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            members.append(int(name))
    return members


def started_at(pid: int) -> float | None:
    """When `pid` started (seconds since the epoch), from /proc; None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/stat", "rb") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pgid, sig)
    with contextlib.suppress(OSError):
        os.kill(pgid, sig)
