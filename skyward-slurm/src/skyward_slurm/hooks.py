"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.Slurm` and `provider="slurm"` resolve through `skyward_providers`; `sky ls` / `sky down` find
the user's Skyward jobs through `skyward_sweepers`. Both import lazily: discovery stays light.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_slurm.config import Slurm

    return {"Slurm": Slurm}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_slurm.sweep import SlurmSweeper

    return [SlurmSweeper()]
