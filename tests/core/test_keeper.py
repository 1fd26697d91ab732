"""The worker's keeper on its node (`skyward.transport.keeper`), driven as an SSH channel drives it:
its stdin/stdout/stderr are the channel's, a new channel attaches through its unix socket. Here a
small program stands in for the worker and writes frames once told to (a file appears)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from skyward.transport.keeper_stream import MARK
from skyward.transport.ssh_link import ack_frame, greeting
from skyward.wire import Frame, FrameDecoder, Kind, encode

#: The stand-in worker: once `go` exists, 200 LOG frames of one line each, then one RESULT;
#: `written` once the keeper has read them all.
WORKER = textwrap.dedent(
    """
    import fcntl, os, sys, termios, time
    from skyward.wire import Kind, encode
    while not os.path.exists("go"):
        time.sleep(0.02)
    out = sys.stdout.buffer
    for i in range(200):
        line = f"line {i} " + "x" * 500 + "\\n"
        out.write(b"".join(bytes(p) for p in encode(Kind.LOG, 0, ("stdout", line))))
    out.write(b"".join(bytes(p) for p in encode(Kind.RESULT, 7, "the answer")))
    out.flush()
    while fcntl.ioctl(1, termios.FIONREAD, b"0000") != b"\\0\\0\\0\\0":
        time.sleep(0.01)  # the keeper has not read it all yet
    open("written", "w").close()
    sys.stdin.read()  # until the keeper closes it
    """
)


def start_keeper(folder: Path, *, hold: int, grace: float = 60, worker: str = "") -> subprocess.Popen[bytes]:
    (folder / "worker.py").write_text(WORKER)
    command = [
        sys.executable,
        "-m",
        "skyward.transport.keeper",
        "start",
        "--socket",
        "worker-1.sock",
        "--pid-file",
        str(folder / "worker-1.pid"),
        "--keeper-pid-file",
        str(folder / "worker-1.keeper.pid"),
        "--grace",
        str(grace),
        "--hold",
        str(hold),
        worker or f"exec {sys.executable} worker.py",
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


def until_exists(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} did not appear"
        time.sleep(0.02)


def frames_until_result(channel: subprocess.Popen[bytes]) -> tuple[list[Frame], int]:
    """The frames read up to an answer, and how many bytes that was."""
    frames: list[Frame] = []
    decoder = FrameDecoder(frames.append)
    assert channel.stdout is not None
    received = 0
    while not any(frame.kind is Kind.RESULT for frame in frames):
        data = os.read(channel.stdout.fileno(), 65536)
        assert data, "the channel ended before the answer"
        received += len(data)
        decoder.feed(data)
    return frames, received


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
    (tmp_path / "go").touch()
    until_exists(tmp_path / "written")  # the keeper read the worker's 200 lines with nobody there

    again = attach(tmp_path)
    assert again.stdin is not None
    again.stdin.write(greeting(0))  # nothing of the keeper's stream arrived before the drop
    again.stdin.flush()
    assert control_line(again, "resume") == "0"
    frames, received = frames_until_result(again)
    lines = [frame.payload[1] for frame in frames if frame.kind is Kind.LOG]
    kept = [line for line in lines if line.startswith("line ")]
    marker = [line for line in lines if "dropped" in line]
    assert 0 < len(kept) < 200
    assert marker == [
        f"skyward: {200 - len(kept)} lines of output were dropped on the node while the client was away "
        "(it holds 0.015625 MiB for an absent client)\n"
    ]
    assert [frame.payload for frame in frames if frame.kind is Kind.RESULT] == ["the answer"]
    os.killpg(worker, 9)  # the worker ends: the keeper says so once the client has it all
    again.stdin.write(ack_frame(received))
    again.stdin.flush()
    assert control_line(again, "exit") == "-9"
    again.wait(10)


def test_a_new_channel_gets_what_the_client_did_not_acknowledge(tmp_path: Path) -> None:
    first = start_keeper(tmp_path, hold=64 * 1024 * 1024)
    assert first.stdin is not None and first.stderr is not None and first.stdout is not None
    first.stdin.write(greeting(0))
    first.stdin.flush()
    worker = int(first.stderr.readline())
    (tmp_path / "go").touch()
    frames, _ = frames_until_result(first)
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
    parts = []
    for i in range(200):
        parts += encode(Kind.LOG, 0, ("stdout", f"line {i} " + "x" * 500 + "\n"))
    return parts + encode(Kind.RESULT, 7, "the answer")


#: A stand-in worker that answers each frame it reads with a RESULT naming its size.
ECHO = textwrap.dedent(
    """
    import os, sys
    from skyward.wire import FrameDecoder, Kind, encode
    out = sys.stdout.buffer
    def answer(frame):
        out.write(b"".join(bytes(p) for p in encode(Kind.RESULT, frame.id, len(frame.payload))))
        out.flush()
    decoder = FrameDecoder(answer)
    while data := os.read(0, 65536):
        decoder.feed(data)
    """
)


def test_what_the_keeper_did_not_get_before_a_drop_is_sent_again_from_its_count(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(ECHO)
    first = start_keeper(tmp_path, hold=64 * 1024 * 1024, worker=f"exec {sys.executable} echo.py")
    assert first.stdin is not None and first.stderr is not None
    task = b"".join(bytes(p) for p in encode(Kind.TASK, 5, os.urandom(200_000)))
    first.stdin.write(greeting(0) + task[:70_000])  # the link drops in the middle of the frame
    first.stdin.flush()
    worker = int(first.stderr.readline())
    assert control_line(first, "resume") == "0"
    first.stdin.close()
    first.wait(10)

    again = attach(tmp_path)
    assert again.stdin is not None
    again.stdin.write(greeting(0))
    again.stdin.flush()
    has = int(control_line(again, "resume"))
    assert has == 70_000  # all that reached it before the drop, and no more
    again.stdin.write(task[has:])
    again.stdin.flush()
    answers = [frame for frame in frames_until_result(again)[0] if frame.kind is Kind.RESULT]
    assert [(frame.id, frame.payload) for frame in answers] == [(5, 200_000)]
    os.killpg(worker, 9)
    again.wait(10)
