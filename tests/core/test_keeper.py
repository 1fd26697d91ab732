"""The worker's keeper on its node (`skyward.transport.keeper`), driven as an SSH channel drives it:
its stdin/stdout/stderr are the channel's, a new channel attaches through its unix socket. Here a
small program stands in for the worker and writes frames once told to (a file appears)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from skyward.transport.keeper import MARK
from skyward.transport.ssh_link import ack_frame, greeting
from skyward.wire import Frame, FrameDecoder, Kind

#: The stand-in worker: once `go` exists, 200 LOG frames of one line each, then one RESULT.
WORKER = textwrap.dedent(
    """
    import os, sys, time
    from skyward.wire import Kind, encode
    while not os.path.exists("go"):
        time.sleep(0.02)
    out = sys.stdout.buffer
    for i in range(200):
        line = f"line {i} " + "x" * 500 + "\\n"
        out.write(b"".join(bytes(p) for p in encode(Kind.LOG, 0, ("stdout", line))))
    out.write(b"".join(bytes(p) for p in encode(Kind.RESULT, 7, "the answer")))
    out.flush()
    sys.stdin.read()  # until the keeper closes it
    """
)


def start_keeper(folder: Path, *, hold: int, grace: float = 60) -> subprocess.Popen[bytes]:
    (folder / "worker.py").write_text(WORKER)
    command = [
        sys.executable, "-m", "skyward.transport.keeper", "start", "--socket", "worker-1.sock",
        "--pid-file", str(folder / "worker-1.pid"), "--keeper-pid-file", str(folder / "worker-1.keeper.pid"),
        "--grace", str(grace), "--hold", str(hold), f"exec {sys.executable} worker.py",
    ]
    return subprocess.Popen(
        command, cwd=folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def attach(folder: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "skyward.transport.keeper", "attach", "--socket", "worker-1.sock"]
    return subprocess.Popen(
        command, cwd=folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def control_line(channel: subprocess.Popen[bytes], name: str) -> str:
    """The keeper's next control line `name` on the channel's stderr (its value)."""
    assert channel.stderr is not None
    while line := channel.stderr.readline().decode():
        if line.startswith(f"{MARK}{name}:"):
            return line.strip()[len(MARK) + len(name) + 1 :]
    raise AssertionError(f"the channel ended before the keeper said {name}")


def frames_until_result(channel: subprocess.Popen[bytes]) -> list[Frame]:
    frames: list[Frame] = []
    decoder = FrameDecoder(frames.append)
    assert channel.stdout is not None
    while not any(frame.kind is Kind.RESULT for frame in frames):
        data = os.read(channel.stdout.fileno(), 65536)
        assert data, "the channel ended before the answer"
        decoder.feed(data)
    return frames


def test_output_past_the_held_bytes_is_dropped_with_a_count_and_the_answer_kept(tmp_path: Path) -> None:
    first = start_keeper(tmp_path, hold=16 * 1024)
    assert first.stdin is not None and first.stderr is not None
    first.stdin.write(greeting(0))
    first.stdin.flush()
    worker = int(first.stderr.readline())  # the worker's pid, as the channel reads it
    assert control_line(first, "resume") == "0"
    first.stdin.close()  # the link drops: the keeper holds what the worker writes from now on
    first.stdout.close()  # type: ignore[union-attr]
    first.wait(10)
    (tmp_path / "go").touch()  # the worker writes its 200 lines; nobody acknowledges them

    again = attach(tmp_path)
    assert again.stdin is not None
    again.stdin.write(greeting(0))  # nothing of the keeper's stream arrived before the drop
    again.stdin.flush()
    assert control_line(again, "resume") == "0"
    frames = frames_until_result(again)
    lines = [frame.payload[1] for frame in frames if frame.kind is Kind.LOG]
    kept = [line for line in lines if line.startswith("line ")]
    marker = [line for line in lines if "dropped" in line]
    assert 0 < len(kept) < 200
    assert marker == [
        f"skyward: {200 - len(kept)} lines of output were dropped on the node while the client was away "
        "(it holds 0.015625 MiB for an absent client)\n"
    ]
    assert [frame.payload for frame in frames if frame.kind is Kind.RESULT] == ["the answer"]
    os.killpg(worker, 9)  # the worker ends: the keeper says so, and lets the channel go
    assert control_line(again, "exit") == "-9"
    again.wait(10)


def test_a_new_channel_gets_what_the_client_did_not_acknowledge(tmp_path: Path) -> None:
    first = start_keeper(tmp_path, hold=64 * 1024 * 1024)
    assert first.stdin is not None and first.stderr is not None and first.stdout is not None
    first.stdin.write(greeting(0))
    first.stdin.flush()
    worker = int(first.stderr.readline())
    (tmp_path / "go").touch()
    frames = frames_until_result(first)
    assert sum(frame.kind is Kind.LOG for frame in frames) == 200
    first.stdin.write(ack_frame(1000))  # the client says it has the first 1000 bytes only
    first.stdin.flush()
    first.stdin.close()  # read after the acknowledgement: the keeper detaches with it counted
    first.wait(10)

    again = attach(tmp_path)
    assert again.stdin is not None
    again.stdin.write(greeting(1000))
    again.stdin.flush()
    control_line(again, "resume")
    decoder_input = os.read(again.stdout.fileno(), 65536)  # type: ignore[union-attr]
    # The stream goes on from byte 1000, in the middle of a frame: the bytes are those sent before.
    sent = b"".join(bytes(p) for p in _frames_bytes())
    assert decoder_input == sent[1000 : 1000 + len(decoder_input)]
    os.killpg(worker, 9)  # the worker ends: the keeper says so, and lets the channel go
    again.wait(10)


def _frames_bytes() -> list[bytes]:
    from skyward.wire import encode

    parts = []
    for i in range(200):
        parts += encode(Kind.LOG, 0, ("stdout", f"line {i} " + "x" * 500 + "\n"))
    return parts + encode(Kind.RESULT, 7, "the answer")
