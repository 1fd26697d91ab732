"""A pool's id, and the names its machines carry: what keeps one pool's things apart from another's.

A pool's name is a label for people (`sky.Compute(name="train")`): the same script run twice, or
a server pool and a script pool named alike, carry the same label at once. Everything a pool
makes or keys is therefore keyed by its **id** instead (`new_pool_id`): the label made safe for
every cloud's names (lowercase letters, digits and dashes, as Verda's hostnames need) and eight
random hex digits. The machines' names, the login key (`~/.skyward/keys/<id>_ed25519`), the node
folders (`~/.skyward/pools/<id>/`), AWS's `skyward:pool` tag and the pool server's records all
use the id.

A sweep finds a pool's machines by parsing the id back out of each name (`machine_name`,
`parse_machine_name`) and comparing it whole: never by a prefix, which would take the machines of
a pool labelled `train-2` for those of `train`. `label_of` gives the label part back, for
`sky down NAME`, which still works by label.
"""

from __future__ import annotations

import re
import secrets

__all__ = ["ID_DIGITS", "MACHINE_PREFIX", "label_of", "machine_name", "new_pool_id", "parse_machine_name"]

#: The random part of an id: 32 bits, so two pools of one label never meet by chance.
ID_DIGITS = 8
#: How a machine of any Skyward pool is named on clouds that mark machines by name.
MACHINE_PREFIX = "skyward-"
#: The longest label part kept in an id (names on some clouds are limited to 63 characters).
_LABEL_LENGTH = 24
_UNSAFE = re.compile(r"[^a-z0-9]+")
_ID = re.compile(rf"^(?P<label>[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)-(?P<random>[0-9a-f]{{{ID_DIGITS}}})$")


def new_pool_id(label: str) -> str:
    """A new id for a pool labelled `label`: `<label, made safe>-<8 random hex digits>`."""
    safe = _UNSAFE.sub("-", label.lower()).strip("-")[:_LABEL_LENGTH].strip("-") or "pool"
    return f"{safe}-{secrets.token_hex(ID_DIGITS // 2)}"


def label_of(pool_id: str) -> str:
    """The label part of an id (`train-1a2b3c4d` -> `train`); an id of another form, as it is."""
    match = _ID.match(pool_id)
    return match["label"] if match else pool_id


def machine_name(pool_id: str, node: int, *, infix: str = "") -> str:
    """The name of node `node`'s machine: `skyward-<id>-<node>` (`infix` goes before the node:
    Vast.ai's labels read `skyward-<id>-node-<node>`)."""
    return f"{MACHINE_PREFIX}{pool_id}-{infix}{int(node)}"


def parse_machine_name(name: object, *, infix: str = "") -> tuple[str, int] | None:
    """(pool id, node) of a name `machine_name` made; None for any other name (or none)."""
    pattern = rf"^{re.escape(MACHINE_PREFIX)}(?P<pool>.+)-{re.escape(infix)}(?P<node>\d+)$"
    match = re.match(pattern, str(name or ""))
    return None if match is None else (match["pool"], int(match["node"]))


def of_pool(name: object, pool_id: str, *, infix: str = "") -> int | None:
    """The node of a machine named for exactly the pool `pool_id`; None for any other machine."""
    found = parse_machine_name(name, infix=infix)
    return found[1] if found is not None and found[0] == pool_id else None
