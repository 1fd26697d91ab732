"""A client of the pool server over the standard library's `http.client`: JSON calls and the
streamed output of a run, read line by line as the server sends it (chunked transfer).

The CLI uses it, and so can any program: `Client(server_url(), server_token()).pools()` (both
from `skyward.client.server_home`). It needs only the standard library, so talking to a server
costs no import of uvicorn; `call_pickled` is what an attached pool (`skyward.client.attach`) sends.

A token bound to a server (`server_home.Token`, what `server_token()` returns) is sent to that
server only: to any other URL the request fails after the connection is made (so an unreachable
server still reads as one) and before a byte of it is sent.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import ssl
import urllib.parse
from collections.abc import Iterator
from typing import Any, BinaryIO

from skyward.errors import SkywardError


class ServerError(SkywardError):
    """The server refused a request (`status` is the HTTP status) or could not be reached."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Client:
    """One server at `url`, every request with `token`."""

    def __init__(self, url: str, token: str, timeout: float = 30.0, context: ssl.SSLContext | None = None
                 ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ServerError(f"{url!r} is not a server URL; expected e.g. http://127.0.0.1:8470")
        self.url = url
        self.token = token
        self.timeout = timeout
        self.context = context
        self._parsed = parsed

    def _connect(self, timeout: float | None) -> http.client.HTTPConnection:
        if self._parsed.scheme == "https":
            from skyward.client.server_home import tls_context

            context = self.context or tls_context(self.url)
            return http.client.HTTPSConnection(
                self._parsed.hostname or "", self._parsed.port, timeout=timeout, context=context
            )
        return http.client.HTTPConnection(self._parsed.hostname or "", self._parsed.port, timeout=timeout)

    def _check_token(self) -> None:
        """Refuse to send a token bound to another server (see the module's doc)."""
        from skyward.client.server_home import TOKEN_ENV, same_server

        bound = getattr(self.token, "url", None)
        if bound is None or same_server(bound, self.url):
            return
        owner = f"the server at {bound}" if bound else "a server that is no longer running"
        raise ServerError(
            f"not sending the token of {owner} to {self.url}: a token goes only to the server it came "
            f"from. Set {TOKEN_ENV} to the token of the server at {self.url}"
        )

    def _send(self, method: str, path: str, body: Any = None, timeout: float | None = None
              ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        connection = self._connect(self.timeout if timeout is None else timeout)
        try:
            connection.connect()
        except OSError as error:
            connection.close()
            raise ServerError(f"cannot reach the Skyward server at {self.url} ({error}); "
                              "is it running? (`sky server status`)") from None
        try:
            self._check_token()
        except ServerError:
            connection.close()
            raise
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        payload: Any = None
        if isinstance(body, bytes):
            payload = body
            headers["Content-Type"] = "application/octet-stream"
        elif hasattr(body, "read"):  # a file: sent in blocks as http.client reads it
            payload = body
            headers["Content-Type"] = "application/octet-stream"
            headers["Content-Length"] = str(os.fstat(body.fileno()).st_size - body.tell())
        elif body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
        except OSError as error:
            connection.close()
            raise ServerError(f"cannot reach the Skyward server at {self.url} ({error}); "
                              "is it running? (`sky server status`)") from None
        if response.status >= 400:
            text = response.read().decode(errors="replace")
            connection.close()
            try:
                message = json.loads(text).get("error", text)
            except ValueError:
                message = text
            raise ServerError(f"{message} (HTTP {response.status})", response.status)
        return connection, response

    def call(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        connection, response = self._send(method, path, body, timeout)
        try:
            return json.loads(response.read())
        finally:
            connection.close()

    def call_pickled(self, path: str, data: bytes) -> bytes:
        """POST `data` (a pickle) and return the response's bytes; no time limit (a task's own)."""
        connection, response = self._send("POST", path, data, timeout=None)
        try:
            return response.read()
        finally:
            connection.close()

    def frames(self, path: str, data: bytes | None = None) -> FrameStream:
        """POST `data` (GET without it) and read the answer as length-prefixed frames, each as soon
        as it arrives. The request is sent now; the frames are read as the stream is iterated."""
        connection, response = self._send("GET" if data is None else "POST", path, data, timeout=None)
        return FrameStream(self.url, connection, response)

    def stream(self, method: str, path: str, body: Any = None) -> Iterator[dict[str, Any]]:
        """The JSON lines of a streamed response, each as soon as it arrives."""
        connection, response = self._send(method, path, body, timeout=None)
        try:
            for line in response:
                if line.strip():
                    yield json.loads(line)
        finally:
            connection.close()

    # -- the API -------------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return dict(self.call("GET", "/v1/server"))

    def shutdown(self) -> None:
        self.call("POST", "/v1/server/shutdown")

    def pools(self) -> list[dict[str, Any]]:
        return list(self.call("GET", "/v1/pools")["pools"])

    def create(self, name: str, config: dict[str, Any]) -> dict[str, Any]:
        return dict(self.call("POST", "/v1/pools", {"name": name, "config": config}))

    def get(self, name: str, wait: float = 0.0) -> dict[str, Any]:
        query = f"?wait={wait}" if wait > 0 else ""
        return dict(self.call("GET", f"/v1/pools/{_quote(name)}{query}", timeout=wait + self.timeout))

    def delete(self, name: str) -> None:
        self.call("DELETE", f"/v1/pools/{_quote(name)}", timeout=None)

    def run(self, name: str, script: str, source: str, argv: list[str], node: str = "head"
            ) -> Iterator[dict[str, Any]]:
        body = {"script": script, "source": source, "argv": argv, "node": node}
        return self.stream("POST", f"/v1/pools/{_quote(name)}/run", body)

    def upload(self, name: str, archive: BinaryIO, destination: str, node: str) -> dict[str, list[str]]:
        """Send the open tar.gz file `archive` (read in blocks, never whole) to be unpacked."""
        query = urllib.parse.urlencode({"destination": destination, "node": node})
        path = f"/v1/pools/{_quote(name)}/files?{query}"
        connection, response = self._send("PUT", path, archive, timeout=None)
        try:
            return dict(json.loads(response.read())["written"])
        finally:
            connection.close()

    def download(self, name: str, path: str, node: str, chunk: int = 1 << 20) -> Iterator[bytes]:
        """`path` on the node as a tar.gz, in chunks of at most `chunk` bytes as they arrive (the
        request is sent now: a missing path raises here)."""
        query = urllib.parse.urlencode({"path": path, "node": node})
        connection, response = self._send("GET", f"/v1/pools/{_quote(name)}/files?{query}", timeout=None)

        def chunks() -> Iterator[bytes]:
            try:
                while data := response.read(chunk):
                    yield data
            finally:
                connection.close()

        return chunks()

    def view(self, name: str) -> dict[str, Any]:
        return dict(self.call("GET", f"/v1/pools/{_quote(name)}/view"))

    def history(self, name: str) -> dict[str, Any]:
        return dict(self.call("GET", f"/v1/pools/{_quote(name)}/history"))

    def runs(self, name: str) -> list[dict[str, Any]]:
        return list(self.call("GET", f"/v1/pools/{_quote(name)}/runs")["runs"])


class FrameStream:
    """A response of length-prefixed frames (4 bytes big-endian, then the frame), read lazily;
    `close()` ends it from any thread (a reader blocked on it gets the end of the stream)."""

    def __init__(self, url: str, connection: http.client.HTTPConnection, response: http.client.HTTPResponse
                 ) -> None:
        self.url, self._connection, self._response = url, connection, response

    def __iter__(self) -> Iterator[bytes]:
        try:
            while True:
                head = self._response.read(4)
                if len(head) < 4:
                    return
                size = int.from_bytes(head, "big")
                frame = self._response.read(size)
                if len(frame) < size:
                    raise ServerError(f"the Skyward server at {self.url} cut a streamed answer short")
                yield frame
        except (OSError, ValueError, http.client.HTTPException):
            return  # closed under us (`close`), or the server went away
        finally:
            self._connection.close()

    def close(self) -> None:
        sock = self._connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._connection.close()


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")
