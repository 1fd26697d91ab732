"""A node's part in relaying a large argument to the pool's other nodes (`python -m` this module).

The client sends one copy up its own link, to the first node; each node writes what it reads into
its node folder (`BLOB_DIR`) and forwards it, chunk by chunk as it arrives,
to the next node over SSH: client -> A -> B -> C -> D, each link carrying one copy at once, so the
whole broadcast takes about one copy's time on the client's uplink.

What a hop reads on stdin: a 4-byte length, a JSON header, then the blob's bytes. The header holds
the blob's `key` (hex) and `size`, the `hops` still to reach
(address, port, user, the known_hosts line the client pinned for it, a label) and the relay's
private key in OpenSSH form. That key exists only for this relay, in memory: the client put its
public half in each node's authorized_keys with `restrict` and a forced command that runs this
module and nothing else, and takes it out when the relay ends (`install` / `revoke` below).

What a hop writes on stdout: one line per node that now holds the blob whole (`ok <label>`), its
own and those its successors report. A successor that cannot be reached, or fails mid-way, is
skipped: once this hop holds the whole blob it serves the nodes after it from its own copy. A node
nobody reports is served by the client, over its worker's channel.

Nothing here listens on a port: every link is an SSH login to a node's own sshd.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import struct
import sys
from pathlib import Path
from typing import Any

from skyward.transport.blob_folder import BLOB_DIR


#: The header's length prefix.
LENGTH = struct.Struct("<I")
CHUNK = 1 << 20
#: How long a hop waits to log in to the next node before skipping it.
CONNECT_TIMEOUT = 20.0
#: Marks this pool's relay keys in authorized_keys, so `revoke` removes exactly them.
MARK = "skyward-relay-"


async def _stdin() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=CHUNK * 4)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    return reader


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Next:
    """The login to the next node and the relay process started there."""

    def __init__(self, conn: Any, process: Any, hop: dict[str, Any], lines: asyncio.Task[list[str]]) -> None:
        self.conn = conn
        self.process = process
        self.hop = hop
        self.lines = lines
        self.broken = False

    @classmethod
    async def open(cls, hops: list[dict[str, Any]], header: dict[str, Any]) -> tuple[Next | None, list[str]]:
        """A relay started on the first of `hops` that lets this node in, and the labels skipped."""
        import asyncssh

        from skyward.transport.ssh_connect import ciphers

        key = asyncssh.import_private_key(header["private_key"])
        skipped: list[str] = []
        for i, hop in enumerate(hops):
            try:
                conn = await asyncio.wait_for(
                    asyncssh.connect(
                        hop["host"],
                        hop["port"],
                        username=hop["user"],
                        client_keys=[key],
                        known_hosts=asyncssh.import_known_hosts(hop["known_host"] + "\n"),
                        agent_path=None,
                        config=[],
                        keepalive_interval=15,
                        # the client's choices: fast ciphers, and no zlib on bytes that do not shrink
                        encryption_algs=ciphers(),
                        compression_algs=None,
                    ),
                    CONNECT_TIMEOUT,
                )
                process = await conn.create_process("relay", encoding=None)
            except (TimeoutError, OSError, asyncssh.Error) as exc:
                print(f"skyward relay: {hop['label']} unreachable: {exc}", file=sys.stderr)
                skipped.append(hop["label"])
                continue
            onward = {**header, "hops": hops[i + 1 :], "label": hop["label"]}
            text = json.dumps(onward).encode()
            process.stdin.write(LENGTH.pack(len(text)) + text)
            return cls(conn, process, hop, asyncio.ensure_future(_lines(process))), skipped
        return None, skipped

    async def send(self, chunk: bytes) -> None:
        if self.broken:
            return
        try:
            self.process.stdin.write(chunk)
            await self.process.stdin.drain()
        except Exception as exc:  # noqa: BLE001 - any loss of the next node: it is skipped
            print(f"skyward relay: {self.hop['label']} lost mid-way: {exc}", file=sys.stderr)
            self.broken = True

    async def finish(self) -> list[str]:
        """The labels the next node and its successors report holding the blob."""
        with contextlib.suppress(Exception):
            self.process.stdin.write_eof()
        try:
            reported = await self.lines
        except Exception:  # noqa: BLE001 - a lost node reports nothing
            reported = []
        self.conn.close()
        return reported


async def _lines(process: Any) -> list[str]:
    """The `ok <label>` lines a successor writes, passed upstream as they come."""
    found: list[str] = []
    while line := await process.stdout.readline():
        text = line.decode(errors="replace").strip()
        if text.startswith("ok "):
            found.append(text[3:])
            _say(text)
    return found


async def relay() -> int:
    reader = await _stdin()
    (length,) = LENGTH.unpack(await reader.readexactly(LENGTH.size))
    header = json.loads(await reader.readexactly(length))
    hops: list[dict[str, Any]] = header["hops"]
    folder = Path(BLOB_DIR)
    folder.mkdir(mode=0o700, exist_ok=True)
    final = folder / header["key"]
    part = folder / (header["key"] + f".{os.getpid()}.part")
    nxt, skipped = await Next.open(hops, header)
    got = 0
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            while chunk := await reader.read(CHUNK):
                file.write(chunk)
                got += len(chunk)
                if nxt is not None:
                    await nxt.send(chunk)
        # A short copy is refused here; the worker checks the content against the key it names.
        if got != header["size"]:
            print(f"skyward relay: {got} of {header['size']} bytes arrived", file=sys.stderr)
            return 1
        os.replace(part, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            part.unlink()
    _say(f"ok {header['label']}")
    reached = set(await nxt.finish()) if nxt is not None else set()
    # The nodes after this one that were not reached, other than those that failed (the client
    # serves those), are served from this node's copy.
    failed = set(skipped)
    if nxt is not None and nxt.hop["label"] not in reached:
        failed.add(nxt.hop["label"])
    left = [hop for hop in hops if hop["label"] not in reached and hop["label"] not in failed]
    if left:
        await _serve(left, header, final)
    return 0


async def _serve(hops: list[dict[str, Any]], header: dict[str, Any], path: Path) -> None:
    """Relay the blob this node holds whole to `hops`, from its file."""
    nxt, _ = await Next.open(hops, header)
    if nxt is None:
        return
    with open(path, "rb") as file:
        while chunk := file.read(CHUNK):
            await nxt.send(chunk)
    await nxt.finish()


# -- the relay key in authorized_keys --------------------------------------------------------------


def _authorized_keys() -> Path:
    return Path(os.environ.get("HOME") or Path.home()) / ".ssh" / "authorized_keys"


def _locked_edit(edit: Any) -> None:
    path = _authorized_keys()
    path.parent.mkdir(mode=0o700, exist_ok=True)
    with open(path.parent / ".skyward-relay.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        old = path.read_text() if path.exists() else ""
        new = edit(old)
        temp = path.with_name(f".authorized_keys.{os.getpid()}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as file:
            file.write(new)
        os.replace(temp, path)


def install(public_key: str, mark: str, workdir: str, python: str) -> None:
    """Let `public_key` in to run the relay in `workdir` and nothing else (no pty, forwarding)."""
    command = f"cd {workdir} && exec {python} -m skyward.transport.blob_relay"
    line = f'restrict,command="{command}" {public_key.strip()} {MARK}{mark}\n'

    def add(text: str) -> str:
        lines = [old for old in text.splitlines(keepends=True) if f"{MARK}{mark}" not in old]
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        return "".join(lines) + line

    _locked_edit(add)


def revoke(mark: str) -> None:
    """Take the relay key `mark` out of authorized_keys."""
    ours = f"{MARK}{mark}"
    _locked_edit(lambda text: "".join(old for old in text.splitlines(keepends=True) if ours not in old))


def main(argv: list[str]) -> int:
    if argv[:1] == ["install"]:
        install(*argv[1:5])
        return 0
    if argv[:1] == ["revoke"]:
        revoke(argv[1])
        return 0
    return asyncio.run(relay())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
