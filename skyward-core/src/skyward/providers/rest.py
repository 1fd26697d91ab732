"""JSON over HTTP: what the REST clients of the provider packages share, so that each writes
only its endpoints and the words its API uses.

`JsonApi` holds one aiohttp session, made on first use (so on the loop that uses it: `sky ls`
and a price estimate run their own) with the client's headers and a per-call timeout, and closed
by `close()`. `send` makes one request and answers its status and body (JSON when it parses, else
the text); a server that does not answer is a `ProvisionError` (`unreachable` words it).

`call` is `send` with the answer read the one way every cloud needs (`ApiErrors.reading`):

- a refused credential (401, 403) is `Refused` (a `ProvisionError`) naming where the credentials
  come from;
- too many requests (429) is `RateLimited`, and `call` waits it out (`skyward.retry`);
- a thing that is not there (404, 410, or the API's "not found" words) is `Gone`, or None with
  `gone_ok=True` (a deletion of what is already deleted);
- no capacity (503, or the API's "sold out" words) is a `CapacityError`, which the pool retries
  and which makes `CloudProvider.first_created` try the next offer;
- anything else a `ProvisionError` quoting the API's message.

`delete_retrying` deletes a machine through `skyward.retry`: a passing failure is tried again,
and one that lasts says where to delete it by hand (it still bills).

aiohttp is a dependency of the packages that use `JsonApi`, not of skyward-core: it is imported
when a client first sends, never by `import skyward`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from skyward.errors import CapacityError, ProvisionError
from skyward.retry import backoff, retry

if TYPE_CHECKING:
    import aiohttp

#: Statuses that mean "not there" and "no capacity right now", whatever the API.
GONE_STATUSES = (404, 410)
CAPACITY_STATUSES = (503,)
#: Fields an API's error body carries its message in, first found wins.
MESSAGE_FIELDS = ("message", "error", "detail", "reason", "msg")
#: How `call` waits out a 429: a few doubling waits.
RATE_LIMIT_WAITS = (1.0, 2.0, 4.0, 8.0)


class Gone(ProvisionError):
    """The thing asked about does not exist (any more)."""


class Refused(ProvisionError):
    """The API refused the credential (HTTP 401, 403): the fix is the credential, not a retry."""


class RateLimited(ProvisionError):
    """The API asks to slow down (HTTP 429); `call` retries it."""


def message_of(body: Any) -> str:
    """An API's error text: a GraphQL `errors` list's first, a `MESSAGE_FIELDS` field, or the text."""
    if isinstance(body, dict):
        errors = body.get("errors")
        if isinstance(errors, list) and errors:
            first = errors[0]
            return str(first.get("message", first)) if isinstance(first, dict) else str(first)
        for field in MESSAGE_FIELDS:
            if body.get(field):
                return str(body[field])
        return ""
    return str(body or "")[:300]


@attrs.frozen(kw_only=True)
class ApiErrors:
    """How one cloud's API says what went wrong: its name, where its credentials come from, and
    the phrases of its "not found" and "no capacity" answers (matched lower-case)."""

    cloud: str
    #: The fix for a refused credential: "check NOVITA_API_KEY (or Novita(api_key=...))".
    credentials: str
    #: What the credential is called ("the API key").
    credential: str = "the credentials"
    capacity_phrases: tuple[str, ...] = ()
    gone_phrases: tuple[str, ...] = ("not found", "not exist")
    #: Phrase -> what to do, for the cloud's other known refusals ("insufficient_funds": add funds).
    advice: Mapping[str, str] = attrs.field(factory=dict)

    def reading(self, status: int, body: Any, what: str) -> ProvisionError:
        """The error for an answer with `status` >= 400 to the call that does `what`; an API that
        wraps its code and message in `{"error": {...}}` (Lambda's) is read inside it."""
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            body = body["error"]
        message = message_of(body) or f"HTTP {status}"
        code = str(body.get("code") or "") if isinstance(body, dict) else ""
        words = f"{code} {message}".lower()
        if status in (401, 403) or code == "unauthorized_request":
            return Refused(
                f"{self.cloud} refused {self.credential} ({status}: {message}) when asked to {what}: "
                f"{self.credentials}"
            )
        if status == 429:
            return RateLimited(f"{self.cloud} asks to slow down when asked to {what}: {message}")
        if status in GONE_STATUSES or code == "not_found" or any(p in words for p in self.gone_phrases):
            return Gone(f"{self.cloud}: could not {what}: {message}")
        if status in CAPACITY_STATUSES or any(p in words for p in self.capacity_phrases):
            return CapacityError(f"{self.cloud} has no capacity to {what}: {message}")
        for phrase, fix in self.advice.items():
            if phrase in words:
                return ProvisionError(f"{self.cloud}: could not {what}: {message}; {fix}")
        return ProvisionError(f"{self.cloud} could not {what} ({status}): {message}")


class JsonApi:
    """One HTTP session for one API; `close()` when done. Credentials sent in `headers` stay out
    of `repr` (it names only the class and `url`)."""

    #: How the API's errors read (a subclass sets its own).
    errors = ApiErrors(cloud="API", credentials="check the API's credentials")
    #: How long one call may take: a hung call must not hang the pool.
    timeout = 60.0

    def __init__(self, url: str, headers: Mapping[str, str]) -> None:
        self.url = url.rstrip("/")
        self._headers = dict(headers)
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self.url!r})"

    @property
    def cloud(self) -> str:
        return self.errors.cloud

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

    async def call(self, method: str, path: str, what: str, *, gone_ok: bool = False, **kwargs: Any) -> Any:
        """`method` on `path` (under `url`, or a whole URL): the body of a good answer; a bad one
        raised as `errors` reads it (see the module), None for `Gone` when `gone_ok`. A 429 is
        waited out. `headers()` adds per-call headers (a bearer token that expires)."""
        url = path if "://" in path else self.url + path
        given = kwargs.pop("headers", {})

        async def once() -> Any:
            headers = {**await self.headers(), **given}
            extra = {"headers": headers} if headers else {}
            status, body = await self.send(method, url, what, **extra, **kwargs)
            if status >= 400:
                raise self.errors.reading(status, body, what)
            return body

        try:
            return await retry(once, retry_on=RateLimited, delays=RATE_LIMIT_WAITS)
        except Gone:
            if gone_ok:
                return None
            raise

    async def create(self, path: str, what: str, *, within: str = "", **kwargs: Any) -> tuple[str, Any]:
        """`POST path`: the new thing's id (`{"id": ...}`, `{within: {"id": ...}}` for an API
        that wraps what it made in its kind's name, or the id as the whole text) and the body; an
        answer without one is a `ProvisionError`, since nothing could delete it later."""
        body = await self.call("POST", path, what, **kwargs)
        if within and isinstance(body, dict) and isinstance(body.get(within), dict):
            body = body[within]
        if isinstance(body, dict):
            found = str(body.get("id") or "")
        else:
            found = "" if isinstance(body, list) else str(body or "").strip().strip('"')
        if not found:
            raise ProvisionError(f"{self.cloud} answered the call to {what} without an id: {body!r}")
        return found, body

    async def headers(self) -> dict[str, str]:
        """Headers for one call beyond the session's: none by default."""
        return {}

    def unreachable(self, what: str, error: BaseException) -> str:
        """The message of a call the server did not answer."""
        return f"{self.cloud}: could not {what}: {self.url} did not answer ({type(error).__name__}: {error})"


async def delete_retrying(
    delete: Callable[[], Awaitable[object]],
    *,
    cloud: str,
    what: str,
    where: str,
    delay: float,
    attempts: int = 4,
) -> None:
    """`delete()`, tried `attempts` times with doubling waits from `delay` while it fails for a
    passing reason; what is `Gone` already is done. A lasting failure is a `ProvisionError` that
    says where to delete `what` by hand (`where`: "the Verda console"), since it still bills."""
    log = structlog.get_logger("skyward.providers")

    async def attempt() -> None:
        try:
            await delete()
        except Gone:
            return

    def logged(tries: int, exc: BaseException, wait: float) -> None:
        log.info("skyward.delete_retry", cloud=cloud, what=what, attempt=tries, error=str(exc), wait=wait)

    try:
        waits = backoff(delay, retries=attempts - 1)
        await retry(attempt, retry_on=ProvisionError, delays=waits, on_retry=logged)
    except ProvisionError as exc:
        raise ProvisionError(
            f"{cloud}: could not delete {what}: {exc}; delete it in {where} to stop billing"
        ) from exc
