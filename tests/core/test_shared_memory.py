"""Large payloads between the client and Local workers travel through shared memory (/dev/shm).

Real pools of real worker processes: what arrives equals what was sent, in both directions and
nested in containers; it lives in a mapping of a segment, writable, released with the object; small
payloads stay in the pipe; nothing is left in /dev/shm when a pool closes or a worker dies
mid-transfer; and a host without usable shared memory still moves the data through the pipe.
"""

from __future__ import annotations

import errno
import gc
import glob
import hashlib
import mmap
import os
import signal
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest
from core_support import local_pool, wait_until, worker_pid

import skyward as sky
from skyward.transport import shm
from skyward.wire import Frame, FrameDecoder, Kind, encode, offload

pytestmark = pytest.mark.timeout(60)

#: Large enough for shared memory (>= shm.MIN_SIZE), small enough for a quick test: 16 MB.
LARGE = 2_000_000
#: Out of band, but below shm.MIN_SIZE: stays in the pipe.
SMALL = 50_000


def random_array(n: int, seed: int = 0) -> np.ndarray:
    """Random floats: lz4 cannot shrink them, so they are sent as they are."""
    return np.random.default_rng(seed).random(n)


def digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def mapping_of(obj: Any) -> mmap.mmap | None:
    """The mmap an array's memory belongs to, following `.base` and memoryview `.obj` links."""
    seen = obj
    for _ in range(16):
        if isinstance(seen, mmap.mmap):
            return seen
        seen = seen.obj if isinstance(seen, memoryview) else getattr(seen, "base", None)
        if seen is None:
            return None
    return None


def mapped_segments() -> set[str]:
    """Paths of skyward segments this process maps now (from /proc/self/maps)."""
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith(f"{shm.SHM_ROOT}/skyward-"):
                paths.add(fields[5].strip().removesuffix(" (deleted)"))
    return paths


def own_folders() -> set[str]:
    """This client's channel folders in /dev/shm."""
    return set(glob.glob(os.path.join(shm.SHM_ROOT, f"skyward-{os.getpid()}-*")))


@sky.function
def echo(value: Any) -> Any:
    return value


@sky.function
def noop() -> None:
    return None


@sky.function
def digest_on_worker(array: np.ndarray) -> str:
    return digest(array)


@sky.function
def is_shared_on_worker(array: np.ndarray) -> bool:
    return mapping_of(array) is not None


@sky.function
def add_one_on_worker(array: np.ndarray) -> float:
    """Writes into the received argument; fails if the array is read-only."""
    array += 1
    return float(array[0])


@sky.function
def segments_on_worker(array: np.ndarray) -> list[str]:
    return sorted(mapped_segments())


@sky.function
def make_array(n: int, seed: int) -> np.ndarray:
    return random_array(n, seed)


# -- round trips ---------------------------------------------------------------------------------


def test_large_argument_arrives_equal(pool: sky.Pool) -> None:
    array = random_array(LARGE)
    assert digest_on_worker(array) >> pool == digest(array)


def test_large_argument_is_mapped_from_shared_memory_on_the_worker(pool: sky.Pool) -> None:
    assert is_shared_on_worker(random_array(LARGE)) >> pool


def test_large_argument_is_writable_on_the_worker(pool: sky.Pool) -> None:
    array = random_array(LARGE)
    assert add_one_on_worker(array) >> pool == array[0] + 1


def test_large_result_arrives_equal(pool: sky.Pool) -> None:
    result = make_array(LARGE, 7) >> pool
    assert np.array_equal(result, random_array(LARGE, 7))


def test_large_result_is_mapped_from_shared_memory(pool: sky.Pool) -> None:
    assert mapping_of(make_array(LARGE, 1) >> pool) is not None


def test_large_result_is_writable(pool: sky.Pool) -> None:
    result = make_array(LARGE, 2) >> pool
    result[:] = 3.0
    assert float(result.sum()) == 3.0 * LARGE


def test_arrays_nested_in_a_dict_and_a_tuple_round_trip(pool: sky.Pool) -> None:
    value = {"a": random_array(LARGE, 3), "b": (random_array(LARGE // 2, 4), "text", 5)}
    result = echo(value) >> pool
    assert np.array_equal(result["a"], value["a"])
    assert np.array_equal(result["b"][0], value["b"][0])
    assert result["b"][1:] == ("text", 5)


def test_torch_tensor_round_trips(pool: sky.Pool) -> None:
    torch = pytest.importorskip("torch")
    tensor = torch.randn(3_000_000)  # pickled in-band: its 12 MB body goes through shared memory
    assert torch.equal(echo(tensor) >> pool, tensor)


def test_large_bytes_round_trip(pool: sky.Pool) -> None:
    data = os.urandom(3 << 20)  # bytes pickle in-band: a large body
    assert echo(data) >> pool == data


def test_small_array_stays_in_the_pipe(pool: sky.Pool) -> None:
    result = echo(random_array(SMALL)) >> pool
    assert mapping_of(result) is None
    assert result.flags.writeable


# -- memory --------------------------------------------------------------------------------------


def test_result_mapping_is_released_when_the_array_is_collected(pool: sky.Pool) -> None:
    before = mapped_segments()
    result = make_array(LARGE, 5) >> pool
    new = mapped_segments() - before
    assert new, "the result is not in a shared-memory mapping"
    del result
    noop() >> pool  # the scheduler keeps a finished task (and its result) until it next dispatches
    gc.collect()
    assert not new & mapped_segments()


def test_worker_releases_the_argument_mapping_after_the_task(fresh_pool) -> None:
    compute = fresh_pool(1)
    (path,) = segments_on_worker(random_array(LARGE)) >> compute
    # Released, the receiver hands the segment back to the sender (renames it free).
    assert wait_until(lambda: (noop() >> compute, os.path.exists(path + shm.FREE))[1], timeout=10)


def test_segment_released_by_the_receiver_is_reused_for_the_next_transfer(fresh_pool) -> None:
    compute = fresh_pool(1)
    (first,) = segments_on_worker(random_array(LARGE)) >> compute
    assert wait_until(lambda: (noop() >> compute, os.path.exists(first + shm.FREE))[1], timeout=10)
    (second,) = segments_on_worker(random_array(LARGE, 1)) >> compute
    assert second == first


# -- cleanup -------------------------------------------------------------------------------------


def test_closing_the_pool_removes_its_segments() -> None:
    before = own_folders()
    compute = local_pool(2)
    compute.start()
    try:
        ours = own_folders() - before
        assert len(ours) == 2  # one folder per worker channel
        kept = make_array(LARGE, 1) >> compute  # a result still mapped by the client
        digest_on_worker(random_array(LARGE)) >> compute
        assert any(os.listdir(folder) for folder in ours)
    finally:
        compute.stop()
    assert not any(os.path.exists(folder) for folder in ours)
    assert np.array_equal(kept, random_array(LARGE, 1))  # the mapping outlives its file


def test_worker_killed_mid_transfer_leaves_no_segment(fresh_pool) -> None:
    before = own_folders()
    compute = fresh_pool(1)
    (folder,) = own_folders() - before
    pid = worker_pid() >> compute
    os.kill(pid, signal.SIGSTOP)  # the worker cannot map what is sent from here on
    try:
        future = compute.run_async(digest_on_worker(random_array(LARGE)))
        assert wait_until(lambda: any(name.startswith("c") for name in os.listdir(folder)), timeout=10)
    finally:
        os.kill(pid, signal.SIGKILL)
    # The node is replaced and the task retried there; the dead channel's segments are gone.
    assert future.result(timeout=30) == digest(random_array(LARGE))
    assert wait_until(lambda: not os.path.exists(folder), timeout=10)


def dead_pid() -> int:
    """The pid of a process that has exited."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    return int(child.stdout)


def test_folders_of_a_dead_client_are_swept_by_the_next_one() -> None:
    dead = dead_pid()
    folder = os.path.join(shm.SHM_ROOT, f"skyward-{dead}-1")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "c1"), "wb") as f:
        f.write(b"x" * 100)
    old = time.time() - 2 * shm.STALE_AGE
    os.utime(folder, (old, old))
    shm.sweep_stale()
    assert not os.path.exists(folder)


def test_recent_folder_of_an_unknown_pid_is_left_alone() -> None:
    """A client in another pid namespace sharing /dev/shm looks dead; its busy folder stays."""
    folder = os.path.join(shm.SHM_ROOT, f"skyward-{dead_pid()}-1")
    os.makedirs(folder, exist_ok=True)
    try:
        shm.sweep_stale()
        assert os.path.isdir(folder)
    finally:
        shm.remove_folder(folder)


# -- fallback ------------------------------------------------------------------------------------


def test_pool_without_shared_memory_moves_large_arrays_through_the_pipe(
    fresh_pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shm, "available", lambda: False)
    before = own_folders()
    compute = fresh_pool(1)
    assert own_folders() == before
    array = random_array(LARGE)
    result = echo(array) >> compute
    assert np.array_equal(result, array)
    assert mapping_of(result) is None
    assert not is_shared_on_worker(array) >> compute


def test_full_shared_memory_sends_the_bytes_in_the_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    folder = shm.create_folder()
    assert folder is not None
    try:
        writer = shm.SegmentWriter(folder, "c")

        def full(fd: int, data: Any, offset: int) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(shm.os, "pwrite", full)
        array = random_array(LARGE)
        parts = offload(encode(Kind.RESULT, 1, array), writer.put, shm.MIN_SIZE)
        monkeypatch.undo()
        assert os.listdir(folder) == []  # the failed segment was removed
        frames: list[Frame] = []
        decoder = FrameDecoder(frames.append)  # no shared memory needed to decode it
        for part in parts:
            decoder.feed(part)
        assert np.array_equal(frames[0].payload, array)
    finally:
        shm.remove_folder(folder)


def test_writer_whose_folder_was_removed_answers_none() -> None:
    folder = shm.create_folder()
    assert folder is not None
    shm.remove_folder(folder)
    assert shm.SegmentWriter(folder, "w").put(b"x" * shm.MIN_SIZE) is None
    assert not os.path.exists(folder)


def test_forked_child_dropping_a_mapping_does_not_release_the_segment() -> None:
    folder = shm.create_folder()
    assert folder is not None
    try:
        descriptor = shm.SegmentWriter(folder, "c").put(b"x" * shm.MIN_SIZE)
        assert descriptor is not None
        mapping = shm.open_segment(descriptor)
        child = os.fork()
        if child == 0:
            del mapping
            gc.collect()
            os._exit(0)
        os.waitpid(child, 0)
        assert sorted(os.listdir(folder)) == ["c1"]  # still in use by this process
        del mapping
        gc.collect()
        assert sorted(os.listdir(folder)) == ["c1" + shm.FREE]
    finally:
        shm.remove_folder(folder)


# -- recycling policy ----------------------------------------------------------------------------


def test_segment_above_the_recycle_limit_is_unlinked_once_mapped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shm, "RECYCLE_MAX", shm.MIN_SIZE)
    folder = shm.create_folder()
    assert folder is not None
    try:
        descriptor = shm.SegmentWriter(folder, "c").put(b"x" * (2 * shm.MIN_SIZE))
        assert descriptor is not None
        mapping = shm.open_segment(descriptor)
        assert os.listdir(folder) == []  # its pages go with the mapping
        assert mapping[:1] == b"x"
    finally:
        shm.remove_folder(folder)


def test_sender_keeps_at_most_its_budget_of_free_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shm, "FREE_MAX_COUNT", 1)
    folder = shm.create_folder()
    assert folder is not None
    try:
        writer = shm.SegmentWriter(folder, "c")
        mappings = [shm.open_segment(writer.put(b"x" * shm.MIN_SIZE)) for _ in range(3)]
        del mappings
        gc.collect()
        assert len(os.listdir(folder)) == 3  # all free now
        writer.put(b"y" * shm.MIN_SIZE)  # claims one, keeps one, unlinks the third
        names = sorted(os.listdir(folder))
        assert len(names) == 2 and sum(name.endswith(shm.FREE) for name in names) == 1
    finally:
        shm.remove_folder(folder)


def test_segment_that_cannot_be_mapped_is_read_into_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    folder = shm.create_folder()
    assert folder is not None
    try:
        descriptor = shm.SegmentWriter(folder, "c").put(b"z" * shm.MIN_SIZE)
        assert descriptor is not None

        def no_more_mappings(*args: Any, **kwargs: Any) -> mmap.mmap:
            raise OSError(errno.ENOMEM, "Cannot allocate memory")

        monkeypatch.setattr(shm.mmap, "mmap", no_more_mappings)
        data = shm.open_segment(descriptor)
        monkeypatch.undo()
        assert isinstance(data, bytearray) and data == b"z" * shm.MIN_SIZE
        assert os.listdir(folder) == ["c1" + shm.FREE]  # released at once, for reuse
    finally:
        shm.remove_folder(folder)
