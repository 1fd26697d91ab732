"""What the provider kit gives every cloud: its API errors read one way (`providers.rest`), a
deletion retried (`rest.delete_retrying`), a listing's card found and its offers ordered by the
spec's allocation (`market.rental`)."""

from __future__ import annotations

import asyncio

import pytest

import skyward as sky
from skyward.errors import CapacityError, ConfigurationError, NoOffersError, ProvisionError
from skyward.market.offer import Offer
from skyward.market.rental import (
    Rental,
    fits,
    in_order,
    memory_fits,
    names_card,
    no_fit,
    number,
    on_demand_only,
    whole_gpus,
)
from skyward.providers.rest import ApiErrors, Gone, RateLimited, Refused, delete_retrying
from skyward.spec import Spec

ERRORS = ApiErrors(
    cloud="Nimbus",
    credential="the API key",
    credentials="check NIMBUS_API_KEY",
    capacity_phrases=("sold out",),
    advice={"insufficient_funds": "add funds to the account"},
)


def test_a_refused_key_names_where_the_key_comes_from() -> None:
    error = ERRORS.reading(401, {"message": "bad token"}, "list machines")
    assert type(error) is Refused  # a ProvisionError: the fix is the key, not a retry
    assert str(error) == (
        "Nimbus refused the API key (401: bad token) when asked to list machines: check NIMBUS_API_KEY"
    )


def test_no_capacity_by_status_or_by_the_apis_words_is_a_capacity_error() -> None:
    assert isinstance(ERRORS.reading(503, None, "create a machine"), CapacityError)
    assert isinstance(ERRORS.reading(400, {"error": "GPU sold out"}, "create a machine"), CapacityError)


def test_not_found_is_gone_and_too_many_requests_is_rate_limited() -> None:
    assert isinstance(ERRORS.reading(404, "", "read machine m1"), Gone)
    assert isinstance(ERRORS.reading(429, {"detail": "slow down"}, "list machines"), RateLimited)


def test_an_error_wrapped_in_an_error_object_is_read_inside_it() -> None:
    body = {"error": {"code": "launch/sold out", "message": "no room", "suggestion": "try later"}}
    error = ERRORS.reading(400, body, "create a machine")
    assert isinstance(error, CapacityError) and str(error).endswith("create a machine: no room")


def test_a_known_refusal_says_what_to_do() -> None:
    body = {"code": "insufficient_funds", "message": "balance too low"}
    error = ERRORS.reading(402, body, "create a machine")
    assert str(error).endswith("balance too low; add funds to the account")


def test_a_deletion_that_fails_once_is_retried_and_one_already_gone_is_done() -> None:
    answers: list[BaseException | None] = [ProvisionError("busy"), Gone("no such machine")]

    async def delete() -> None:
        answer = answers.pop(0)
        if answer is not None:
            raise answer

    asyncio.run(delete_retrying(delete, cloud="Nimbus", what="m1", where="the console", delay=0.0))
    assert answers == []


def test_a_deletion_that_keeps_failing_says_where_to_delete_by_hand() -> None:
    async def delete() -> None:
        raise ProvisionError("busy")

    says = "could not delete m1: busy; delete it in the console to stop billing"
    with pytest.raises(ProvisionError, match=says):
        asyncio.run(
            delete_retrying(delete, cloud="Nimbus", what="m1", where="the console", delay=0.0, attempts=2)
        )


def test_a_card_is_found_in_a_listings_words_and_memory() -> None:
    assert names_card("NVIDIA GeForce RTX 4090", "RTX_4090")
    assert names_card("A100 SXM4 80GB", "A100") and not names_card("A10G", "A100")
    assert memory_fits(80.0, 80.0) and not memory_fits(40.0, 80.0) and memory_fits(None, 80.0)


def test_a_listings_number_is_read_from_text_too_and_an_odd_field_is_zero() -> None:
    assert (number(24), number("80.5")) == (24.0, 80.5)
    assert (number(None), number("n/a"), number({})) == (0.0, 0.0, 0.0)


def test_a_fraction_of_a_gpu_is_refused_naming_the_cloud_and_the_fix() -> None:
    assert whole_gpus(2.0, "Nimbus") == 2
    with pytest.raises(ConfigurationError, match="Nimbus rents whole GPUs.*ask for 1"):
        whole_gpus(0.5, "Nimbus")


def rental(spot: bool, price: float) -> Rental:
    offer = Offer(provider="nimbus", instance_type="1x A100", spot_price=price, on_demand_price=price)
    return Rental(offer=offer, spot=spot)


def test_each_allocation_tries_its_kinds_in_its_order() -> None:
    offers = [rental(False, 1.0), rental(True, 0.9), rental(False, 0.5), rental(True, 0.6)]

    def order(allocation: str) -> list[tuple[bool, float]]:
        ordered = in_order(offers, allocation, spot=lambda o: o.spot, price=lambda o: o.price)
        return [(o.spot, o.price) for o in ordered]

    assert order("spot") == [(True, 0.6), (True, 0.9)]
    assert order("on-demand") == [(False, 0.5), (False, 1.0)]
    assert order("spot-if-available") == [(True, 0.6), (True, 0.9), (False, 0.5), (False, 1.0)]
    assert order("cheapest") == [(False, 0.5), (True, 0.6), (True, 0.9), (False, 1.0)]


def test_a_cloud_without_spot_refuses_spot_naming_the_fix_and_takes_every_other_allocation() -> None:
    with pytest.raises(NoOffersError, match='Nimbus sells no spot machines: use allocation="on-demand"'):
        on_demand_only("spot", "Nimbus")
    for allocation in ("on-demand", "spot-if-available", "cheapest"):
        on_demand_only(allocation, "Nimbus")


def test_a_listed_machine_fits_a_spec_by_card_count_memory_and_minimums() -> None:
    two = Spec(provider=sky.Local(), accelerator=sky.accelerators.A100(count=2), vcpus=8)
    machine = {"cloud": "Nimbus", "card": "NVIDIA A100-SXM4-80GB", "gpu_memory_gb": 80.0, "memory_gb": 64.0}
    assert fits(two, gpus=2, vcpus=16, **machine)
    assert not fits(two, gpus=1, vcpus=16, **machine), "one card short"
    assert not fits(two, gpus=2, vcpus=4, **machine), "fewer vCPUs than asked"
    assert not fits(two, gpus=2, vcpus=16, **{**machine, "gpu_memory_gb": 40.0}), "the 40 GB card"
    assert not fits(Spec(provider=sky.Local()), gpus=2, vcpus=16, **machine), "a CPU spec takes no GPU"


def test_nothing_fitting_names_what_was_asked_and_the_close_cards() -> None:
    error = no_fit(
        Spec(provider=sky.Local(), accelerator="H100"), ["H200", "A100", "L4"], cloud="Nimbus", kind="plan"
    )
    assert isinstance(error, NoOffersError)
    assert str(error).startswith("Nimbus has no plan with 1x H100 (80 GB); close GPUs: H200")
