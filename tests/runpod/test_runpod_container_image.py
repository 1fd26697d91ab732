"""`RunPod(container_image=sky.containers...)`: the helper's reference is the pod's image."""

from __future__ import annotations

from fake_runpod import FakeRunPod
from runpod_support import runpod, runpod_pool

import skyward as sky


def test_a_docker_image_from_sky_containers_reaches_the_pod_creation(runpod_api: FakeRunPod) -> None:
    image = sky.containers.cuda("12.8", variant="cudnn-devel", ubuntu="22.04")
    with runpod_pool(runpod_api, provider=runpod(runpod_api, container_image=image), accelerator="A100"):
        pass
    (body,) = runpod_api.creates
    assert body["imageName"] == "nvidia/cuda:12.8.1-cudnn-devel-ubuntu22.04"


def test_a_plain_string_is_taken_as_the_reference() -> None:
    assert sky.RunPod(api_key="k", container_image="myorg/train:1").container_image == "myorg/train:1"
