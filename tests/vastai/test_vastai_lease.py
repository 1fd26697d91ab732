"""The pool's lease in its Vast labels: written at rent time, moved forward while the pool runs.

Vast has no tags, so each instance's label says when the pool's lease lapses
(`skyward-<pool>-node-<node>@<epoch seconds>`): `sky down --expired` then tells a machine whose
client is gone from a long job (test_vastai_sweep_cli.py).
"""

from __future__ import annotations

import re
import time

import pytest
from vast_server import FakeVast
from vast_support import vast_pool

import skyward as sky
from skyward.client import release

TTL = 120
BOOTSTRAP_TIMEOUT = 200


def lease(label: str) -> int:
    match = re.fullmatch(r"skyward-.+-node-\d+@(\d+)", label)
    assert match is not None, label
    return int(match[1])


def test_a_rented_instance_is_labelled_with_the_boot_guardians_initial_lease(vast: FakeVast) -> None:
    before = time.time()
    with vast_pool(vast, nodes=1, ttl=TTL, options=sky.Options(bootstrap_timeout=BOOTSTRAP_TIMEOUT)) as pool:
        after = time.time()
        (rented,) = vast.created
    assert rented["label"].startswith(f"skyward-{pool.name}-node-0@")
    assert before + BOOTSTRAP_TIMEOUT + TTL - 1 <= lease(rented["label"]) <= after + BOOTSTRAP_TIMEOUT + TTL


def test_the_label_lease_is_renewed_to_a_ttl_ahead_while_the_pool_is_open(
    vast: FakeVast, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(release, "LEASE_MIN_INTERVAL", 0.2)
    monkeypatch.setattr(release, "LEASE_MAX_INTERVAL", 0.2)
    with vast_pool(vast, nodes=1, ttl=TTL) as pool:
        (instance,) = vast.live
        time.sleep(1.5)
        renewed = [body["label"] for method, path, body, _ in vast.requests
                   if method == "PUT" and f"/instances/{instance.id}/" in path and "label" in body]
        now = time.time()
        current = lease(instance.request["label"])
    assert len(renewed) >= 3, f"the pool renewed its lease {len(renewed)} times in 1.5 s, every 0.2 s"
    assert all(label.startswith(f"skyward-{pool.name}-node-0@") for label in renewed)
    assert now + TTL - 2 <= current <= now + TTL + 1, "the lease is not a ttl ahead"
