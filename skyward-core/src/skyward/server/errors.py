"""What the pool server refuses: each error carries its HTTP status, its message says what to fix.

Raised anywhere below a route (`skyward.server.pools`, `.dispatch`, `.app`); one exception handler
of the app turns it into `{"error": ...}` with its status.
"""

from __future__ import annotations


class RequestError(Exception):
    """A request the server refuses: `status` is the HTTP status, the message says what to fix."""

    status = 400


class NotFound(RequestError):
    status = 404


class Conflict(RequestError):
    status = 409
