"""A broadcast's large argument leaves the client once; the nodes pass it on among themselves.

`pool.broadcast` (`@ pool`) with an argument of `RELAY_MIN` bytes or more, on two or more SSH nodes
that lack it: instead of one copy per node up the client's link, the client sends one copy to the
first node, which forwards it to the next as it arrives, and so on (`skyward.transport.blob_relay`).
Each node holds it in its node folder; its worker is told to adopt it from there (`BlobLedger`'s
`staged`), checking it against its key. A node the chain did not reach is sent it by the client,
as any other large argument: a relay that fails costs time, never a task.

How the nodes get in to each other: a key made for this one relay, in memory. Its public half goes
into each node's `~/.ssh/authorized_keys` with `restrict` and a forced command that runs the relay
in that node's folder and nothing else; it is taken out as soon as the relay ends, reached or not.
Its private half travels to the nodes inside the relay's own stream, never to a disk. Each node
checks the next one's host key against the line the client pinned when it logged in there. No
port is opened: every hop is an SSH login to a node's own sshd, at the address `peer_address`
gives (the instance's private address: the pool's own network).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import posixpath
import secrets
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from skyward.client.blobs import Blob
from skyward.transport.blob_relay import LENGTH

if TYPE_CHECKING:
    from skyward.client.fleet import Fleet
    from skyward.client.loop import LoopThread
    from skyward.client.node import NodeHandle
    from skyward.client.scheduler import Scheduler
    from skyward.client.tasks import TaskState

#: Broadcast arguments this large or larger are relayed by the nodes (smaller ones: the client
#: sends each node its copy, which costs less than the relay's logins).
RELAY_MIN = 8 << 20
#: How long the client waits for a relay to end before serving the nodes it has not reached.
RELAY_TIMEOUT = 600.0
#: How long installing or revoking the relay's key on a node may take.
KEY_TIMEOUT = 30.0

_log = structlog.get_logger()


@attrs.frozen
class Hop:
    """One node of the chain: how the client reaches it, and how the node before it does."""

    node: Any  # NodeHandle
    conn: Any  # the client's SSH connection to it
    workdir: str
    host: str
    port: int
    user: str
    known_host: str

    @property
    def label(self) -> str:
        return str(self.node.key)


def peer_address(instance: Any) -> tuple[str, int]:
    """Where the other nodes reach this one's sshd: its private address, on the pool's network."""
    return instance.private_ip or instance.public_ip, instance.ssh_port


def relay_broadcast(
    tasks: list[TaskState], scheduler: Scheduler, fleet: Fleet, loop: LoopThread
) -> Callable[[], None]:
    """Before a broadcast's tasks go out, relay each of its large arguments to the nodes that
    lack it; the worker of every node reached then adopts it from its node folder.

    Returns what to call once the tasks are answered: it waits until the relay's key is out of
    every node's authorized_keys (taken out while the workers adopt the argument)."""
    blobs = [blob for blob in (tasks[0].function.blobs if tasks else ()) if blob.size >= RELAY_MIN]
    revoking: list[concurrent.futures.Future[Any]] = []
    for blob in blobs:
        nodes = [scheduler.get(task.target) for task in tasks]
        hops = _hops([n for n in nodes if n is not None and not n.functions.blobs.holds(blob.key)])
        if len(hops) < 2:
            continue  # one node: the client's copy is the only one anyway
        python = fleet.provider.python_bin(fleet.cluster)
        reached, revoked = loop.run(relay(blob, hops, python))
        revoking.append(asyncio.run_coroutine_threadsafe(_wait(revoked), loop.loop))
        for hop in hops:
            if hop.label in reached:
                with hop.node.functions.lock:
                    hop.node.functions.blobs.staged.add(blob.key)

    def finish() -> None:
        for future in revoking:
            future.result(KEY_TIMEOUT * 2)

    return finish


async def _wait(task: asyncio.Future[Any]) -> None:
    await task


def _hops(nodes: list[NodeHandle]) -> list[Hop]:
    """The nodes a relay can reach: workers on SSH channels, each in its own node folder."""
    hops: list[Hop] = []
    folders: set[tuple[str, int, str]] = set()
    for node in nodes:
        conn = getattr(node.channel, "_conn", None)
        pid_file = getattr(node.channel, "pid_file", "")
        if conn is None or not pid_file or node.lost:
            continue
        workdir = posixpath.dirname(pid_file)
        host, port = peer_address(node.instance)
        if (host, port, workdir) in folders:
            continue  # a second worker of the same node: one copy in the folder serves both
        folders.add((host, port, workdir))
        key = conn.get_server_host_key()
        target = host if port == 22 else f"[{host}]:{port}"
        known = f"{target} {key.export_public_key().decode().strip()}"
        hops.append(Hop(node, conn, workdir, host, port, node.instance.ssh_user or "root", known))
    return hops


async def relay(blob: Blob, hops: list[Hop], python: str) -> tuple[set[str], asyncio.Future[Any]]:
    """Send `blob` down the chain of `hops`: the labels of the nodes that hold it whole, and the
    revocation of the relay's key on every node, under way."""
    import asyncssh

    key = asyncssh.generate_private_key("ssh-ed25519")
    mark = secrets.token_hex(8)
    public = key.export_public_key().decode().strip()
    header = {
        "key": blob.key.hex(),
        "size": sum(memoryview(p).nbytes for p in blob.parts),
        "private_key": key.export_private_key().decode(),
    }
    # The first node's relay starts (its Python, its imports) while the others let the key in.
    starting = asyncio.ensure_future(_start(hops[0], python))
    installed = await asyncio.gather(
        *(_node_command(hop, python, ["install", public, mark, hop.workdir, python]) for hop in hops[1:])
    )
    chain = [hop for hop, ok in zip(hops[1:], installed, strict=True) if ok]
    try:
        process = await starting
        reached = await asyncio.wait_for(_send(blob, process, hops[0], chain, header), RELAY_TIMEOUT)
    except (TimeoutError, OSError, Exception) as exc:  # noqa: BLE001 - the client serves the rest
        _log.warning("skyward.relay_failed", error=str(exc))
        reached = set()
    revoked = asyncio.ensure_future(
        asyncio.gather(*(_node_command(hop, python, ["revoke", mark]) for hop in hops[1:]))
    )
    return reached, revoked


async def _start(first: Hop, python: str) -> Any:
    command = f"cd {shlex.quote(first.workdir)} && exec {python} -m skyward.transport.blob_relay"
    return await first.conn.create_process(command, encoding=None)


async def _send(blob: Blob, process: Any, first: Hop, chain: list[Hop], header: dict[str, Any]) -> set[str]:
    """Stream the header and `blob` to the first node's relay; collect the `ok` lines."""
    hops = [
        {"host": h.host, "port": h.port, "user": h.user, "known_host": h.known_host, "label": h.label}
        for h in chain
    ]
    text = json.dumps({**header, "hops": hops, "label": first.label}).encode()
    reached: set[str] = set()

    async def read() -> None:
        while line := await process.stdout.readline():
            text = line.decode(errors="replace").strip()
            if text.startswith("ok "):
                reached.add(text[3:])

    reader = asyncio.ensure_future(read())
    try:
        process.stdin.write(LENGTH.pack(len(text)) + text)
        for part in blob.parts:
            view = memoryview(part).cast("B")
            for start in range(0, len(view), 1 << 20):
                process.stdin.write(bytes(view[start : start + (1 << 20)]))
                await process.stdin.drain()
        process.stdin.write_eof()
        await reader
    finally:
        reader.cancel()
        process.close()
    return reached


async def _node_command(hop: Hop, python: str, args: list[str]) -> bool:
    """Run the relay module's `install` or `revoke` on a node; whether it succeeded."""
    words = " ".join(shlex.quote(a) for a in args)
    command = f"cd {shlex.quote(hop.workdir)} && {python} -m skyward.transport.blob_relay {words}"
    try:
        result = await asyncio.wait_for(hop.conn.run(command, check=False), KEY_TIMEOUT)
    except (TimeoutError, OSError, Exception) as exc:  # noqa: BLE001 - that node is served by the client
        _log.warning("skyward.relay_key", node=hop.label, op=args[0], error=str(exc))
        return False
    if result.exit_status != 0:
        with contextlib.suppress(Exception):
            _log.warning("skyward.relay_key", node=hop.label, op=args[0], error=str(result.stderr)[-500:])
        return False
    return True
