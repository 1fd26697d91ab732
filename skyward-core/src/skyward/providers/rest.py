"""JSON over HTTP: what the REST clients of the provider packages (skyward-runpod, skyward-verda,
skyward-novita) share, so that each writes only its endpoints and what its errors mean.

`JsonApi` holds one aiohttp session, made on first use (so on the loop that uses it: `sky ls`
and a price estimate run their own) with the client's headers and a per-call timeout, and closed
by `close()`. `send` makes one request and answers its status and body (JSON when it parses, else
the text); a server that does not answer is a `ProvisionError` (`unreachable` words it). What a
status means (a refused key, no capacity, gone) is each cloud's own reading.

aiohttp is a dependency of those packages, not of skyward-core: it is imported when a client
first sends, never by `import skyward`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from skyward.errors import ProvisionError

if TYPE_CHECKING:
    import aiohttp


class JsonApi:
    """One HTTP session for one API; `close()` when done. Credentials sent in `headers` stay out
    of `repr` (it names only the class and `url`)."""

    #: Whose API, in errors ("Verda: could not list instances: ...").
    cloud = "API"
    #: How long one call may take: a hung call must not hang the pool.
    timeout = 60.0

    def __init__(self, url: str, headers: Mapping[str, str]) -> None:
        self.url = url.rstrip("/")
        self._headers = dict(headers)
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self.url!r})"

    def _http(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers=self._headers, timeout=aiohttp.ClientTimeout(total=self.timeout)
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    async def send(self, method: str, url: str, what: str, **kwargs: Any) -> tuple[int, Any]:
        """`method url` (`kwargs` as aiohttp takes them): its status and its body, parsed JSON or
        the text; `what` names the call in the error when the server does not answer."""
        import aiohttp

        try:
            async with self._http().request(method, url, **kwargs) as response:
                text = await response.text()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ProvisionError(self.unreachable(what, exc)) from exc
        try:
            body: Any = json.loads(text) if text else None
        except ValueError:
            body = text
        return status, body

    def unreachable(self, what: str, error: BaseException) -> str:
        """The message of a call the server did not answer."""
        return f"{self.cloud}: could not {what}: {self.url} did not answer ({type(error).__name__}: {error})"
