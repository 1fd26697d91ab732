"""The pickler behind the wire: cloudpickle, with torch tensors sent as their raw memory.

torch pickles a tensor by serialising its storage into an in-band bytes object, which copies it
twice and ran at about 250 MB/s where a numpy array's memory travels out of band (and through
shared memory on this host) at several GB/s. A plain CPU tensor that owns all of its storage is
therefore pickled as a flat numpy view of that memory plus its dtype, shape and `requires_grad`,
and rebuilt with `torch.from_numpy`: no copy on either side beyond the transfer itself.

Anything else (a GPU tensor, a view into part of a storage, a subclass such as `nn.Parameter`, a
non-leaf tensor, sparse or quantized layouts, dtypes numpy cannot view) takes torch's own path.
Two tensors over the same whole storage (`a` and `a.view(...)`) still share memory on arrival.
torch is never imported here: a tensor can only exist if its sender already imported it.

A code object (the body of a function shipped by value: one defined in `__main__`, a notebook cell,
a closure) keeps its file name. cloudpickle 3.1 writes every code object with the file name
`"<dynamic-code>"` (3.0 kept the real one), so a remote traceback would say
`File "<dynamic-code>", line 6` where the user wrote `train.py`; `rebuild_code` puts the name back.
"""

from __future__ import annotations

import io
import sys
import types
from collections.abc import Callable
from typing import Any

import cloudpickle

# cloudpickle's reducer for code objects (the table its Pickler dispatches on): its arguments
# follow each Python version's CodeType constructor, which this module then need not know.
_cloudpickle_code_reduce = cloudpickle.Pickler.dispatch_table[types.CodeType]

#: Tensors smaller than this take torch's own path: their bytes would travel in band anyway.
TENSOR_MIN_BYTES = 64 * 1024


class Pickler(cloudpickle.Pickler):
    def __init__(self, file: Any, buffer_callback: Callable[[Any], Any] | None = None) -> None:
        super().__init__(file, protocol=5, buffer_callback=buffer_callback)
        self._tensor_arrays: dict[tuple[int, str], Any] = {}  # one array per storage and dtype

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is types.CodeType:
            return _reduce_code(obj)
        torch = sys.modules.get("torch")
        if torch is not None and type(obj) is torch.Tensor:
            reduced = self._reduce_tensor(torch, obj)
            if reduced is not None:
                return reduced
        return super().reducer_override(obj)

    def _reduce_tensor(self, torch: Any, tensor: Any) -> tuple[Any, ...] | None:
        nbytes = tensor.numel() * tensor.element_size()
        if (
            nbytes < TENSOR_MIN_BYTES
            or tensor.device.type != "cpu"
            or tensor.layout is not torch.strided
            or tensor.is_quantized
            or (tensor.requires_grad and not tensor.is_leaf)
            or not tensor.is_contiguous()
            or tensor.storage_offset() != 0
            or tensor.untyped_storage().nbytes() != nbytes
        ):
            return None
        dtype = str(tensor.dtype).removeprefix("torch.")
        key = (tensor.data_ptr(), dtype)
        array = self._tensor_arrays.get(key)
        if array is None:
            flat = tensor.detach().reshape(-1)
            try:
                array = flat.view(torch.int16).numpy() if tensor.dtype is torch.bfloat16 else flat.numpy()
            except (TypeError, RuntimeError):  # a dtype numpy has no view for
                return None
            self._tensor_arrays[key] = array
        return rebuild_tensor, (array, dtype, tuple(tensor.shape), tensor.requires_grad)


def _reduce_code(code: types.CodeType) -> tuple[Any, ...]:
    """cloudpickle's own reduction of `code`, rebuilt under the file name it was compiled from."""
    constructor, args = _cloudpickle_code_reduce(code)
    return rebuild_code, (constructor, args, code.co_filename)


def rebuild_code(constructor: Any, args: tuple[Any, ...], filename: str) -> types.CodeType:
    """The receiving side of `_reduce_code`: the code object, naming the file it came from."""
    code = constructor(*args)
    return code if code.co_filename == filename else code.replace(co_filename=filename)


def dumps(obj: Any, buffer_callback: Callable[[Any], Any] | None = None) -> bytes:
    """cloudpickle.dumps with the tensor path and code file names, protocol 5."""
    with io.BytesIO() as file:
        Pickler(file, buffer_callback=buffer_callback).dump(obj)
        return file.getvalue()


def rebuild_tensor(array: Any, dtype: str, shape: tuple[int, ...], requires_grad: bool) -> Any:
    """The receiving side of `Pickler._reduce_tensor`: the tensor over the array's memory."""
    import torch

    tensor = torch.from_numpy(array)
    wanted = getattr(torch, dtype)
    if tensor.dtype is not wanted:
        tensor = tensor.view(wanted)
    tensor = tensor.reshape(shape)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor
