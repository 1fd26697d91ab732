"""Split data across the pool so every worker takes a disjoint part: `sky.shard` and `DistributedSampler`.

Both work out the split from the same inputs on every worker (the data's length, the seed, the
worker's index), with no communication: the permutation comes from `random.Random(seed)`, which is
identical in every process, so the parts stay disjoint and together cover the data.

Neither imports numpy or torch: an ndarray or Tensor can only reach `shard` from code that already
imported its library, and `DistributedSampler` only yields ints, which a torch `DataLoader` accepts.
"""

from __future__ import annotations

import math
import operator
import random
import sys
from collections.abc import Iterator, Mapping, Set
from typing import Any

from skyward.task.runtime import instance_info

__all__ = ["DistributedSampler", "shard"]


def shard(
    *data: Any,
    shuffle: bool = False,
    seed: int = 0,
    drop_last: bool = False,
    node: int | None = None,
    total_nodes: int | None = None,
) -> Any:
    """This worker's disjoint slice of `data`, of the same type as the input.

    `node` and `total_nodes` default to `instance_info().global_worker_index` and `.total_workers`:
    on a pool running several workers per node (MIG, say) each *worker* gets its own slice, not each
    machine. Pass them explicitly to split by machine, or to shard outside a pool.

    Without `drop_last` the `len % total_nodes` leftover items go one each to the first nodes, so the
    slices together are exactly the input; with it every node gets `len // total_nodes` items and the
    rest is dropped (after shuffling, so which items are dropped is random too).

    Several arrays are split with the same indices and come back as a tuple of aligned shards.

    Types: list -> list, tuple (and namedtuple) -> tuple, str/bytes/bytearray -> same, range ->
    range (a list when shuffled), numpy ndarray -> ndarray, torch Tensor -> Tensor (on the same
    device), pandas objects -> same (by position), any other sequence -> list. A dict is refused
    (pass `list(d.items())`), and so is a set, whose order can differ between processes.
    """
    if not data:
        raise TypeError("shard() needs at least one sequence to split, e.g. sky.shard(dataset)")
    if node is None or total_nodes is None:
        info = instance_info()
        node = info.global_worker_index if node is None else node
        total_nodes = info.total_workers if total_nodes is None else total_nodes
    node, total_nodes = _check_place(node, total_nodes)

    lengths = [_length(item) for item in data]
    if len(set(lengths)) > 1:
        raise ValueError(f"shard() needs sequences of one length to keep them aligned; got lengths {lengths}")
    indices = _partition(lengths[0], node, total_nodes, shuffle=shuffle, seed=seed, drop_last=drop_last)
    shards = tuple(_take(item, indices) for item in data)
    return shards[0] if len(shards) == 1 else shards


def _check_place(node: Any, total: Any) -> tuple[int, int]:
    """Validate a place in the pool; any int-like (numpy ints, a rank from torch) is accepted."""
    total = _as_int(total, "total_nodes")
    node = _as_int(node, "node")
    if total < 1:
        raise ValueError(f"total_nodes must be at least 1, got {total}")
    if not 0 <= node < total:
        raise ValueError(f"node must be in 0..{total - 1} (total_nodes={total}), got {node}")
    return node, total


def _as_int(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}") from None


def _partition(
    length: int, node: int, total: int, *, shuffle: bool, seed: int, drop_last: bool
) -> range | list[int]:
    """The positions `node` takes: a contiguous block, of the identity or of a seeded permutation."""
    base, extra = divmod(length, total)
    if drop_last:
        start, size = node * base, base
    else:
        start, size = node * base + min(node, extra), base + (1 if node < extra else 0)
    if not shuffle:
        return range(start, start + size)
    order = list(range(length))
    random.Random(seed).shuffle(order)
    return order[start : start + size]


def _length(data: Any) -> int:
    if isinstance(data, Mapping):
        raise TypeError(
            f"shard() cannot split a {type(data).__name__}: a mapping has no positions. "
            "Pass list(d.items()) (or list(d) for the keys) and rebuild with dict(...) if needed"
        )
    if isinstance(data, Set):
        raise TypeError(
            f"shard() cannot split a {type(data).__name__}: its order can differ between processes, "
            "so the slices would overlap. Pass sorted(s) instead"
        )
    shape = getattr(data, "shape", None)
    if shape is not None and _is_array_like(data):
        if len(shape) == 0:
            raise TypeError(f"shard() cannot split a 0-dimensional {type(data).__name__}")
        return int(shape[0])
    if not (hasattr(data, "__len__") and hasattr(data, "__getitem__")):
        raise TypeError(
            f"shard() needs a sequence with a length and indexing (list, tuple, ndarray, Tensor, ...); "
            f"got {type(data).__name__}. Materialise iterators with list(...) first"
        )
    return len(data)


def _module_of(data: Any) -> str:
    return type(data).__module__ or ""


def _is_numpy(data: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(data, np.ndarray)


def _is_torch(data: Any) -> bool:
    return _module_of(data).startswith("torch") and hasattr(data, "shape")


def _is_pandas(data: Any) -> bool:
    return _module_of(data).startswith("pandas") and hasattr(data, "iloc")


def _is_array_like(data: Any) -> bool:
    return _is_numpy(data) or _is_torch(data) or _is_pandas(data)


def _take(data: Any, indices: range | list[int]) -> Any:
    """The items at `indices`, in a container of the input's type where one can be built."""
    contiguous = isinstance(indices, range)
    if _is_numpy(data):
        import numpy as np  # already imported: the input is an ndarray

        return data[np.asarray(indices, dtype=np.intp)]
    if _is_torch(data):
        import torch  # already imported: the input is a Tensor

        return data[torch.as_tensor(list(indices), dtype=torch.long, device=data.device)]
    if _is_pandas(data):
        return data.iloc[list(indices)]
    if isinstance(data, (list, tuple, str, bytes, bytearray, range)) and contiguous:
        return data[indices.start : indices.stop]
    if isinstance(data, str):
        return "".join(data[i] for i in indices)
    if isinstance(data, (bytes, bytearray)):
        return type(data)(data[i] for i in indices)
    if isinstance(data, tuple):  # a namedtuple's fields do not fit a slice of it: plain tuple
        return tuple(data[i] for i in indices)
    return [data[i] for i in indices]


class DistributedSampler:
    """Yields this worker's dataset indices; pass it as `sampler=` to a torch `DataLoader`.

    Mirrors `torch.utils.data.DistributedSampler` (strided split, padding to equal length unless
    `drop_last`, `set_epoch` to reshuffle) but needs no torch at import time and takes its rank and
    replica count from `instance_info()` (global worker index and total workers) when not given,
    so it works without an initialised process group.

    Call `set_epoch(epoch)` before each epoch when shuffling; otherwise every epoch sees the same
    order. Every replica computes the same permutation from `seed + epoch`.
    """

    def __init__(
        self,
        dataset: Any,
        *,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        num_replicas: int | None = None,
        rank: int | None = None,
    ) -> None:
        if num_replicas is None or rank is None:
            info = instance_info()
            num_replicas = info.total_workers if num_replicas is None else num_replicas
            rank = info.global_worker_index if rank is None else rank
        num_replicas, rank = _as_int(num_replicas, "num_replicas"), _as_int(rank, "rank")
        if num_replicas < 1:
            raise ValueError(f"num_replicas must be at least 1, got {num_replicas}")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank must be in 0..{num_replicas - 1}, got {rank}")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        self.epoch = 0
        size = len(dataset)
        if drop_last:
            self.num_samples = size // num_replicas
        else:
            self.num_samples = math.ceil(size / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Change the shuffle for the next pass; call it with the epoch number before each epoch."""
        self.epoch = epoch

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self) -> Iterator[int]:
        indices = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(indices)
        if self.drop_last:
            indices = indices[: self.total_size]
        elif indices:
            # Repeat from the start so every replica takes the same number of steps (as torch does);
            # uneven counts would leave collective ops waiting on the replicas that finished early.
            missing = self.total_size - len(indices)
            indices += (indices * math.ceil(missing / len(indices)))[:missing]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __repr__(self) -> str:
        return (
            f"DistributedSampler(rank={self.rank}, num_replicas={self.num_replicas}, "
            f"shuffle={self.shuffle}, seed={self.seed}, drop_last={self.drop_last}, epoch={self.epoch})"
        )
