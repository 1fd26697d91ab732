"""A link that can be cut: a TCP proxy on 127.0.0.1 in front of one test sshd.

`cut(seconds)` drops every connection through it (both sides see them end) and refuses new ones
until `restore()`, or for `seconds` when given: a laptop's network gone and back. `stall(seconds)`
keeps every connection open but carries nothing either way until `flow()`: a link gone silent,
which neither end sees close (Wi-Fi out of range, a NAT that forgot the flow). The pool logs in
through the proxy's port: its known_hosts file names the sshd's key under that port, so the host
key is verified on every login, the ones after a cut included.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from ssh_hosts import SSHHosts, SSHServer


class CuttableLink:
    def __init__(self, server: SSHServer, folder: Path) -> None:
        self.server = server
        self.port = 0
        self.known_hosts = folder / "known_hosts_via_link"
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._timer: threading.Timer | None = None
        #: Cleared while the link is stalled: the pumps hold what they read.
        self._flowing = threading.Event()
        self._flowing.set()
        #: How many connections went through (a login after a cut is a new one).
        self.connections = 0
        self._listen()
        key = server.host_key.export_public_key().decode().strip()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {key}\n")

    @property
    def target(self) -> str:
        return f"{self.server.user}@127.0.0.1:{self.port}"

    def provider(self, hosts: SSHHosts, **kwargs: Any) -> Any:
        """`sky.SSH` to the server behind this link."""
        import skyward as sky

        return sky.SSH(
            hosts=[self.target],
            key_file=str(hosts.key_file),
            known_hosts=str(self.known_hosts),
            python=sys.executable,
            **kwargs,
        )

    def _listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        self.port = listener.getsockname()[1]
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by a cut
            try:
                upstream = socket.create_connection((self.server.address, self.server.port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
                self.connections += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(256 * 1024):
                self._flowing.wait()
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cut(self, seconds: float | None = None) -> None:
        """Drop every connection and refuse new ones (for `seconds`, or until `restore()`)."""
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, []
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes its accept(), and refuses from now on
            listener.close()
        for sock in conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes its pump threads; both ends see the end
            with contextlib.suppress(OSError):
                sock.close()
        if seconds is not None:
            self._timer = threading.Timer(seconds, self.restore)
            self._timer.daemon = True
            self._timer.start()

    def stall(self, seconds: float | None = None) -> None:
        """Carry nothing either way, closing nothing (for `seconds`, or until `flow()`)."""
        self._flowing.clear()
        if seconds is not None:
            self._timer = threading.Timer(seconds, self.flow)
            self._timer.daemon = True
            self._timer.start()

    def flow(self) -> None:
        """Carry again what the stall held, and what comes after it."""
        self._flowing.set()

    def restore(self, to: SSHServer | None = None) -> None:
        """Accept connections again: to the same server, or to `to` (another machine, which now
        answers at this address: its host key is not the one the pool trusts here)."""
        with self._lock:
            if to is not None:
                self.server = to
            if self._listener is not None:
                return
        self._listen()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.cut()
        self.flow()  # pump threads held by a stall see their sockets closed and end

    def __enter__(self) -> CuttableLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
