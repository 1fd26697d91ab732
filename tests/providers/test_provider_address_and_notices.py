"""Two pieces of the provider kit: the client's own address for a firewall rule
(`providers.address`), and the notices a node's watcher prints (`providers.notices`). The watcher
itself runs over a real SSH connection in the clouds' preemption tests (tests/gcp)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from skyward.errors import ProvisionError
from skyward.providers.address import client_cidr
from skyward.providers.notices import NodeNotices


@pytest.fixture
def echo() -> Iterator[str]:
    """An echo service on loopback: it answers with the caller's address and nothing else."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = f"{self.client_address[0]}\n".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_the_clients_address_is_a_one_address_range(echo: str) -> None:
    assert client_cidr(echo) == "127.0.0.1/32"


def test_an_echo_service_that_does_not_answer_is_a_provision_error_saying_where() -> None:
    with pytest.raises(ProvisionError, match=r"could not learn this client's public address from http://127"):
        client_cidr("http://127.0.0.1:9/", timeout=2)


def _notices() -> NodeNotices:
    return NodeNotices("Cloud", "pass", [], lambda n: "taken back" if n.get("kind") == "preempted" else None)


def test_a_notice_the_provider_reads_as_a_preemption_is_kept_for_that_instance_only() -> None:
    notices = _notices()
    notices.notice("vm-1", 1, '{"kind": "preempted", "detail": {}}\n')
    assert notices.preempted(["vm-0", "vm-1"]) == {"vm-1": "taken back"}


def test_other_notices_and_lines_that_are_not_json_are_not_preemptions() -> None:
    notices = _notices()
    unreachable = '{"kind": "unreachable", "detail": {"error": "timed out"}}'
    for line in (unreachable, "Traceback (most recent call last):", "[1, 2]"):
        notices.notice("vm-1", 1, line)
    assert notices.preempted(["vm-1"]) == {}
