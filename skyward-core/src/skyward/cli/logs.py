"""`sky logs`: the last lines of the client log, then (on a terminal) every line written after.

The file is `LogConfig().file` (`~/.skyward/logs/skyward.log`, moved by `$SKYWARD_HOME`) unless
`--file` names another, e.g. a pool's own `LogConfig(file=...)`. Following polls the file and
starts again from the top when it shrinks or is replaced (the handler rotated it). It follows by
default only when stdout is a terminal, so a script that runs `sky logs` gets the lines and an
exit instead of a command that never returns; `--no-follow` says so explicitly.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from pathlib import Path

import click

from skyward.home import log_path
from skyward.options import LogConfig

POLL_SECONDS = 0.5


def default_log() -> Path:
    return log_path(LogConfig().file)


def last_lines(path: Path, count: int) -> tuple[list[str], int, int]:
    """The last `count` lines of `path`, the offset after them and the inode they were read from
    (so a rotation between this read and the follow is seen as one)."""
    with open(path, "rb") as file:
        lines = deque(file, maxlen=count) if count > 0 else deque()
        offset = file.tell()
        inode = os.fstat(file.fileno()).st_ino
    return [line.decode("utf-8", "replace").rstrip("\n") for line in lines], offset, inode


def follow_file(path: Path, offset: int, inode: int) -> None:
    """Print what is appended to `path` from `offset` on, across rotation, until interrupted."""
    pending = b""
    while True:
        try:
            stat = path.stat()
        except FileNotFoundError:  # between the rotation's rename and the new file
            time.sleep(POLL_SECONDS)
            continue
        if stat.st_ino != inode or stat.st_size < offset:
            inode, offset, pending = stat.st_ino, 0, b""
        if stat.st_size > offset:
            with open(path, "rb") as file:
                file.seek(offset)
                chunk = file.read()
            offset += len(chunk)
            *complete, pending = (pending + chunk).split(b"\n")
            for line in complete:
                click.echo(line.decode("utf-8", "replace"))
        time.sleep(POLL_SECONDS)


@click.command()
@click.option("-n", "--lines", "count", type=click.IntRange(min=0), default=20, show_default=True,
              help="How many of the last lines to print first.")
@click.option("--follow/--no-follow", default=None,
              help="Keep printing new lines (default: only when stdout is a terminal).")
@click.option("--file", "path", type=click.Path(dir_okay=False, path_type=Path),
              help="Another log file (default: LogConfig().file, ~/.skyward/logs/skyward.log).")
def logs(count: int, follow: bool | None, path: Path | None) -> None:
    """Print the client log's last lines and follow it."""
    target = path or default_log()
    if not target.is_file():
        raise click.ClickException(
            f"no log file at {target} yet: pools write it while they run (Options(logging=True), the "
            "default); pass --file for another file"
        )
    lines, offset, inode = last_lines(target, count)
    for line in lines:
        click.echo(line)
    if follow is None:
        follow = sys.stdout.isatty()
    if not follow:
        return
    try:
        follow_file(target, offset, inode)
    except KeyboardInterrupt:
        return  # Ctrl-C is how a follow ends: exit 0, no traceback, no "Aborted!"
