"""RunPod's key is looked for when a pool starts, not when `sky.RunPod()` is built: a config built
without a key runs once `RUNPOD_API_KEY` is set, and a pool with several specs starts on RunPod
when the key is there and skips it for the next spec when it is not (against the fake API)."""

from __future__ import annotations

import pytest
from cloud_workloads import where
from fake_runpod import FakeRunPod
from runpod_support import API_KEY, runpod

import skyward as sky


def runpod_then_local(api: FakeRunPod, events: list[sky.Event]) -> sky.Pool:
    return sky.Compute(
        sky.Spec(provider=runpod(api, api_key=None)), sky.Spec(provider=sky.Local()),
        options=sky.Options(selection="first"), console=False, logging=False, on_event=events.append,
    )


def test_a_config_built_before_the_key_was_set_starts_with_the_key_from_the_environment(
    runpod_api: FakeRunPod, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[sky.Event] = []
    compute = runpod_then_local(runpod_api, events)  # built with no key anywhere
    monkeypatch.setenv("RUNPOD_API_KEY", API_KEY)
    with compute as pool:
        assert (where() >> pool)[2] == "runpod"
    assert runpod_api.creates and runpod_api.pods == {}
    assert not [e for e in events if isinstance(e, sky.SpecSkipped)]


def test_without_the_key_the_pool_skips_runpod_and_creates_no_pod(runpod_api: FakeRunPod) -> None:
    events: list[sky.Event] = []
    with runpod_then_local(runpod_api, events) as pool:
        assert (where() >> pool)[2] == "local"
    assert runpod_api.creates == []
    (skipped,) = [e for e in events if isinstance(e, sky.SpecSkipped)]
    assert (skipped.provider, skipped.credential) == ("RunPod", "RUNPOD_API_KEY")
