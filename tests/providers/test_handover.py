"""`providers.handover`: a rented machine is handed over at the address its row gives once its sshd
presents the pinned host key (a real SSH server on loopback); one still booting is asked again,
and one whose row says it ended fails the start, naming it and why."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncssh
import pytest

from skyward.errors import ProvisionError
from skyward.providers.base import Instance
from skyward.providers.handover import Address, handed_over
from skyward.providers.probe import PinnedKeyWait

PINNED = asyncssh.generate_private_key("ssh-ed25519")


def ended(row: dict[str, Any] | None) -> str | None:
    return "deleted" if row is None else ("failed" if row["status"] == "failed" else None)


def address(row: dict[str, Any]) -> Address | None:
    return Address(host=row["ip"], port=row["port"], user="ubuntu") if row["status"] == "up" else None


def hand_over(rows: list[dict[str, Any] | None]) -> list[Instance]:
    instances = [Instance(id=f"vm-{n}", node=n, ssh_user="root") for n in range(len(rows))]

    async def run() -> list[Instance]:
        server = await asyncssh.listen("127.0.0.1", 0, server_host_keys=[PINNED])
        port = server.sockets[0].getsockname()[1]
        try:
            listed = [None if r is None else {**r, "port": port} for r in rows]
            return await handed_over(
                instances,
                listed,
                keys=PinnedKeyWait(grace=3600),
                expected=lambda i: PINNED.export_public_key().decode(),
                ended=ended,
                address=address,
                what="Cloud VM",
            )
        finally:
            server.close()
            await server.wait_closed()

    return asyncio.run(run())


def test_a_machine_up_with_the_pinned_key_is_handed_over_at_its_rows_address_and_a_booting_one_waits() -> (
    None
):
    ready = hand_over([{"status": "booting", "ip": ""}, {"status": "up", "ip": "127.0.0.1"}])
    assert [(i.id, i.public_ip, i.private_ip, i.ssh_user) for i in ready] == [
        ("vm-1", "127.0.0.1", "127.0.0.1", "ubuntu")
    ]


@pytest.mark.parametrize(("row", "why"), [(None, "deleted"), ({"status": "failed", "ip": ""}, "failed")])
def test_a_machine_whose_row_says_it_ended_fails_the_start_naming_it(row: Any, why: str) -> None:
    with pytest.raises(
        ProvisionError, match=rf"Cloud VM vm-0 \(node 0\) ended before it could be used \({why}\)"
    ):
        hand_over([row])
