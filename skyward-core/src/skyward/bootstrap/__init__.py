"""Bootstrap: an `Image` becomes a list of Ops, and Ops become one bash script (see ops.py)."""

from skyward.bootstrap.ops import Op, as_op, as_ops

__all__ = ["Op", "as_op", "as_ops"]
