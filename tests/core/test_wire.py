"""The frame format: round trips through the incremental decoder, out-of-band buffers, compression."""

from __future__ import annotations

import gc
import itertools
import os
import pickle
import random
import struct

import numpy as np
import pytest

from skyward.errors import SerializationError
from skyward.payload import FLAG_LZ4, OUT_OF_BAND_MIN, Undecodable, check_picklable
from skyward.transport import shm
from skyward.wire import (
    BUFFER_ENTRY,
    FLAG_SHM,
    HEADER,
    Frame,
    FrameDecoder,
    Kind,
    encode,
    encode_bytes,
    offload,
    skip_written,
)


def decode_all(data: bytes, chunk_sizes) -> list[Frame]:
    """Feed `data` to a fresh decoder in chunks of the given sizes (cycled) and collect the frames."""
    frames: list[Frame] = []
    decoder = FrameDecoder(frames.append)
    sizes = iter(chunk_sizes)
    view = memoryview(data)
    while len(view):
        n = next(sizes)
        decoder.feed(view[:n])
        view = view[n:]
    return frames


def read_into(data: bytes, chunk: int) -> list[Frame]:
    """Drive the decoder the way a transport does: get_buffer(), write into it, buffer_updated()."""
    frames: list[Frame] = []
    decoder = FrameDecoder(frames.append, stage_size=4096)
    view = memoryview(data)
    while len(view):
        target = decoder.get_buffer()
        n = min(len(target), len(view), chunk)
        target[:n] = view[:n]
        del target
        view = view[n:]
        decoder.buffer_updated(n)
    return frames


def header(parts: list) -> tuple[int, int, int, int, int]:
    return HEADER.unpack_from(bytes(parts[0]))


def test_frames_round_trip_through_the_decoder_in_tiny_chunks() -> None:
    payloads = [
        None,
        42,
        "text",
        {"nested": [1, 2.5, ("tuple", b"bytes")], "set": {1, 2}},
        b"\x00" * 20_000,  # compressed in-band body
        list(range(5000)),
    ]
    data = b"".join(encode_bytes(Kind.RESULT, i, p) for i, p in enumerate(payloads, start=1))
    rng = random.Random(7)
    frames = decode_all(data, (rng.randint(1, 7) for _ in iter(int, 1)))
    assert [(f.kind, f.id) for f in frames] == [(Kind.RESULT, i) for i in range(1, len(payloads) + 1)]
    assert [f.payload for f in frames] == payloads


def test_one_byte_at_a_time_decodes_every_kind() -> None:
    data = b"".join(encode_bytes(kind, 7, kind.name) for kind in Kind)
    frames = decode_all(data, iter(lambda: 1, 0))
    assert [(f.kind, f.id, f.payload) for f in frames] == [(kind, 7, kind.name) for kind in Kind]


def test_a_frame_is_delivered_only_when_complete() -> None:
    data = encode_bytes(Kind.TASK, 3, "payload")
    frames: list[Frame] = []
    decoder = FrameDecoder(frames.append)
    decoder.feed(data[:-1])
    assert frames == []
    decoder.feed(data[-1:])
    assert [(f.kind, f.id, f.payload) for f in frames] == [(Kind.TASK, 3, "payload")]


def test_large_array_travels_out_of_band() -> None:
    array = np.random.default_rng(4).random(100_000)  # 800 KB that lz4 cannot shrink
    parts = encode(Kind.RESULT, 1, array)
    _, _, nbuffers, _, body_len = header(parts)
    assert nbuffers == 1
    assert body_len < 1024  # the pickle stream carries only the array's description
    (length, _) = BUFFER_ENTRY.unpack_from(bytes(parts[0]), HEADER.size)
    assert length == array.nbytes


def test_array_just_over_the_threshold_travels_out_of_band() -> None:
    array = np.random.default_rng(0).random(OUT_OF_BAND_MIN // 8 + 8)
    assert header(encode(Kind.RESULT, 1, array))[2] == 1


def test_small_array_travels_in_band() -> None:
    array = np.ones(1000)  # 8 KB
    assert header(encode(Kind.RESULT, 1, array))[2] == 0


@pytest.mark.parametrize("chunk", [1000, 4096, 65_537, 1 << 20])
def test_large_array_arrives_equal_and_writable(chunk: int) -> None:
    array = np.random.default_rng(1).random((300, 500))  # 1.2 MB: read straight into its own buffer
    frames = read_into(encode_bytes(Kind.RESULT, 9, {"a": array, "tail": "after"}), chunk)
    (frame,) = frames
    received = frame.payload["a"]
    assert frame.payload["tail"] == "after"
    np.testing.assert_array_equal(received, array)
    assert received.dtype == array.dtype and received.shape == array.shape
    assert received.flags.writeable
    received[0, 0] = -1.0  # it is really writable memory, not a read-only view
    assert received[0, 0] == -1.0


def test_mid_sized_out_of_band_array_arrives_writable_through_tiny_chunks() -> None:
    array = np.arange(20_000, dtype=np.int64)  # 160 KB: out of band but staged, not read in place
    (frame,) = decode_all(encode_bytes(Kind.YIELD, 2, array), iter(lambda: 333, 0))
    np.testing.assert_array_equal(frame.payload, array)
    assert frame.payload.flags.writeable


def test_several_arrays_in_one_frame_arrive_in_order() -> None:
    rng = np.random.default_rng(2)
    arrays = [rng.random(20_000), np.zeros(50_000), rng.integers(0, 9, 100_000)]
    parts = encode(Kind.RESULT, 1, arrays)
    assert header(parts)[2] == 3
    (frame,) = read_into(encode_bytes(Kind.RESULT, 1, arrays), 10_000)
    for got, sent in zip(frame.payload, arrays, strict=True):
        np.testing.assert_array_equal(got, sent)
        assert got.flags.writeable


def test_zero_array_is_compressed() -> None:
    array = np.zeros(1_000_000)  # 8 MB of zeros
    data = encode_bytes(Kind.RESULT, 1, array)
    assert len(data) < array.nbytes / 50
    (frame,) = read_into(data, 1 << 16)
    np.testing.assert_array_equal(frame.payload, array)
    assert frame.payload.flags.writeable


def test_random_floats_are_not_compressed() -> None:
    array = np.random.default_rng(3).random(500_000)
    parts = encode(Kind.RESULT, 1, array)
    length, flags = BUFFER_ENTRY.unpack_from(bytes(parts[0]), HEADER.size)
    assert flags == 0
    assert length == array.nbytes
    assert len(encode_bytes(Kind.RESULT, 1, array)) >= array.nbytes


def test_compressible_bytes_payload_shrinks_the_frame() -> None:
    payload = b"ab" * 50_000
    assert len(encode_bytes(Kind.RESULT, 1, payload)) < len(payload) / 10


def test_small_payload_is_not_compressed() -> None:
    data = encode_bytes(Kind.RESULT, 1, "x" * 100)
    assert header([data])[1] == 0


def test_large_out_of_band_array_is_sent_without_copying() -> None:
    array = np.random.default_rng(5).random(200_000)
    parts = encode(Kind.RESULT, 1, array)
    buffer = parts[-1]
    assert isinstance(buffer, memoryview)
    assert np.shares_memory(np.frombuffer(buffer, dtype=np.float64), array)


def test_check_picklable_names_what_failed() -> None:
    import threading

    with pytest.raises(SerializationError, match=r"Argument 0 of f\(\) cannot be pickled \(lock\)"):
        check_picklable("Argument 0 of f()", threading.Lock())


class _FailsToUnpickle:
    """Pickles fine; unpickling it raises, as a class whose module the reader lacks does."""

    def __reduce__(self):
        return (_refuse, ("no module named 'elsewhere'",))


def _refuse(message: str) -> None:
    raise ModuleNotFoundError(message)


@pytest.mark.parametrize("payload", [_FailsToUnpickle(), [_FailsToUnpickle(), np.zeros(OUT_OF_BAND_MIN)]])
def test_payload_that_will_not_unpickle_arrives_as_undecodable_and_the_next_frame_decodes(payload) -> None:
    data = encode_bytes(Kind.TASK, 7, payload) + encode_bytes(Kind.TASK, 8, "fine")
    (bad, good) = decode_all(data, itertools.repeat(5))
    assert (bad.kind, bad.id, good.id, good.payload) == (Kind.TASK, 7, 8, "fine")
    assert isinstance(bad.payload, Undecodable)
    assert isinstance(bad.payload.error, ModuleNotFoundError)


def test_undecodable_explains_what_failed_where_and_the_fix() -> None:
    missing = Undecodable(ModuleNotFoundError("No module named 'mine'"))
    error = missing.explain("The arguments of f()", "on the worker")
    assert isinstance(error, SerializationError)
    expected = "The arguments of f() could not be unpickled on the worker: ModuleNotFoundError"
    assert str(error).startswith(expected)
    assert "Image(includes=[...])" in str(error)
    assert isinstance(error.__cause__, ModuleNotFoundError)


def test_header_layout_is_stable() -> None:
    data = encode_bytes(Kind.CANCEL, 123456789, None)
    kind, flags, nbuffers, fid, body_len = struct.unpack_from("<BBHQQ", data)
    assert (kind, flags, nbuffers, fid) == (Kind.CANCEL, 0, 0, 123456789)
    assert pickle.loads(data[HEADER.size : HEADER.size + body_len]) is None


def test_plain_body_larger_than_the_copy_limit_decodes_in_place() -> None:
    payload = random.Random(3).randbytes(200_000)  # random: sent as is, uncompressed, in the body
    for chunk in (4096, 65_536):
        (frame,) = read_into(encode_bytes(Kind.RESULT, 9, payload), chunk)
        assert frame.payload == payload


def test_skip_written_keeps_what_a_short_write_left() -> None:
    parts = [b"head", memoryview(b"body-bytes"), bytearray(b"tail")]
    assert skip_written(parts, 0)[0] == b"head" and len(skip_written(parts, 0)) == 3
    rest = skip_written(parts, 6)
    assert [bytes(p) for p in rest] == [b"dy-bytes", b"tail"]
    assert skip_written(parts, 18) == []


def test_skip_written_counts_bytes_not_items_of_a_wide_view() -> None:
    wide = memoryview(np.arange(4, dtype=np.int64))  # 4 items, 32 bytes
    rest = skip_written([wide, b"x"], 8)
    assert len(bytes(rest[0])) == 24 and bytes(rest[1]) == b"x"


# -- shared memory (same-host channels) ---------------------------------------------------------------


@pytest.fixture
def segments():
    """A channel folder in /dev/shm and the client's writer into it; removed after the test."""
    folder = shm.create_folder()
    if folder is None:
        pytest.skip("no usable /dev/shm on this host")
    yield shm.SegmentWriter(folder, "c")
    shm.remove_folder(folder)


def decode_shared(parts: list) -> list[Frame]:
    frames: list[Frame] = []
    decoder = FrameDecoder(frames.append, shm=shm.open_segment)
    for part in parts:
        decoder.feed(part)
    return frames


def test_offload_puts_a_large_buffer_in_shared_memory(segments) -> None:
    array = np.random.default_rng(0).random(1_000_000)
    parts = offload(encode(Kind.RESULT, 3, array), segments.put, shm.MIN_SIZE)
    length, bflags = BUFFER_ENTRY.unpack_from(bytes(parts[0]), HEADER.size)
    assert bflags & FLAG_SHM and length < 200  # a descriptor, not 8 MB
    assert sum(len(p) for p in parts) < 1000


def test_offloaded_array_decodes_equal_and_writable(segments) -> None:
    array = np.random.default_rng(0).random(1_000_000)
    (frame,) = decode_shared(offload(encode(Kind.RESULT, 3, array), segments.put, shm.MIN_SIZE))
    assert (frame.kind, frame.id) == (Kind.RESULT, 3)
    assert np.array_equal(frame.payload, array)
    frame.payload[0] = -1.0  # writable, like the pipe path's bytearray-backed arrays


def test_offloaded_large_body_decodes_equal(segments) -> None:
    data = random.randbytes(2 << 20)  # bytes pickle in-band: the body itself is large
    parts = offload(encode(Kind.RESULT, 1, data), segments.put, shm.MIN_SIZE)
    assert header(parts)[1] & FLAG_SHM
    (frame,) = decode_shared(parts)
    assert frame.payload == data


def test_compressed_buffer_in_shared_memory_decodes_equal(segments) -> None:
    array = np.zeros(2_000_000)
    parts = offload(encode(Kind.RESULT, 1, array), segments.put, 1024)
    _, bflags = BUFFER_ENTRY.unpack_from(bytes(parts[0]), HEADER.size)
    assert bflags == FLAG_LZ4 | FLAG_SHM
    (frame,) = decode_shared(parts)
    assert np.array_equal(frame.payload, array)


def test_offload_leaves_small_frames_as_they_are(segments) -> None:
    parts = encode(Kind.RESULT, 1, np.arange(100_000.0))  # out of band, but under the threshold
    assert offload(parts, segments.put, shm.MIN_SIZE) is parts


def test_offload_does_not_change_the_parts_it_was_given(segments) -> None:
    parts = encode(Kind.TASK, 1, np.random.default_rng(0).random(1_000_000))
    before = [bytes(p) for p in parts]
    offload(parts, segments.put, shm.MIN_SIZE)
    assert [bytes(p) for p in parts] == before  # a retried task is offloaded afresh


def test_offload_handles_several_frames_back_to_back(segments) -> None:
    arrays = [np.random.default_rng(i).random(500_000) for i in range(3)]
    parts = [p for i, a in enumerate(arrays) for p in encode(Kind.RESULT, i, {"x": a, "i": i})]
    frames = decode_shared(offload(parts + encode(Kind.PONG, 9), segments.put, shm.MIN_SIZE))
    expected = [(Kind.RESULT, 0), (Kind.RESULT, 1), (Kind.RESULT, 2), (Kind.PONG, 9)]
    assert [(f.kind, f.id) for f in frames] == expected
    for frame, array in zip(frames, arrays, strict=False):
        assert np.array_equal(frame.payload["x"], array)


def test_offload_leaves_parts_that_are_not_encoded_frames_alone(segments) -> None:
    joined = [encode_bytes(Kind.RESULT, 1, np.random.default_rng(0).random(1_000_000))]
    assert offload(joined, segments.put, shm.MIN_SIZE) is joined


def test_segment_is_unlinked_or_freed_once_the_array_is_collected(segments) -> None:
    array = np.random.default_rng(0).random(1_000_000)
    (frame,) = decode_shared(offload(encode(Kind.RESULT, 1, array), segments.put, shm.MIN_SIZE))
    assert os.listdir(segments.folder) == ["c1"]
    del frame
    gc.collect()
    assert os.listdir(segments.folder) == ["c1" + shm.FREE]


def test_decoder_without_shared_memory_rejects_a_shared_memory_frame(segments) -> None:
    array = np.random.default_rng(0).random(1_000_000)
    parts = offload(encode(Kind.RESULT, 1, array), segments.put, shm.MIN_SIZE)
    frames: list[Frame] = []
    decoder = FrameDecoder(frames.append)  # as over SSH
    for part in parts:
        decoder.feed(part)
    (frame,) = frames
    assert isinstance(frame.payload, Undecodable)
    assert "shared-memory" in str(frame.payload.error)


def test_descriptor_outside_skyward_folders_is_refused() -> None:
    descriptor = shm.DESCRIPTOR.pack(10, 0) + b"/etc/passwd"
    with pytest.raises(ValueError):
        shm.open_segment(descriptor)
