"""Which pool `>> sky` means: the innermost active pool of this context, else of this process.

The pool registers itself here when its block is entered (`skyward.client.pool`), and the
operators of `skyward.function` look it up: both import this module, which imports nothing of
ours, so neither imports the other's package (see "Layers" in docs/architecture.md).

A ContextVar gives each thread/task its own answer; the process-wide stack is the fallback for
threads started inside a pool block (joblib's, a user's ThreadPoolExecutor), which do not inherit
context variables.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any

_current: contextvars.ContextVar[Any] = contextvars.ContextVar("skyward_pool", default=None)
_stack: list[Any] = []
_lock = threading.Lock()


def current_pool() -> Any:
    pool = _current.get()
    if pool is not None:
        return pool
    with _lock:
        return _stack[-1] if _stack else None


def push(pool: Any) -> contextvars.Token[Any]:
    with _lock:
        _stack.append(pool)
    return _current.set(pool)


def pop(pool: Any, token: contextvars.Token[Any] | None) -> None:
    with _lock:
        if pool in _stack:
            _stack.remove(pool)
    if token is not None:
        try:
            _current.reset(token)
        except ValueError:  # exited from another context: just clear it
            _current.set(None)
