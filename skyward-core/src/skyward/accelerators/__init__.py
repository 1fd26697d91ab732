"""`sky.accelerators`: which cards a node should carry.

One factory per catalog card (`A100(memory="40GB", count=8)`, `H100(form_factor="SXM")`, ...),
generated from the table in `catalog.py`; `Custom(name)` for anything else; `resolve()` for strings,
so `accelerator="A100:8"` works wherever an accelerator is accepted. `names()` lists the catalog.
"""

from __future__ import annotations

from skyward.accelerators._factories import FACTORIES, Custom, catalog, names, resolve
from skyward.accelerators._model import Accelerator, Card

globals().update(FACTORIES)

__all__ = ["Accelerator", "Card", "Custom", "catalog", "names", "resolve", *FACTORIES]
