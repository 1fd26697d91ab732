"""Torch tensors travel as their raw memory (skyward/pickling.py): equal values, dtype, shape,
`requires_grad` and shared storage on arrival; anything unusual takes torch's own path."""

from __future__ import annotations

import pickle

import pytest
from core_support import local_pool

import skyward as sky
from skyward import pickling
from skyward.wire import FrameDecoder, Kind, encode

torch = pytest.importorskip("torch")


def round_trip(payload: object) -> object:
    frames: list = []
    decoder = FrameDecoder(frames.append)
    decoder.feed(b"".join(bytes(part) for part in encode(Kind.RESULT, 1, payload)))
    return frames[0].payload


def test_a_large_tensor_travels_out_of_band() -> None:
    tensor = torch.randn(1000, 1000)
    parts = encode(Kind.RESULT, 1, tensor)
    assert len(parts) == 3  # header, a small pickle, the tensor's memory
    assert len(parts[1]) < 1000
    assert torch.equal(round_trip(tensor), tensor)


def test_views_of_one_storage_still_share_it_on_arrival() -> None:
    tensor = torch.randn(1000, 100)
    received = round_trip({"a": tensor, "b": tensor.view(100, 1000)})
    received["a"][0, 0] = 42.0
    assert received["b"][0, 0] == 42.0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int64", "uint8", "bool", "complex64"])
def test_every_common_dtype_arrives_equal(dtype: str) -> None:
    tensor = (torch.rand(300, 300) * 100).to(getattr(torch, dtype))
    received = round_trip(tensor)
    assert received.dtype == tensor.dtype
    assert torch.equal(received, tensor)


def test_requires_grad_is_kept() -> None:
    received = round_trip(torch.randn(300, 300, requires_grad=True))
    assert received.requires_grad and received.is_leaf


def test_a_parameter_keeps_its_type() -> None:
    received = round_trip(torch.nn.Parameter(torch.randn(300, 300)))
    assert type(received) is torch.nn.Parameter


def test_a_slice_of_a_larger_storage_takes_torchs_path() -> None:
    base = torch.randn(1000, 1000)
    part = base[10:20]
    assert len(encode(Kind.RESULT, 1, part)) == 2  # in band: only the slice's bytes travel
    assert torch.equal(round_trip(part), part)


def test_tensors_pickle_the_standard_way_outside_the_wire() -> None:
    tensor = torch.randn(300, 300)
    assert torch.equal(pickle.loads(pickle.dumps(tensor)), tensor)
    assert torch.equal(pickle.loads(pickling.dumps(tensor)), tensor)


@sky.function
def scale(tensor, factor: float):
    return tensor * factor


def test_tensors_cross_a_pool_both_ways() -> None:
    tensor = torch.randn(2000, 1000)
    with local_pool(nodes=1) as pool:
        assert torch.equal(scale(tensor, 2.0) >> pool, tensor * 2.0)
