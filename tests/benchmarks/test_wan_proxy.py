"""The WAN case's proxy (benchmarks/wan_proxy.py) delays, keeps order and caps bandwidth.

Only lower bounds are asserted (a delay or a cap can make things slower, never faster), so a busy
machine cannot fail them.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from wan_proxy import TokenBucket, WanProxy  # noqa: E402

pytestmark = pytest.mark.timeout(60)


def echo_server() -> tuple[socket.socket, int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(1 << 16):
                    conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]


def test_every_chunk_is_delayed_each_way_and_arrives_in_order() -> None:
    server, port = echo_server()
    try:
        with (
            WanProxy([("127.0.0.1", port)], delay=0.02) as proxy,
            socket.create_connection(("127.0.0.1", proxy.ports[0])) as conn,
        ):
            for _ in range(3):
                began = time.perf_counter()
                conn.sendall(b"x")
                assert conn.recv(1) == b"x"
                assert time.perf_counter() - began >= 0.04
            data = bytes(range(256)) * 2048  # 512 KiB, many chunks
            sender = threading.Thread(target=conn.sendall, args=(data,))
            sender.start()
            got = bytearray()
            while len(got) < len(data):
                got += conn.recv(1 << 16)
            sender.join()
            assert bytes(got) == data
    finally:
        server.close()


def test_the_cap_holds_a_transfer_to_its_rate() -> None:
    server, port = echo_server()
    try:
        with (
            WanProxy([("127.0.0.1", port)], delay=0.001, rate_mbit=40, burst_kb=16) as proxy,
            socket.create_connection(("127.0.0.1", proxy.ports[0])) as conn,
        ):
            data = b"z" * (1 << 20)  # 1 MiB at 40 Mbit/s: at least 0.2 s each way
            began = time.perf_counter()
            sender = threading.Thread(target=conn.sendall, args=(data,))
            sender.start()
            received = 0
            while received < len(data):
                received += len(conn.recv(1 << 16))
            sender.join()
            assert time.perf_counter() - began >= 0.2
    finally:
        server.close()


def test_the_bucket_releases_a_burst_at_once_then_at_its_rate() -> None:
    bucket = TokenBucket(rate=1000.0, burst=500.0)
    assert bucket.release(500, now=10.0) == 10.0  # the burst
    assert bucket.release(1000, now=10.0) == pytest.approx(11.0)  # then a second per 1000 bytes
    assert bucket.release(1000, now=10.0) == pytest.approx(12.0)  # in order, never earlier
