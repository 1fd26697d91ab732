"""The regions where this user's pools ran: where `sky ls` and `sky down` look without `--region`.

EC2 lists machines one region at a time, and asking every region costs a call to each (some
twenty) on every `sky ls`. A pool therefore notes its region in `$SKYWARD_HOME/aws-regions` when
it starts (before it creates anything, so a client killed right after still left the note), and
the sweeper looks in the configured region and every noted one; `--region all` asks every region
the account has enabled.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from skyward.home import skyward_home

FILE = "aws-regions"


def _path() -> Path:
    return skyward_home() / FILE


def remembered() -> list[str]:
    """The regions noted so far, in the order first used."""
    with contextlib.suppress(OSError):
        return [line.strip() for line in _path().read_text().splitlines() if line.strip()]
    return []


def remember(region: str) -> None:
    """Note `region` (once). A note that cannot be written only narrows `sky ls`: never fatal."""
    if region in remembered():
        return
    with contextlib.suppress(OSError):
        path = _path()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(path, "a") as f:
            f.write(region + "\n")
            f.flush()
            os.fsync(f.fileno())
