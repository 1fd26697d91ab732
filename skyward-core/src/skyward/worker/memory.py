"""A worker gives the memory of large frames back as soon as it frees them.

glibc serves an allocation of 128 KiB or more from its own mapping, returned to the system when
freed, but it raises that threshold to the size of the first such block freed (up to 32 MiB).
From then on a worker's 1 MB functions and arguments come from its heap arenas, one per thread
that allocates, where freed blocks fragment and stay: under load, with reader and task threads
interleaving, a worker that holds 256 MiB of functions was measured at twice that. A fixed
threshold turns the adjustment off, so the worker's size follows what it holds.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys

#: glibc's `mallopt` parameter for the mmap threshold (malloc.h's M_MMAP_THRESHOLD).
M_MMAP_THRESHOLD = -3
#: Blocks this large or larger get a mapping of their own; smaller ones (most objects) the heap.
MMAP_THRESHOLD = 256 << 10


def return_large_blocks_to_the_system(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at `threshold` bytes; whether it took (False off glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):  # the process's own symbols: libc's, on Linux
        return bool(ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, threshold))
    return False  # a libc without mallopt (musl)
