"""The names users of `skyward` catch and annotate with: the provisioning errors, `Offer`,
`Storage`, `SpecSkipped` and the strategy aliases, each on `sky` and in `sky.__all__`."""

from __future__ import annotations

from typing import get_args

import pytest

import skyward as sky
from skyward.options import EXECUTORS, SELECTIONS
from skyward.spec import ALLOCATIONS

NEW_NAMES = (
    "AllocationStrategy", "NoOffersError", "Offer", "ProvisioningError", "SelectionStrategy", "SpecSkipped",
    "Storage", "WorkerExecutor",
)


@pytest.mark.parametrize("name", NEW_NAMES)
def test_the_name_is_public_and_resolves(name: str) -> None:
    assert name in sky.__all__ and name in dir(sky)
    assert getattr(sky, name) is not None


def test_every_name_in_all_resolves_and_none_is_listed_twice() -> None:
    assert len(sky.__all__) == len(set(sky.__all__))
    for name in sky.__all__:
        getattr(sky, name)


@pytest.mark.parametrize("error", ["ProvisionError", "CapacityError", "NoOffersError"])
def test_every_provisioning_failure_is_a_provisioning_error(error: str) -> None:
    assert issubclass(getattr(sky, error), sky.ProvisioningError)


def test_no_offers_and_capacity_stay_provision_errors_for_code_that_catches_those() -> None:
    assert issubclass(sky.NoOffersError, sky.ProvisionError)
    assert issubclass(sky.CapacityError, sky.ProvisionError)
    assert not issubclass(sky.NoOffersError, sky.CapacityError)


def test_a_provisioning_error_is_a_skyward_runtime_error() -> None:
    assert issubclass(sky.ProvisioningError, sky.SkywardError)
    assert issubclass(sky.ProvisioningError, RuntimeError)


def test_offer_is_the_market_record_that_offers_return() -> None:
    from skyward.market.offer import Offer

    assert sky.Offer is Offer


def test_storage_is_the_store_volumes_mount() -> None:
    from skyward.storage.client import Storage

    assert sky.Storage is Storage


def test_selection_strategy_lists_what_options_accepts() -> None:
    assert set(get_args(sky.SelectionStrategy)) == set(SELECTIONS)


def test_worker_executor_lists_what_worker_accepts() -> None:
    assert set(get_args(sky.WorkerExecutor)) == set(EXECUTORS)


def test_allocation_strategy_lists_what_spec_accepts_but_the_older_name() -> None:
    assert set(get_args(sky.AllocationStrategy)) == set(ALLOCATIONS) - {"always-spot"}


def test_spec_skipped_is_a_non_fatal_error_event() -> None:
    event = sky.SpecSkipped(message="skipping RunPod: ...", provider="RunPod", reason="...",
                            credential="RUNPOD_API_KEY")
    assert isinstance(event, sky.Error) and isinstance(event, sky.Event) and event.fatal is False
