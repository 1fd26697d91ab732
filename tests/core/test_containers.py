"""`sky.containers`: the documented references, and what each image is known to carry."""

from __future__ import annotations

import pickle

import pytest

import skyward as sky


def test_cuda_spells_nvidias_tag_with_the_last_patch_release() -> None:
    image = sky.containers.cuda("12.9", variant="devel", ubuntu="24.04")
    assert image == sky.DockerImage("nvidia/cuda:12.9.1-devel-ubuntu24.04", cuda="12.9", ubuntu="24.04")
    assert str(image) == image.ref and image.cuda_tag == "cu129"


def test_cuda_defaults_to_an_ubuntu_that_nvidia_publishes_for_that_release() -> None:
    assert sky.containers.cuda("12.4").ref == "nvidia/cuda:12.4.1-devel-ubuntu22.04"
    assert sky.containers.cuda("12.8", variant="runtime").ref == "nvidia/cuda:12.8.1-runtime-ubuntu24.04"
    assert sky.containers.cuda("12.6.2").ref == "nvidia/cuda:12.6.2-devel-ubuntu24.04"


def test_ubuntu_pytorch_and_runpod_pytorch_name_their_images() -> None:
    assert sky.containers.ubuntu("24.04") == sky.DockerImage("ubuntu:24.04", ubuntu="24.04")
    ngc = sky.containers.pytorch("2.8", cuda="12.8")
    assert (ngc.ref, ngc.cuda) == ("nvcr.io/nvidia/pytorch:25.06-py3", "12.9")  # the nearest newer 12.x
    assert sky.containers.pytorch("2.8", cuda="13.0").ref == "nvcr.io/nvidia/pytorch:25.08-py3"
    runpod = sky.containers.runpod_pytorch("2.8")
    assert runpod.ref.startswith("runpod/pytorch:2.8.0-") and runpod.cuda == "12.8"


def test_of_wraps_any_reference_with_what_is_known_of_it() -> None:
    image = sky.containers.DockerImage.of("repo/tag", cuda="12.8", ubuntu="22.04")
    assert image == sky.DockerImage("repo/tag", cuda="12.8", ubuntu="22.04")
    assert pickle.loads(pickle.dumps(image)) == image and hash(image) == hash(sky.DockerImage.of(image))


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: sky.containers.cuda("12.7"), "no known nvidia/cuda release for CUDA 12.7"),
        (lambda: sky.containers.cuda("12.8", variant="full"), "expected one of base, runtime"),
        (lambda: sky.containers.pytorch("1.0"), "no known NGC release carries torch 1.0"),
        (lambda: sky.containers.runpod_pytorch("9.9"), "known torch versions are"),
        (lambda: sky.DockerImage.of("has space"), "expected an image reference"),
    ],
)
def test_what_no_image_matches_is_refused_saying_what_would(make, says: str) -> None:
    with pytest.raises(sky.ConfigurationError, match=says):
        make()
