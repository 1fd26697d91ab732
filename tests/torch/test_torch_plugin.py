"""`sky.plugins.torch()` on its own: the image it asks for, where the name comes from, and its
`around_app` context run in this process as a one-rank group (the pool tests form real ones)."""

from __future__ import annotations

import importlib.metadata
import os
import socket
import subprocess
import sys
import warnings
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

import skyward as sky
import skyward.extension.registry
import skyward_torch
from skyward import fastpaths
from skyward.errors import ConfigurationError
from skyward.task.instance import InstanceInfo
from skyward_torch import group_patch
from skyward_torch.torch_plugin import TOPOLOGY_VARIABLES, distributed_env

INDEX = "https://download.pytorch.org/whl"


# -- the image ------------------------------------------------------------------------------------


def transformed(plugin: sky.plugins.Plugin, image: sky.Image | None = None) -> sky.Image:
    return plugin.transform(image or sky.Image(), None)


def test_default_adds_unpinned_torch_routed_to_the_cu128_index() -> None:
    assert transformed(sky.plugins.torch()) == sky.Image(
        pip=["torch"],
        pip_indexes=[sky.PipIndex(url=f"{INDEX}/cu128", packages=["torch"])],
    )


def test_cpu_build_uses_the_cpu_index() -> None:
    assert transformed(sky.plugins.torch(cuda="cpu")) == sky.Image(
        pip=["torch"],
        pip_indexes=[sky.PipIndex(url=f"{INDEX}/cpu", packages=["torch"])],
    )


def test_versions_pin_torch_vision_and_audio_and_the_index_names_all_three() -> None:
    plugin = sky.plugins.torch(cuda="cu126", version="2.6.0", vision="0.21.0", audio=True)
    assert transformed(plugin) == sky.Image(
        pip=["torch==2.6.0", "torchvision==0.21.0", "torchaudio"],
        pip_indexes=[sky.PipIndex(url=f"{INDEX}/cu126", packages=["torch", "torchvision", "torchaudio"])],
    )


def test_latest_and_specifiers_are_kept_as_written() -> None:
    plugin = sky.plugins.torch(version=">=2.5", vision="latest", audio="==2.5.1")
    assert transformed(plugin) == sky.Image(
        pip=["torch>=2.5", "torchvision", "torchaudio==2.5.1"],
        pip_indexes=[sky.PipIndex(url=f"{INDEX}/cu128", packages=["torch", "torchvision", "torchaudio"])],
    )


def test_transform_keeps_what_the_image_already_had() -> None:
    base = sky.Image(
        python="3.11", pip=["numpy"], env={"A": "1"},
        pip_indexes=[sky.PipIndex(url="https://example.org/simple", packages=["private"])],
    )
    assert transformed(sky.plugins.torch(cuda="cpu", vision=True), base) == sky.Image(
        python="3.11",
        pip=["numpy", "torch", "torchvision"],
        env={"A": "1"},
        pip_indexes=[
            sky.PipIndex(url="https://example.org/simple", packages=["private"]),
            sky.PipIndex(url=f"{INDEX}/cpu", packages=["torch", "torchvision"]),
        ],
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"cuda": ""}, {"cuda": "cu128/evil"}, {"version": ""}, {"version": None}, {"vision": 3},
        {"backend": ""}, {"timeout": 0},
    ],
)
def test_bad_arguments_fail_when_the_plugin_is_built(kwargs: dict) -> None:
    with pytest.raises(ConfigurationError):
        sky.plugins.torch(**kwargs)


# -- discovery ------------------------------------------------------------------------------------


def test_sky_plugins_torch_is_the_factory_of_the_skyward_torch_distribution() -> None:
    assert sky.plugins.torch is skyward_torch.torch
    assert sky.plugins.accelerate is skyward_torch.accelerate
    pm = skyward.extension.registry.plugin_manager()
    owners = {
        impl.plugin_name
        for impl in pm.hook.skyward_plugins.get_hookimpls()
        if "torch" in impl.function()
    }
    assert owners == {"skyward-torch:torch"}
    entries = importlib.metadata.entry_points(group="skyward")
    (entry,) = [ep for ep in entries if ep.value == "skyward_torch.hooks"]
    assert entry.dist is not None and entry.dist.name == "skyward-torch"


def test_building_the_plugins_on_the_client_imports_no_torch() -> None:
    code = (
        "import sys, skyward as sky\n"
        "p = sky.plugins.torch(vision=True)\n"
        "p.transform(sky.Image(), None)\n"
        "a = sky.plugins.accelerate({'fsdp': {'sharding_strategy': 'FULL_SHARD'}})\n"
        "a.transform(sky.Image(), None)\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"


# -- around_app, in this process ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def one_rank(**kwargs: object) -> InstanceInfo:
    return InstanceInfo(node=0, total_nodes=1, head_addr="127.0.0.1", head_port=free_port(), **kwargs)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Topology variables are neither inherited by nor leaked from a test; the torch-default-group
    fast path is on unless a test turns it off."""
    monkeypatch.delenv(fastpaths.SWITCH, raising=False)
    names = (*TOPOLOGY_VARIABLES, "TORCHELASTIC_RUN_ID")
    saved = {name: os.environ.pop(name) for name in names if name in os.environ}
    yield
    for name in names:
        os.environ.pop(name, None)
    os.environ.update(saved)


def test_distributed_env_maps_instance_info_to_torch_variables() -> None:
    info = InstanceInfo(
        node=2, total_nodes=3, worker=1, workers_per_node=4, head_addr="10.0.0.5", head_port=29511
    )
    assert distributed_env(info) == {
        "MASTER_ADDR": "10.0.0.5",
        "MASTER_PORT": "29511",
        "WORLD_SIZE": "12",
        "RANK": "9",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "4",
    }


def test_around_app_forms_the_group_and_tears_everything_down(clean_env: None) -> None:
    import torch
    import torch.distributed as dist

    original_init, original_destroy = dist.init_process_group, dist.destroy_process_group
    info = one_rank()
    with sky.plugins.torch(backend="gloo").around_app(info):
        assert dist.is_initialized()
        assert dist.get_backend() == "gloo"
        assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
        assert {name: os.environ[name] for name in TOPOLOGY_VARIABLES} == distributed_env(info)
        t = torch.tensor([5])
        dist.all_reduce(t)
        assert t.item() == 5
    assert not dist.is_initialized()
    assert (dist.init_process_group, dist.destroy_process_group) == (original_init, original_destroy)
    assert not any(name in os.environ for name in TOPOLOGY_VARIABLES)


def test_user_init_and_destroy_of_the_default_group_are_no_ops_inside(clean_env: None) -> None:
    import torch
    import torch.distributed as dist

    with sky.plugins.torch(backend="gloo").around_app(one_rank()):
        group = dist.group.WORLD
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            dist.init_process_group(backend="gloo")  # what a torchrun script does first
            dist.init_process_group()
        dist.destroy_process_group()  # ... and last
        assert dist.is_initialized() and dist.group.WORLD is group
        sub = dist.new_group([0])
        dist.destroy_process_group(sub)  # subgroups are the user's to destroy
        t = torch.tensor([1])
        dist.all_reduce(t)
        assert t.item() == 1
    assert not dist.is_initialized()


def test_asking_for_another_backend_warns_that_the_plugin_group_is_used(clean_env: None) -> None:
    import torch.distributed as dist

    with sky.plugins.torch(backend="gloo").around_app(one_rank()):
        with pytest.warns(RuntimeWarning, match=r"backend='nccl'.*already formed"):
            dist.init_process_group(backend="nccl")
        assert dist.get_backend() == "gloo"


def test_with_fast_paths_off_torch_is_left_alone_and_a_second_init_is_torchs_error(
    clean_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch.distributed as dist

    monkeypatch.setenv(fastpaths.SWITCH, "off")
    original_init = dist.init_process_group
    with sky.plugins.torch(backend="gloo").around_app(one_rank()):
        assert dist.is_initialized() and dist.init_process_group is original_init
        with pytest.raises((RuntimeError, ValueError), match="twice"):
            dist.init_process_group(backend="gloo")
    assert not dist.is_initialized()


def test_a_torch_distributed_without_group_member_is_left_alone(clean_env: None) -> None:
    def nothing(*args: object, **kwargs: object) -> None:
        return None

    names = {name: nothing for name in ("init_process_group", "destroy_process_group", "is_initialized",
                                        "get_backend")}
    assert group_patch.detect(SimpleNamespace(**names, GroupMember=SimpleNamespace(WORLD=object())))
    stand_in = SimpleNamespace(**names)  # no GroupMember.WORLD
    assert not group_patch.detect(stand_in)
    with group_patch.default_group_owned(stand_in) as replaced:
        assert not replaced and stand_in.init_process_group is nothing


def test_backend_defaults_to_gloo_without_cuda(clean_env: None) -> None:
    import torch
    import torch.distributed as dist

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the default is nccl (see the gpu test)")
    with sky.plugins.torch().around_app(one_rank()):
        assert dist.get_backend() == "gloo"


def test_a_launcher_numbered_process_keeps_the_launcher_topology(clean_env: None) -> None:
    import torch.distributed as dist

    port = free_port()
    launcher_env = {
        "TORCHELASTIC_RUN_ID": "job", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        "WORLD_SIZE": "1", "RANK": "0", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
    }
    os.environ.update(launcher_env)
    info = InstanceInfo(node=0, total_nodes=1, head_addr="192.0.2.1", head_port=1)  # would not connect
    with sky.plugins.torch(backend="gloo", timeout=20).around_app(info):
        assert dist.is_initialized()
        assert os.environ["MASTER_ADDR"] == "127.0.0.1" and os.environ["MASTER_PORT"] == str(port)
    assert not dist.is_initialized()


# -- cuda="auto": the wheel build follows the base image's CUDA ----------------------------------------


def runpod(image: object) -> sky.RunPod:
    return sky.RunPod(api_key="rpa_test_key_not_used", container_image=image)


def _index_for(provider: object) -> str:
    from types import SimpleNamespace

    cluster = SimpleNamespace(spec=SimpleNamespace(provider=provider))
    (index,) = sky.plugins.torch().transform(sky.Image(), cluster).pip_indexes
    return index.url.rsplit("/", 1)[1]


def test_auto_follows_a_containers_helper_image_given_to_runpod() -> None:
    assert _index_for(runpod(sky.containers.cuda("12.6"))) == "cu126"


def test_auto_reads_the_cuda_version_a_plain_reference_spells() -> None:
    assert _index_for(sky.VastAI(docker_image="nvidia/cuda:12.4.1-devel-ubuntu22.04")) == "cu124"


def test_auto_takes_the_newest_build_no_newer_than_the_images_cuda() -> None:
    # an image whose tag says nothing, its CUDA given: 12.2 runs wheels built for 12.1
    image = sky.containers.DockerImage.of("registry.example/team/train:7", cuda="12.2")
    assert _index_for(runpod(image)) == "cu121"


def test_auto_is_cu128_where_the_provider_runs_no_container() -> None:
    assert _index_for(sky.Local()) == "cu128"


def test_an_explicit_build_wins_over_the_image() -> None:
    from types import SimpleNamespace

    provider = runpod(sky.containers.cuda("12.6"))
    cluster = SimpleNamespace(spec=SimpleNamespace(provider=provider))
    (index,) = sky.plugins.torch(cuda="cpu").transform(sky.Image(), cluster).pip_indexes
    assert index.url.endswith("/cpu")
