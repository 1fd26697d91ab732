"""`shard` gives each worker a disjoint slice of the input's type; `DistributedSampler` feeds loaders."""

from __future__ import annotations

import itertools
from collections import Counter, namedtuple
from collections.abc import Iterator, Sequence

import pytest

from skyward.errors import NoActivePoolError
from skyward.task import runtime
from skyward.task.instance import InstanceInfo
from skyward.task.sharding import DistributedSampler, shard

try:
    import numpy as np
except ImportError:
    np = None

needs_numpy = pytest.mark.skipif(np is None, reason="numpy is not installed")

try:
    import hypothesis
    from hypothesis import strategies as st
except ImportError:  # the grid tests below cover the same property on small sizes
    hypothesis = None


@pytest.fixture(autouse=True)
def _no_instance_info() -> Iterator[None]:
    runtime.set_instance_info(None)
    yield
    runtime.set_instance_info(None)


def _all_shards(data, total: int, **kwargs) -> list:
    return [shard(data, node=n, total_nodes=total, **kwargs) for n in range(total)]


class _Letters(Sequence):
    """A Sequence that is not a list: shard has no constructor for it, so it returns a list."""

    def __init__(self, text: str) -> None:
        self._text = text

    def __len__(self) -> int:
        return len(self._text)

    def __getitem__(self, i):
        return self._text[i]


# --- types -----------------------------------------------------------------------------------------


def test_list_shard_is_a_list() -> None:
    assert shard([1, 2, 3, 4], node=1, total_nodes=2) == [3, 4]


def test_tuple_shard_is_a_tuple() -> None:
    assert shard((1, 2, 3, 4), node=0, total_nodes=2) == (1, 2)


def test_shuffled_tuple_shard_is_still_a_tuple() -> None:
    assert isinstance(shard(tuple(range(10)), node=0, total_nodes=3, shuffle=True), tuple)


def test_str_shard_is_a_str() -> None:
    assert shard("abcdef", node=2, total_nodes=3) == "ef"
    assert isinstance(shard("abcdef", node=0, total_nodes=3, shuffle=True), str)


def test_bytes_shard_is_bytes() -> None:
    assert shard(b"abcd", node=1, total_nodes=2) == b"cd"
    assert isinstance(shard(b"abcd", node=1, total_nodes=2, shuffle=True), bytes)


def test_range_shard_is_a_range_when_not_shuffled() -> None:
    assert shard(range(10), node=1, total_nodes=2) == range(5, 10)


def test_range_shard_is_a_list_when_shuffled() -> None:
    part = shard(range(10), node=1, total_nodes=2, shuffle=True)
    assert isinstance(part, list)
    assert len(part) == 5


def test_other_sequence_shard_is_a_list() -> None:
    assert shard(_Letters("abcd"), node=0, total_nodes=2) == ["a", "b"]


def test_namedtuple_shard_is_a_plain_tuple() -> None:
    Point = namedtuple("Point", "x y z w")
    assert shard(Point(1, 2, 3, 4), node=1, total_nodes=2) == (3, 4)
    assert type(shard(Point(1, 2, 3, 4), node=1, total_nodes=2, shuffle=True)) is tuple


@needs_numpy
def test_ndarray_shard_is_an_ndarray_of_rows() -> None:
    data = np.arange(20).reshape(10, 2)
    part = shard(data, node=0, total_nodes=2)
    assert isinstance(part, np.ndarray)
    np.testing.assert_array_equal(part, data[:5])


@needs_numpy
def test_shuffled_ndarray_shard_keeps_rows_whole() -> None:
    data = np.arange(20).reshape(10, 2)
    part = shard(data, node=1, total_nodes=2, shuffle=True)
    assert part.shape == (5, 2)
    assert all(row[1] == row[0] + 1 for row in part)


def test_tensor_shard_is_a_tensor() -> None:
    torch = pytest.importorskip("torch")
    data = torch.arange(10)
    part = shard(data, node=1, total_nodes=2)
    assert isinstance(part, torch.Tensor)
    assert part.tolist() == [5, 6, 7, 8, 9]


def test_shuffled_tensor_shard_keeps_dtype_and_rows() -> None:
    torch = pytest.importorskip("torch")
    data = torch.arange(12, dtype=torch.float32).reshape(6, 2)
    part = shard(data, node=0, total_nodes=3, shuffle=True, seed=1)
    assert part.dtype == torch.float32
    assert part.shape == (2, 2)


@needs_numpy
def test_zero_dimensional_array_is_refused() -> None:
    with pytest.raises(TypeError, match="0-dimensional"):
        shard(np.array(1.0), node=0, total_nodes=1)


def test_dict_is_refused_with_a_hint_to_pass_items() -> None:
    with pytest.raises(TypeError, match=r"list\(d\.items\(\)\)"):
        shard({"a": 1}, node=0, total_nodes=1)


def test_set_is_refused_because_its_order_varies() -> None:
    with pytest.raises(TypeError, match="sorted"):
        shard({1, 2, 3}, node=0, total_nodes=1)


def test_iterator_is_refused() -> None:
    with pytest.raises(TypeError, match="list"):
        shard(iter([1, 2]), node=0, total_nodes=1)


def test_no_data_is_refused() -> None:
    with pytest.raises(TypeError, match="at least one"):
        shard(node=0, total_nodes=1)


# --- several arrays --------------------------------------------------------------------------------


def test_several_arrays_come_back_as_a_tuple_of_aligned_shards() -> None:
    xs = list(range(100))
    ys = [f"y{i}" for i in range(100)]
    x_part, y_part = shard(xs, ys, node=2, total_nodes=3, shuffle=True, seed=42)
    assert [f"y{x}" for x in x_part] == y_part


@needs_numpy
def test_arrays_of_mixed_types_are_aligned() -> None:
    xs = np.arange(10)
    ys = list(range(10))
    x_part, y_part = shard(xs, ys, node=0, total_nodes=2, shuffle=True)
    assert x_part.tolist() == y_part


def test_arrays_of_different_lengths_raise_naming_the_lengths() -> None:
    with pytest.raises(ValueError, match=r"\[3, 4\]"):
        shard([1, 2, 3], [1, 2, 3, 4], node=0, total_nodes=1)


# --- where the node comes from ---------------------------------------------------------------------


def test_node_defaults_to_the_global_worker_index() -> None:
    runtime.set_instance_info(InstanceInfo(node=1, total_nodes=2, worker=1, workers_per_node=2))
    # 4 workers in all; this is worker 3, so it takes the last quarter.
    assert shard(list(range(8))) == [6, 7]


def test_explicit_node_overrides_only_what_it_names() -> None:
    runtime.set_instance_info(InstanceInfo(node=0, total_nodes=4))
    assert shard(list(range(8)), node=3) == [6, 7]


def test_shard_off_a_pool_without_a_node_raises() -> None:
    with pytest.raises(NoActivePoolError):
        shard([1, 2, 3])


@needs_numpy
def test_numpy_integers_are_accepted_as_the_place() -> None:
    assert shard([1, 2, 3, 4], node=np.int64(1), total_nodes=np.int32(2)) == [3, 4]


@pytest.mark.parametrize(("node", "total"), [("0", 2), (0.0, 2), (True, 2)])
def test_non_integer_place_raises_type_error(node: object, total: int) -> None:
    with pytest.raises(TypeError, match="node"):
        shard([1, 2, 3], node=node, total_nodes=total)


@pytest.mark.parametrize(("node", "total"), [(2, 2), (-1, 2), (0, 0), (0, -3)])
def test_node_outside_the_pool_raises_value_error(node: int, total: int) -> None:
    with pytest.raises(ValueError):
        shard([1, 2, 3], node=node, total_nodes=total)


# --- how it splits ---------------------------------------------------------------------------------


def test_remainder_goes_one_each_to_the_first_nodes() -> None:
    assert [len(p) for p in _all_shards(list(range(10)), 4)] == [3, 3, 2, 2]


def test_drop_last_gives_every_node_the_same_count() -> None:
    assert [len(p) for p in _all_shards(list(range(10)), 4, drop_last=True)] == [2, 2, 2, 2]


def test_unshuffled_shards_are_contiguous_and_in_order() -> None:
    assert _all_shards(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]


def test_more_nodes_than_items_leaves_some_nodes_empty() -> None:
    assert _all_shards([1, 2], 4) == [[1], [2], [], []]


def test_empty_input_gives_empty_shards() -> None:
    assert _all_shards([], 3) == [[], [], []]


def test_shuffle_is_the_same_on_every_call_with_the_same_seed() -> None:
    assert shard(list(range(50)), node=0, total_nodes=2, shuffle=True, seed=7) == shard(
        list(range(50)), node=0, total_nodes=2, shuffle=True, seed=7
    )


def test_shuffle_differs_between_seeds() -> None:
    a = shard(list(range(50)), node=0, total_nodes=2, shuffle=True, seed=1)
    b = shard(list(range(50)), node=0, total_nodes=2, shuffle=True, seed=2)
    assert a != b


def test_shuffle_actually_reorders() -> None:
    assert sorted(shard(list(range(50)), node=0, total_nodes=1, shuffle=True)) == list(range(50))
    assert shard(list(range(50)), node=0, total_nodes=1, shuffle=True) != list(range(50))


def test_shards_cover_the_input_exactly_on_a_grid_of_sizes() -> None:
    for length, total, shuffle in itertools.product(range(13), range(1, 6), (False, True)):
        data = [f"item{i}" for i in range(length)]
        parts = _all_shards(data, total, shuffle=shuffle, seed=length)
        assert Counter(itertools.chain.from_iterable(parts)) == Counter(data), (length, total, shuffle)


def test_drop_last_shards_are_disjoint_and_equal_on_a_grid_of_sizes() -> None:
    for length, total, shuffle in itertools.product(range(13), range(1, 6), (False, True)):
        parts = _all_shards(list(range(length)), total, shuffle=shuffle, drop_last=True)
        flat = list(itertools.chain.from_iterable(parts))
        assert len(set(flat)) == len(flat) == total * (length // total), (length, total, shuffle)
        assert {len(p) for p in parts} == {length // total}


if hypothesis is not None:

    @hypothesis.given(
        data=st.lists(st.integers()),
        total=st.integers(min_value=1, max_value=9),
        shuffle=st.booleans(),
        seed=st.integers(min_value=0, max_value=2**32),
    )
    def test_union_of_shards_is_the_input(data: list[int], total: int, shuffle: bool, seed: int) -> None:
        parts = _all_shards(data, total, shuffle=shuffle, seed=seed)
        assert Counter(itertools.chain.from_iterable(parts)) == Counter(data)
        assert max(map(len, parts)) - min(map(len, parts)) <= 1

    @hypothesis.given(
        length=st.integers(min_value=0, max_value=200),
        total=st.integers(min_value=1, max_value=9),
        seed=st.integers(min_value=0, max_value=2**32),
    )
    def test_shuffled_shards_are_disjoint(length: int, total: int, seed: int) -> None:
        parts = _all_shards(list(range(length)), total, shuffle=True, seed=seed)
        flat = list(itertools.chain.from_iterable(parts))
        assert len(flat) == len(set(flat)) == length


# --- DistributedSampler ----------------------------------------------------------------------------


def test_sampler_len_is_the_padded_per_replica_count() -> None:
    assert len(DistributedSampler(range(10), num_replicas=4, rank=0)) == 3


def test_sampler_drop_last_len_is_the_floor() -> None:
    assert len(DistributedSampler(range(10), num_replicas=4, rank=0, drop_last=True)) == 2


def test_sampler_replicas_yield_equal_counts_covering_the_dataset() -> None:
    samplers = [DistributedSampler(range(10), num_replicas=4, rank=r, shuffle=True) for r in range(4)]
    parts = [list(s) for s in samplers]
    assert [len(p) for p in parts] == [3, 3, 3, 3]
    assert set(itertools.chain.from_iterable(parts)) == set(range(10))


def test_sampler_drop_last_replicas_are_disjoint() -> None:
    parts = [list(DistributedSampler(range(10), num_replicas=4, rank=r, drop_last=True)) for r in range(4)]
    flat = list(itertools.chain.from_iterable(parts))
    assert len(flat) == len(set(flat)) == 8


def test_sampler_set_epoch_changes_the_order() -> None:
    sampler = DistributedSampler(range(100), num_replicas=2, rank=0)
    first = list(sampler)
    sampler.set_epoch(1)
    assert list(sampler) != first
    assert len(list(sampler)) == 50


def test_sampler_same_epoch_gives_the_same_order() -> None:
    a = DistributedSampler(range(100), num_replicas=2, rank=1, seed=5)
    b = DistributedSampler(range(100), num_replicas=2, rank=1, seed=5)
    a.set_epoch(3)
    b.set_epoch(3)
    assert list(a) == list(b)


def test_sampler_without_shuffle_is_strided() -> None:
    assert list(DistributedSampler(range(7), num_replicas=3, rank=1, shuffle=False)) == [1, 4, 0]


def test_sampler_takes_rank_and_replicas_from_instance_info() -> None:
    runtime.set_instance_info(InstanceInfo(node=1, total_nodes=2, workers_per_node=2))
    sampler = DistributedSampler(range(8), shuffle=False)
    assert (sampler.rank, sampler.num_replicas) == (2, 4)
    assert list(sampler) == [2, 6]


def test_sampler_off_a_pool_without_rank_raises() -> None:
    with pytest.raises(NoActivePoolError):
        DistributedSampler(range(8))


def test_sampler_rank_out_of_range_raises() -> None:
    with pytest.raises(ValueError, match="rank"):
        DistributedSampler(range(8), num_replicas=2, rank=2)


def test_sampler_on_an_empty_dataset_yields_nothing() -> None:
    assert list(DistributedSampler([], num_replicas=2, rank=0)) == []


def test_sampler_pads_a_dataset_smaller_than_the_replica_count() -> None:
    parts = [list(DistributedSampler([0, 1], num_replicas=5, rank=r, shuffle=False)) for r in range(5)]
    assert parts == [[0], [1], [0], [1], [0]]


@pytest.mark.parametrize(
    ("length", "replicas", "drop_last"), [(10, 3, False), (10, 3, True), (2, 5, False), (9, 3, True)]
)
def test_sampler_matches_torch_without_shuffle(length: int, replicas: int, drop_last: bool) -> None:
    torch_data = pytest.importorskip("torch.utils.data")
    for rank in range(replicas):
        ours = DistributedSampler(
            range(length), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last
        )
        theirs = torch_data.DistributedSampler(
            range(length), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last
        )
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)


def test_sampler_drives_a_torch_dataloader() -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    dataset = TensorDataset(torch.arange(10))
    seen: list[int] = []
    for rank in range(2):
        sampler = DistributedSampler(dataset, num_replicas=2, rank=rank, seed=3)
        sampler.set_epoch(1)
        loader = DataLoader(dataset, batch_size=2, sampler=sampler)
        assert len(loader) == 3
        for (batch,) in loader:
            seen.extend(batch.tolist())
    assert sorted(seen) == list(range(10))
