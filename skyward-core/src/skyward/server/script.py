"""What `sky compute run` runs on a node: a script as `__main__`, its output streamed as it prints.

The task is a generator, so the pool streams what it yields to the server as the worker produces
it (see `Pool.run` and `RemoteGenerator`). The script itself runs on a thread of its own, started
in a copy of the task's context, with that context's stdout and stderr routed to a queue
(`skyward.task.output_routing.route`): only this script's prints are captured, not those of a
task running beside it on the same worker. The generator drains the queue, yielding
`("stdout" | "stderr", text)` chunks, and last `("exit", code)`.

The exit code is the script's own: 0 when it returns, `SystemExit.code` when it exits (a string
code is printed to stderr and gives 1, as Python does), and 1 for an uncaught exception, whose
traceback is printed to stderr starting at the script's own frames, so the user reads their own
lines and not this module's or `runpy`'s.

`sys.argv` is process-wide: two scripts started at the same moment on one worker would see each
other's; the server runs one script per node at a time for that reason (see `skyward.server.pools`).

Only the standard library and `skyward.task` are imported, so the function is shipped by reference
and found on every node that has skyward installed.
"""

from __future__ import annotations

import contextvars
import os
import queue
import runpy
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator
from typing import Any

from skyward.task.output_routing import CallbackWriter, route

#: How long the generator waits for output before looking whether the script finished.
_POLL_SECONDS = 0.05
#: The most characters one yielded chunk carries (larger prints are split).
_CHUNK = 64 * 1024


def exit_code(error: SystemExit) -> tuple[int, str | None]:
    """The process exit code `SystemExit(code)` means, and the text Python would print for it."""
    code = error.code
    if code is None:
        return 0, None
    if isinstance(code, int):
        return code, None
    return 1, str(code)


def user_traceback(error: BaseException, script: str, shown: str) -> str:
    """The traceback of `error` from the script's first frame on (runpy's and ours left out), the
    script's file called `shown` (the name the user gave it) rather than its temporary path."""
    tb = error.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script:
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(error), error, tb or error.__traceback__))
    return text.replace(f'File "{script}"', f'File "{shown}"')


def _execute(path: str, name: str, argv: list[str], put: Any) -> int:
    """Run the file at `path` as `__main__`; its exit code (printing what Python would print)."""
    previous = sys.argv
    sys.argv = [name, *argv]
    try:
        runpy.run_path(path, run_name="__main__")
        return 0
    except SystemExit as error:
        code, text = exit_code(error)
        if text is not None:
            put("stderr", text + "\n")
        return code
    except BaseException as error:  # noqa: BLE001 - the script's failure is its exit code and traceback
        put("stderr", user_traceback(error, path, name))
        return 1
    finally:
        sys.argv = previous
        sys.stdout.flush()
        sys.stderr.flush()


def run_script(name: str, source: str, argv: list[str]) -> Iterator[tuple[str, Any]]:
    """Write `source` to a file called `name` in a fresh folder and run it (see the module's doc)."""
    chunks: queue.Queue[tuple[str, Any]] = queue.Queue()

    def put(stream: str, text: str) -> None:
        chunks.put((stream, text))

    folder = tempfile.mkdtemp(prefix="sky-script-")
    path = os.path.abspath(os.path.join(folder, os.path.basename(name) or "script.py"))
    with open(path, "w", encoding="utf-8") as file:
        file.write(source)

    def body() -> None:
        out = CallbackWriter(lambda text: put("stdout", text), lines=False, name="<stdout>")
        err = CallbackWriter(lambda text: put("stderr", text), lines=False, name="<stderr>")
        code = 1
        try:
            with route(stdout=out, stderr=err):
                code = _execute(path, os.path.basename(path), argv, put)
        finally:
            chunks.put(("exit", code))

    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(body,), name=f"skyward-run-{name}", daemon=True)
    thread.start()
    try:
        while True:
            try:
                stream, value = chunks.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                continue
            if stream == "exit":
                yield "exit", value
                return
            text = str(value)
            # Gather what else is already waiting on the same stream, so a chatty script costs few yields.
            while len(text) < _CHUNK:
                try:
                    more_stream, more = chunks.get_nowait()
                except queue.Empty:
                    break
                if more_stream != stream:
                    yield stream, text
                    stream, text = more_stream, str(more)
                    if stream == "exit":
                        yield "exit", more
                        return
                    continue
                text += str(more)
            for start in range(0, len(text), _CHUNK):
                yield stream, text[start:start + _CHUNK]
    finally:
        thread.join(timeout=1.0)
        try:
            os.unlink(path)
            os.rmdir(folder)
        except OSError:
            pass
