"""A client sends a server's token to that server only (skyward/client/server_home.py, `Token`)."""

from __future__ import annotations

import socket
import threading

from server_support import Server


def test_the_local_servers_token_is_not_sent_to_another_url(server: Server) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def accept() -> None:
        listener.settimeout(20)
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        connection.settimeout(3)
        try:
            while data := connection.recv(65536):
                received.append(data)
        except OSError:
            pass
        connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        done = server.sky("compute", "list", "--url", f"http://127.0.0.1:{listener.getsockname()[1]}")
    finally:
        thread.join(10)
        listener.close()
    assert server.token.encode() not in b"".join(received)
    assert done.returncode == 1 and "SKYWARD_SERVER_TOKEN" in done.stderr


def test_the_local_servers_token_still_goes_to_its_url_given_explicitly(server: Server) -> None:
    done = server.sky("compute", "list", "--url", server.url, "--json")
    assert done.returncode == 0, done.stderr
