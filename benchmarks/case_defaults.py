"""Case 10, defaults: what the default console and logging cost, against `console=False, logging=False`.

    python benchmarks/case_defaults.py [--quick]        (or: python benchmarks/run.py --only defaults)

A user runs `sky.Compute(provider=sky.Local(), nodes=2)` with nothing else: the console is on (the
rich one on a terminal, the log one when output goes to a file) and so is the log file
(`~/.skyward/logs/skyward.log`, written as a user's would be). Three configurations, each in its
own fresh interpreter so the console sees the kind of stdout and stderr it would see for a user:

- piped: default options, stdout and stderr appended to a file (the log console);
- terminal: default options, stdout and stderr on a pseudo-terminal (the rich console, its live
  area drawn at 4 Hz); this process reads the terminal's other side all along, so it never blocks;
- quiet: `console=False, logging=False`, output to a file (the peer adapters' configuration).

The three pools run side by side and take turns (ten turns of a tenth of the sequential `>>`
no-ops each, then five turns of one `pool.map` of the no-ops each, the order rotated every
repetition), so the ratios default/quiet come from the same seconds: this machine's speed drifts
too much over a minute for configurations measured one after the other. A repetition's tasks/s is
that of its median map (a map of 5,000 lasts under 0.1 s here, and the machine is shared: one map
alone is noise). Only Skyward runs it.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, BinaryIO

from common import Config, Figure, percentile

NAME = "defaults"
PEERS = ("Skyward",)
HERE = Path(__file__).resolve().parent
MODES = ("piped", "terminal", "quiet")
DEFAULTS = ("piped", "terminal")
#: How many turns the sequential calls of one repetition are split into.
TURNS = 10
#: How many maps each configuration runs per repetition, in turns.
MAP_TURNS = 5
#: How long a child may take to start its pool and warm it up, or to answer one request.
PATIENCE_S = 120.0


def sizes(config: Config) -> tuple[int, int]:
    """Sequential calls per repetition and tasks per map."""
    return config.pick(1000, 200), config.pick(5000, 1000)


def figures() -> list[Figure]:
    rows = []
    for mode in MODES:
        rows.append(Figure(f"defaults.p50_{mode}", f"defaults: no-op p50, {mode} (us)", "us", "lower"))
    for mode in MODES:
        rows.append(Figure(f"defaults.tps_{mode}", f"defaults: map tasks/s, {mode}", "tasks/s", "higher"))
    for mode in DEFAULTS:
        rows.append(
            Figure(f"defaults.p50_{mode}_vs_quiet", f"defaults: p50 {mode} / quiet (x)", "x", "lower")
        )
        rows.append(
            Figure(f"defaults.tps_{mode}_vs_quiet", f"defaults: tasks/s {mode} / quiet (x)", "x", "higher")
        )
    return rows


# -- the parent: three children, in turns ------------------------------------------------------------------


class Child:
    """One configuration's interpreter: asked for work over a pipe, answering over another."""

    def __init__(self, mode: str, folder: Path, stack: ExitStack) -> None:
        self.mode = mode
        self.output = folder / f"{mode}.out"
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        command = [
            sys.executable, str(Path(__file__).resolve()), "--child", mode,
            "--requests", str(to_child_r), "--answers", str(from_child_w),
        ]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
        self._drain: threading.Thread | None = None
        self._tail = bytearray()
        if mode == "terminal":
            env.setdefault("TERM", "xterm-256color")
            master, slave = pty.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
            out: Any = slave
        else:
            out = stack.enter_context(self.output.open("ab"))
        try:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
                pass_fds=(to_child_r, from_child_w),
            )
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
            if mode == "terminal":
                os.close(slave)
        if mode == "terminal":
            self._drain = threading.Thread(target=self._read_terminal, args=(master,), daemon=True)
            self._drain.start()
        self._requests: BinaryIO = os.fdopen(to_child_w, "wb", buffering=0)
        self._answers: BinaryIO = os.fdopen(from_child_r, "rb")
        stack.callback(self.close)

    def _read_terminal(self, master: int) -> None:
        """Read the terminal's other side until the child closes it, keeping the last few KB."""
        try:
            while chunk := os.read(master, 65536):
                self._tail += chunk
                del self._tail[:-8192]
        except OSError:  # EIO: every holder of the terminal has closed it
            pass
        finally:
            os.close(master)

    def ask(self, request: dict[str, Any]) -> Any:
        self._requests.write(json.dumps(request).encode() + b"\n")
        return self.answer()

    def answer(self) -> Any:
        line = self._answers.readline()
        if not line:
            self.process.wait(timeout=PATIENCE_S)
            raise RuntimeError(f"the {self.mode} child exited ({self.process.returncode}):\n{self.tail()}")
        return json.loads(line)

    def tail(self) -> str:
        if self.mode == "terminal":
            return bytes(self._tail).decode(errors="replace")[-3000:]
        return self.output.read_text(errors="replace")[-3000:] if self.output.exists() else ""

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                self._requests.write(b'{"op": "stop"}\n')
            self.process.wait(timeout=PATIENCE_S)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        finally:
            self._requests.close()
            self._answers.close()
            if self._drain is not None:
                self._drain.join(timeout=10)


def measure(config: Config) -> dict[str, list[float]]:
    calls, tasks = sizes(config)
    runs: dict[str, list[float]] = {f.key: [] for f in figures()}
    with tempfile.TemporaryDirectory(prefix="skyward-bench-defaults-") as folder, ExitStack() as stack:
        children = [Child(mode, Path(folder), stack) for mode in MODES]
        for child in children:  # every pool started and warmed up before any measurement
            ready = child.answer()
            assert ready == "ready", (child.mode, ready)
        for repetition in range(config.repeat):
            turn = children[repetition % 3:] + children[:repetition % 3]
            samples: dict[str, list[float]] = {c.mode: [] for c in children}
            for _ in range(TURNS):
                for child in turn:
                    samples[child.mode] += child.ask({"op": "calls", "n": calls // TURNS})
            maps: dict[str, list[float]] = {c.mode: [] for c in children}
            for _ in range(MAP_TURNS):
                for child in turn:
                    maps[child.mode].append(child.ask({"op": "map", "n": tasks}))
            rates = {mode: tasks / statistics.median(seconds) for mode, seconds in maps.items()}
            p50 = {mode: percentile(values, 50) * 1e6 for mode, values in samples.items()}
            for mode in MODES:
                runs[f"defaults.p50_{mode}"].append(p50[mode])
                runs[f"defaults.tps_{mode}"].append(rates[mode])
            for mode in DEFAULTS:
                runs[f"defaults.p50_{mode}_vs_quiet"].append(p50[mode] / p50["quiet"])
                runs[f"defaults.tps_{mode}_vs_quiet"].append(rates[mode] / rates["quiet"])
    return runs


# -- the child: one pool, driven by the parent -------------------------------------------------------------


def serve(mode: str, requests: BinaryIO, answers: BinaryIO) -> None:
    from bench_tasks import noop

    import skyward as sky

    def say(value: Any) -> None:
        answers.write(json.dumps(value).encode() + b"\n")
        answers.flush()

    quiet = {"console": False, "logging": False} if mode == "quiet" else {}
    remote = sky.function(noop)
    clock = time.perf_counter
    with sky.Compute(provider=sky.Local(), nodes=2, **quiet) as pool:
        for _ in range(100):
            remote() >> pool
        pool.map(noop, range(500))
        say("ready")
        for line in requests:
            request = json.loads(line)
            if request["op"] == "calls":
                durations = []
                for _ in range(request["n"]):
                    began = clock()
                    remote() >> pool
                    durations.append(clock() - began)
                say(durations)
            elif request["op"] == "map":
                count = request["n"]
                began = clock()
                results = pool.map(noop, range(count))
                elapsed = clock() - began
                assert results == list(range(count)), "map returned the wrong results"
                say(elapsed)
            else:
                break


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--answers", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        with os.fdopen(args.requests, "rb") as requests, os.fdopen(args.answers, "wb") as answers:
            serve(args.child, requests, answers)
        return 0
    for key, values in measure(Config(quick=args.quick, repeat=args.repeat)).items():
        print(f"{key:32} {'  '.join(f'{v:,.2f}' for v in values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
