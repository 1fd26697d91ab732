"""`sky providers --check` makes one cheap authenticated call for RunPod and Vast.ai too (listing the
account's machines), against their fake APIs: a key that works is `verified`, one refused is
`refused` with exit code 1, and without a key nothing is called."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import Sky, no_traceback
from offers_support import environment, start_runpod, start_vast


@pytest.fixture
def fakes(sky: Sky, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    runpod, vast = start_runpod(tmp_path / "runpod"), start_vast(tmp_path / "vast")
    sky.env.update(environment(None, runpod, vast))
    yield runpod, vast
    runpod.stop()
    vast.stop()


def credentials(listing: dict[str, Any], provider: str) -> dict[str, Any]:
    return next(row["credentials"] for row in listing["providers"] if row["type"] == provider)


def test_check_verifies_runpod_and_vast_keys_with_their_apis(sky: Sky, fakes: tuple[Any, Any]) -> None:
    listing = sky.json("providers", "--check")
    runpod, vast = credentials(listing, "runpod"), credentials(listing, "vastai")
    assert (runpod["verified"], runpod["detail"]) == (True, "the key lists the account's pods (0)")
    assert (vast["verified"], vast["detail"]) == (True, "the key lists the account's instances (0)")


def test_without_check_no_call_is_made(sky: Sky, fakes: tuple[Any, Any]) -> None:
    _, vast = fakes
    listing = sky.json("providers")
    assert [credentials(listing, p)["verified"] for p in ("runpod", "vastai")] == [None, None]
    assert vast.requests == []


def test_a_refused_key_is_reported_and_the_exit_code_is_1(sky: Sky, fakes: tuple[Any, Any]) -> None:
    done = sky("providers", "check", "--json", RUNPOD_API_KEY="rpa_wrong", VAST_API_KEY="vast-wrong")
    assert done.returncode == 1 and no_traceback(done)
    listing = json.loads(done.stdout)
    runpod, vast = credentials(listing, "runpod"), credentials(listing, "vastai")
    assert runpod["verified"] is False and "refused the API key" in runpod["detail"]
    assert vast["verified"] is False and "API key was refused" in vast["detail"]
    assert "rpa_wrong" not in done.stdout + done.stderr and "vast-wrong" not in done.stdout + done.stderr
    assert "credentials refused by: RunPod, VastAI" in done.stderr
