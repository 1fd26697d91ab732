"""Output control routes each context's writes separately, so concurrent tasks never silence each other."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import cloudpickle
import pytest

import skyward.task.output as sky_output
from skyward.task import runtime
from skyward.task.instance import InstanceInfo
from skyward.task.output import (
    CallbackWriter,
    RoutingStream,
    install,
    redirect_output,
    silent,
    stderr,
    stdout,
)

HEAD = InstanceInfo(node=0, total_nodes=2)
NODE_1 = InstanceInfo(node=1, total_nodes=2)


@pytest.fixture(autouse=True)
def _no_instance_info() -> Iterator[None]:
    runtime.set_instance_info(None)
    yield
    runtime.set_instance_info(None)


class _Streams:
    """What reached the process's real stdout/stderr during the test (pytest's capsys, accumulated).

    Routers are installed inside the test body, not in a fixture: pytest swaps `sys.stdout` between
    a fixture's setup and the test call, which would throw a router installed earlier away.
    """

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys
        self._out = ""
        self._err = ""

    def _read(self) -> None:
        captured = self._capsys.readouterr()
        self._out += captured.out
        self._err += captured.err

    @property
    def out(self) -> str:
        self._read()
        return self._out

    @property
    def err(self) -> str:
        self._read()
        return self._err


@pytest.fixture
def streams(capsys: pytest.CaptureFixture[str]) -> _Streams:
    return _Streams(capsys)


def _speak(tag: str = "x") -> str:
    print(f"out {tag}")
    print(f"err {tag}", file=sys.stderr)
    return tag


# --- routers ---------------------------------------------------------------------------------------


def test_install_puts_routers_over_stdout_and_stderr(streams: _Streams) -> None:
    original = sys.stdout
    install()
    assert isinstance(sys.stdout, RoutingStream)
    assert isinstance(sys.stderr, RoutingStream)
    assert sys.stdout.default is original


def test_install_is_idempotent(streams: _Streams) -> None:
    original = sys.stdout
    first = install()
    assert install() == first
    assert first[0].default is original  # not a router over a router


def test_router_passes_writes_through_by_default(streams: _Streams) -> None:
    install()
    _speak()
    assert (streams.out, streams.err) == ("out x\n", "err x\n")


def test_router_reports_the_underlying_file_descriptor(monkeypatch: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryFile("w+") as real:
        monkeypatch.setattr(sys, "stdout", real)
        router, _ = install()
        assert router.fileno() == real.fileno()
        assert router.encoding == real.encoding


def test_router_is_not_a_tty_while_redirected(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdout", Terminal())
    router, _ = install()
    assert router.isatty()
    with redirect_output(lambda _line: None):
        assert not router.isatty()


def test_router_refuses_bytes_like_a_text_stream(streams: _Streams) -> None:
    router, _ = install()
    with pytest.raises(TypeError, match="str"):
        router.write(b"raw")  # type: ignore[arg-type]


def test_router_close_does_not_close_the_underlying_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    real = io.StringIO()
    monkeypatch.setattr(sys, "stdout", real)
    router, _ = install()
    router.close()
    assert not real.closed


def test_flush_written_flushes_the_underlying_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    flushes: list[str] = []

    class Recorded(io.StringIO):
        def flush(self) -> None:
            flushes.append(self.getvalue())

    monkeypatch.setattr(sys, "stdout", Recorded())
    router, _ = install()
    router.write("half a line")
    router.flush_written()
    assert flushes == ["half a line"]


def test_flush_written_delivers_what_a_sink_holds(streams: _Streams) -> None:
    router, _ = install()
    got: list[str] = []
    with redirect_output(got.append):
        router.write("50%")  # a partial line waits in the sink
        router.flush_written()
        assert got == ["50%"]
        router.flush_written()  # nothing new: the sink is not asked again
        assert got == ["50%"]


def test_uninstall_puts_the_wrapped_streams_back(streams: _Streams) -> None:
    original = sys.stdout, sys.stderr
    install()
    sky_output.uninstall()
    assert (sys.stdout, sys.stderr) == original


# --- redirect_output -------------------------------------------------------------------------------


def test_redirect_output_hands_printed_lines_to_the_callback(streams: _Streams) -> None:
    lines: list[str] = []
    with redirect_output(lines.append):
        print("captured")
        print("two", "words")
    assert lines == ["captured", "two words"]
    assert streams.out == ""


def test_redirect_output_captures_stderr_too(streams: _Streams) -> None:
    lines: list[str] = []
    with redirect_output(lines.append):
        _speak()
    assert lines == ["out x", "err x"]
    assert streams.err == ""


def test_redirect_output_yields_a_callback_writer_pair(streams: _Streams) -> None:
    lines: list[str] = []
    with redirect_output(lines.append) as (out, err):
        assert isinstance(out, CallbackWriter)
        assert isinstance(err, CallbackWriter)
        err.write("direct\n")
    assert lines == ["direct"]


def test_redirect_output_delivers_a_partial_line_on_exit(streams: _Streams) -> None:
    lines: list[str] = []
    with redirect_output(lines.append):
        print("no newline", end="")
        assert lines == []
    assert lines == ["no newline"]


def test_redirect_output_delivers_a_partial_line_on_flush(streams: _Streams) -> None:
    lines: list[str] = []
    with redirect_output(lines.append):
        print("50%", end="", flush=True)
        assert lines == ["50%"]


def test_redirect_output_without_lines_delivers_raw_writes(streams: _Streams) -> None:
    chunks: list[str] = []
    with redirect_output(chunks.append, lines=False):
        print("a")
    assert chunks == ["a", "\n"]


def test_output_returns_to_the_stream_after_redirect_output(streams: _Streams) -> None:
    with redirect_output(lambda _line: None):
        print("hidden")
    print("visible")
    assert streams.out == "visible\n"
    assert isinstance(sys.stdout, RoutingStream)  # nothing global was restored


def test_redirect_output_installs_routers_when_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stdout", plain)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    lines: list[str] = []
    with redirect_output(lines.append):
        print("captured")
    assert lines == ["captured"]
    assert plain.getvalue() == ""


def test_nested_redirect_output_uses_the_innermost(streams: _Streams) -> None:
    outer: list[str] = []
    inner: list[str] = []
    with redirect_output(outer.append):
        with redirect_output(inner.append):
            print("in")
        print("out")
    assert (outer, inner) == (["out"], ["in"])


def test_a_callback_that_prints_reaches_the_stream_instead_of_recursing(
    streams: _Streams,
) -> None:
    def echo(line: str) -> None:
        print(f"echo: {line}")

    with redirect_output(echo):
        print("hello")
    assert streams.out == "echo: hello\n"


def test_callback_writer_rejects_a_non_callable() -> None:
    with pytest.raises(TypeError, match="callable"):
        CallbackWriter("not callable")  # type: ignore[arg-type]


# --- silent ----------------------------------------------------------------------------------------


def test_silent_discards_both_streams(streams: _Streams) -> None:
    assert silent(_speak)("y") == "y"
    assert streams.out == streams.err == ""


def test_silent_with_parentheses_is_tolerated(streams: _Streams) -> None:
    silent()(_speak)()
    assert streams.out == ""


def test_silent_works_off_a_pool_too(streams: _Streams) -> None:
    assert runtime.current_instance_info() is None
    silent(_speak)()
    assert streams.out == ""


def test_output_resumes_after_a_silenced_call_raises(streams: _Streams) -> None:
    @silent
    def boom() -> None:
        print("hidden")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        boom()
    print("after")
    assert streams.out == "after\n"


def test_silent_inside_redirect_output_discards(streams: _Streams) -> None:
    lines: list[str] = []
    with redirect_output(lines.append):
        silent(_speak)()
        print("kept")
    assert lines == ["kept"]


# --- stdout / stderr -------------------------------------------------------------------------------


def test_stdout_only_head_prints_on_the_head(streams: _Streams) -> None:
    runtime.set_instance_info(HEAD)
    stdout(only="head")(_speak)()
    assert streams.out == "out x\n"


def test_stdout_only_head_discards_stdout_elsewhere(streams: _Streams) -> None:
    runtime.set_instance_info(NODE_1)
    stdout(only="head")(_speak)()
    assert streams.out == ""


def test_stdout_filter_leaves_stderr_alone(streams: _Streams) -> None:
    runtime.set_instance_info(NODE_1)
    stdout(only="head")(_speak)()
    assert streams.err == "err x\n"


def test_stderr_filter_leaves_stdout_alone(streams: _Streams) -> None:
    runtime.set_instance_info(NODE_1)
    stderr(only="head")(_speak)()
    assert (streams.out, streams.err) == ("out x\n", "")


def test_stdout_predicate_decides_per_node(streams: _Streams) -> None:
    task = stdout(only=lambda info: info.node < 2)(_speak)
    for node in range(4):
        runtime.set_instance_info(InstanceInfo(node=node, total_nodes=4))
        task(str(node))
    assert streams.out == "out 0\nout 1\n"


def test_predicate_receives_the_instance_info(streams: _Streams) -> None:
    seen: list[InstanceInfo] = []
    runtime.set_instance_info(NODE_1)
    stdout(only=lambda info: seen.append(info) or True)(_speak)()
    assert seen == [NODE_1]


def test_predicate_follows_the_logical_worker_index(streams: _Streams) -> None:
    runtime.set_instance_info(InstanceInfo(node=0, total_nodes=1, workers_per_node=2))
    task = stdout(only="head")(_speak)
    with runtime.use_worker_index(1):
        task()
    assert streams.out == ""


def test_stdout_filter_keeps_output_off_a_pool(streams: _Streams) -> None:
    stdout(only=lambda info: False)(_speak)()
    assert streams.out == "out x\n"


def test_stacked_stdout_and_stderr_filters_both_apply(streams: _Streams) -> None:
    runtime.set_instance_info(NODE_1)
    stdout(only="head")(stderr(only="head")(_speak))()
    assert streams.out == streams.err == ""


def test_stdout_filter_inside_redirect_output_keeps_capturing_where_allowed(
    streams: _Streams,
) -> None:
    runtime.set_instance_info(HEAD)
    lines: list[str] = []
    with redirect_output(lines.append):
        stdout(only="head")(_speak)()
    assert lines == ["out x", "err x"]


@pytest.mark.parametrize("only", ["all", "workers", ""])
def test_unknown_only_string_raises_value_error_naming_head(only: str) -> None:
    with pytest.raises(ValueError, match='"head"'):
        stdout(only=only)


@pytest.mark.parametrize("only", [0, None, ["head"]])
def test_non_callable_only_raises_type_error_naming_the_forms(only: Any) -> None:
    with pytest.raises(TypeError, match="predicate"):
        stderr(only=only)


def test_bare_stdout_decorator_raises_type_error_explaining_the_factory() -> None:
    with pytest.raises(TypeError, match="decorator factory"):
        stdout(_speak)


def test_stdout_without_only_raises_type_error() -> None:
    with pytest.raises(TypeError, match=r"only="):
        stdout()


# --- what the decorators preserve ------------------------------------------------------------------


def test_decorators_keep_the_function_metadata() -> None:
    def documented(a: int) -> int:
        """Docs."""
        return a

    for decorated in (silent(documented), stdout(only="head")(documented), stderr(only="head")(documented)):
        assert decorated.__name__ == "documented"
        assert decorated.__doc__ == "Docs."
        assert decorated.__wrapped__ is documented


def test_decorated_function_survives_cloudpickle(streams: _Streams) -> None:
    def local_task(n: int) -> int:
        print("hidden")
        return n * 2

    task = cloudpickle.loads(cloudpickle.dumps(stdout(only=lambda i: i.node == 0)(local_task)))
    runtime.set_instance_info(NODE_1)
    assert task(21) == 42
    assert streams.out == ""


def test_decorated_function_filters_in_another_process() -> None:
    def remote_task() -> str:
        import sys as remote_sys

        print("from stdout")
        print("from stderr", file=remote_sys.stderr)
        return "done"

    payload = cloudpickle.dumps(stdout(only="head")(remote_task))
    script = (
        "import sys, cloudpickle\n"
        "from skyward.task import runtime\n"
        "from skyward.task.instance import InstanceInfo\n"
        "from skyward.task.output import install\n"
        "install()\n"
        "runtime.set_instance_info(InstanceInfo(node=1, total_nodes=2))\n"
        "fn = cloudpickle.loads(sys.stdin.buffer.read())\n"
        "print('result', fn())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], input=payload, capture_output=True, timeout=60, check=True
    )
    assert proc.stdout.decode() == "result done\n"
    assert proc.stderr.decode() == "from stderr\n"


def test_generator_output_is_filtered_while_it_runs(streams: _Streams) -> None:
    @silent
    def numbers() -> Iterator[int]:
        for i in range(3):
            print(f"making {i}")
            yield i

    for n in numbers():
        print(f"got {n}")  # the consumer's prints are not the generator's: they stay
    assert streams.out == "got 0\ngot 1\ngot 2\n"


def test_generator_send_and_return_value_pass_through(streams: _Streams) -> None:
    def echo() -> Iterator[Any]:
        received = yield "ready"
        print("hidden")
        yield received
        return "finished"

    gen = silent(echo)()
    assert next(gen) == "ready"
    assert gen.send("ping") == "ping"
    with pytest.raises(StopIteration) as stop:
        next(gen)
    assert stop.value.value == "finished"
    assert streams.out == ""


def test_generator_close_runs_its_cleanup_filtered(streams: _Streams) -> None:
    def guarded() -> Iterator[int]:
        try:
            yield 1
        finally:
            print("cleanup")

    gen = silent(guarded)()
    next(gen)
    gen.close()
    assert streams.out == ""


def test_generator_throw_reaches_the_generator(streams: _Streams) -> None:
    def catcher() -> Iterator[str]:
        try:
            yield "first"
        except KeyError:
            print("hidden")
            yield "caught"

    gen = silent(catcher)()
    next(gen)
    assert gen.throw(KeyError("k")) == "caught"
    assert streams.out == ""


def test_async_function_is_filtered(streams: _Streams) -> None:
    async def chatty() -> int:
        print("hidden")
        await asyncio.sleep(0)
        print("hidden too")
        return 7

    assert asyncio.run(silent(chatty)()) == 7
    assert streams.out == ""


def test_async_generator_is_filtered_while_it_runs(streams: _Streams) -> None:
    async def ticks() -> Any:
        for i in range(2):
            print("hidden")
            yield i

    async def consume() -> list[int]:
        got = []
        async for i in silent(ticks)():
            print(f"got {i}")
            got.append(i)
        return got

    assert asyncio.run(consume()) == [0, 1]
    assert streams.out == "got 0\ngot 1\n"


# --- @sky.function-like wrappers -------------------------------------------------------------------


@attrs.frozen
class _AttrsFunction:
    """Stands in for the object `@sky.function` returns: calling it only builds a pending task."""

    fn: Callable[..., Any]

    def __call__(self, *args: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return self.fn, args


@dataclasses.dataclass(frozen=True)
class _DataclassFunction:
    fn: Callable[..., Any]

    def __call__(self, *args: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return self.fn, args


class _PlainFunction:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return self.fn, args


@pytest.mark.parametrize("wrapper_type", [_AttrsFunction, _DataclassFunction, _PlainFunction])
def test_decorator_above_a_sky_function_filters_the_remote_run(wrapper_type: type, streams: _Streams) -> None:
    decorated = stdout(only="head")(wrapper_type(_speak))
    assert isinstance(decorated, wrapper_type)
    fn, args = decorated("remote")  # what the client ships
    runtime.set_instance_info(NODE_1)  # ... and the worker runs
    assert fn(*args) == "remote"
    assert streams.out == ""


def test_decorator_above_a_sky_function_leaves_the_original_alone(
    streams: _Streams,
) -> None:
    original = _AttrsFunction(_speak)
    silent(original)
    assert original.fn is _speak


def test_decorator_below_a_sky_function_filters_the_remote_run(
    streams: _Streams,
) -> None:
    fn, args = _AttrsFunction(stdout(only="head")(_speak))("remote")
    runtime.set_instance_info(NODE_1)
    fn(*args)
    assert streams.out == ""


# --- concurrency -----------------------------------------------------------------------------------


def _run_in_threads(*targets: Callable[[], None]) -> None:
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)


def test_a_silenced_thread_does_not_silence_its_neighbour(streams: _Streams) -> None:
    barrier = threading.Barrier(2)

    @silent
    def quiet() -> None:
        for i in range(50):
            barrier.wait(timeout=5)  # both threads write in lockstep
            print(f"quiet {i}")

    def loud() -> None:
        for i in range(50):
            barrier.wait(timeout=5)
            print(f"loud {i}")

    _run_in_threads(quiet, loud)
    assert streams.out.splitlines() == [f"loud {i}" for i in range(50)]


def test_concurrent_redirects_capture_only_their_own_thread(streams: _Streams) -> None:
    barrier = threading.Barrier(3)
    captured: dict[str, list[str]] = {"a": [], "b": []}

    def capture(name: str) -> Callable[[], None]:
        def run() -> None:
            with redirect_output(captured[name].append):
                for i in range(30):
                    barrier.wait(timeout=5)
                    print(f"{name} {i}")

        return run

    @silent
    def quiet() -> None:
        for i in range(30):
            barrier.wait(timeout=5)
            print(f"quiet {i}")

    _run_in_threads(capture("a"), capture("b"), quiet)
    assert captured["a"] == [f"a {i}" for i in range(30)]
    assert captured["b"] == [f"b {i}" for i in range(30)]
    assert streams.out == ""


def test_head_and_non_head_logical_workers_print_side_by_side(
    streams: _Streams,
) -> None:
    runtime.set_instance_info(InstanceInfo(node=0, total_nodes=1, workers_per_node=2))
    barrier = threading.Barrier(2)

    @stdout(only="head")
    def step(worker: int) -> None:
        for i in range(20):
            barrier.wait(timeout=5)
            print(f"worker {worker} step {i}")

    def as_worker(worker: int) -> Callable[[], None]:
        def run() -> None:
            with runtime.use_worker_index(worker):
                step(worker)

        return run

    _run_in_threads(as_worker(0), as_worker(1))
    assert streams.out.splitlines() == [f"worker 0 step {i}" for i in range(20)]
