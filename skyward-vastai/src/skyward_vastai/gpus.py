"""Skyward's accelerator names -> the `gpu_name` values Vast.ai's offers carry.

Vast spells most cards as the catalog does with spaces ("RTX 4090", "RTX A6000"); the rest
(data-centre parts with a form factor, Tesla- and Quadro-branded cards, Ada workstation cards) are
listed here. A `Custom` accelerator is taken at its word, so a card Vast lists that the catalog
lacks still works.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from skyward.errors import ConfigurationError

if TYPE_CHECKING:
    from skyward.accelerators import Accelerator

#: card -> {form factor (None: any) -> Vast gpu_name values}
_FORMS: dict[str, dict[str | None, tuple[str, ...]]] = {
    "A100": {"SXM": ("A100 SXM4",), "PCIe": ("A100 PCIE",), None: ("A100 SXM4", "A100 PCIE", "A100X")},
    "A800": {"SXM": ("A800 SXM4",), "PCIe": ("A800 PCIE",), None: ("A800 SXM4", "A800 PCIE")},
    "H100": {"SXM": ("H100 SXM",), "PCIe": ("H100 PCIE",), "NVL": ("H100 NVL",),
             None: ("H100 SXM", "H100 PCIE", "H100 NVL")},
    "H200": {"SXM": ("H200",), "NVL": ("H200 NVL",), None: ("H200", "H200 NVL")},
    "V100": {None: ("Tesla V100",)},
    "P100": {None: ("Tesla P100",)},
}
_NAMES: dict[str, tuple[str, ...]] = {
    "T4": ("Tesla T4",), "P40": ("Tesla P40",), "P4": ("Tesla P4",), "K80": ("Tesla K80",),
    "GH200": ("GH200 SXM",),
    "RTX_6000_Ada": ("RTX 6000Ada",), "RTX_5000_Ada": ("RTX 5000Ada",), "RTX_4500_Ada": ("RTX 4500Ada",),
    "RTX_4000_Ada": ("RTX 4000Ada",), "RTX_2000_Ada": ("RTX 2000Ada",),
    "RTX_PRO_6000": ("RTX PRO 6000 WS", "RTX PRO 6000 S"),
    "Quadro_RTX_8000": ("Q RTX 8000",), "Quadro_RTX_6000": ("Q RTX 6000",),
    "Quadro_RTX_5000": ("Q RTX 5000",), "Quadro_RTX_4000": ("Q RTX 4000",),
}
#: Manufacturers whose cards Vast's marketplace does not carry.
_ELSEWHERE = {"Google": "TPUs are Google Cloud's", "AWS": "Trainium and Inferentia are AWS's"}


def gpu_names(accelerator: Accelerator) -> tuple[str, ...]:
    """The `gpu_name` values an offer may have to carry `accelerator` (any of them will do)."""
    if accelerator.manufacturer == "custom":
        return (accelerator.name,)
    if accelerator.manufacturer in _ELSEWHERE:
        raise ConfigurationError(
            f"VastAI cannot rent {accelerator.name}: {_ELSEWHERE[accelerator.manufacturer]}; "
            "Vast.ai's marketplace lists GPUs (NVIDIA, some AMD)"
        )
    if accelerator.name in _FORMS:
        forms = _FORMS[accelerator.name]
        return forms.get(accelerator.form_factor, forms[None])
    return _NAMES.get(accelerator.name, (accelerator.name.replace("_", " "),))


def gpu_count(accelerator: Accelerator) -> int:
    """Whole GPUs per machine: Vast rents whole cards, so a fractional count rounds up."""
    return max(1, math.ceil(accelerator.count))


def min_gpu_ram_mb(accelerator: Accelerator) -> int | None:
    """The least per-card memory (MB, as the API counts it) an offer may have, or None.

    Vast reports usable memory (a 24 GB card shows ~24564 MB), so the floor is 5% under the
    nominal size: enough to tell a 40 GB A100 from an 80 GB one, never to refuse a real 24 GB card.
    """
    gb = accelerator.memory_gb
    return int(gb * 1000 * 0.95) if gb else None
