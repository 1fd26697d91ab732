"""`VastAI(docker_image=sky.containers...)`: the helper's reference is the instance's image."""

from __future__ import annotations

import pytest
from vast_server import FakeVast
from vast_support import vast_pool, vast_provider

import skyward as sky


def test_a_docker_image_from_sky_containers_reaches_the_rent_request(vast: FakeVast) -> None:
    provider = vast_provider(vast, docker_image=sky.containers.pytorch("2.8", cuda="12.8"))
    with vast_pool(vast, provider=provider, accelerator="RTX 4090"):
        pass
    (body,) = vast.created
    assert body["image"] == "nvcr.io/nvidia/pytorch:25.06-py3"


def test_something_that_is_no_image_reference_is_refused_naming_the_argument() -> None:
    with pytest.raises(sky.ConfigurationError, match=r"VastAI\(docker_image=3\)"):
        sky.VastAI(docker_image=3)
