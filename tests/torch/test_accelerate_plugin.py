"""`sky.plugins.accelerate()`: the `accelerate launch` command each node's worker is started with.

accelerate itself is not run here (it is not installed, and its multi-GPU paths need GPUs): the
tests pin the rendered command, flag by flag, through the same hook chain the pool uses.
"""

from __future__ import annotations

import shlex

import pytest

import skyward as sky
from skyward.client.hooks import PoolHooks
from skyward.errors import ConfigurationError, PluginError
from skyward.extension.plugin import LaunchCommand, LaunchContext

PY = "/opt/skyward/.venv/bin/python"
WORKER = LaunchCommand(entrypoint=f"{PY} -m skyward.worker")
CLI = f"{PY} -m accelerate.commands.accelerate_cli launch"


def context(node_id: int = 0, num_nodes: int = 2) -> LaunchContext:
    return LaunchContext(
        node_id=node_id, num_nodes=num_nodes, head_addr="10.0.0.1", rendezvous_port=29500,
        private_ip=f"10.0.0.{node_id + 1}", python_bin=PY, venv_dir="/opt/skyward/.venv",
        concurrency=1, executor="thread",
    )


def launch(plugin: sky.plugins.Plugin, ctx: LaunchContext, base: LaunchCommand = WORKER) -> LaunchCommand:
    """What the pool does: fold the launchers of `plugins=[...]` over the worker command."""
    return PoolHooks((plugin,)).launch_command(base, ctx)


def topology(node_id: int, num_nodes: int = 2) -> str:
    return (
        f"--num_machines {num_nodes} --machine_rank {node_id} --main_process_ip 10.0.0.1 "
        f"--main_process_port 29500 --num_processes {num_nodes}"
    )


def test_default_two_node_command_on_each_node() -> None:
    plugin = sky.plugins.accelerate()
    for node in (0, 1):
        command = launch(plugin, context(node))
        assert command == LaunchCommand(
            launcher=f"{CLI} {topology(node)} --multi_gpu", entrypoint="-m skyward.worker", args=()
        )
        assert command.render() == f"{CLI} {topology(node)} --multi_gpu -m skyward.worker"


def test_pass_through_settings_in_order() -> None:
    plugin = sky.plugins.accelerate({
        "mixed_precision": "bf16", "num_cpu_threads_per_process": 4, "gpu_ids": "all", "same_network": True,
        "downcast_bf16": "no", "rdzv_backend": "c10d", "debug": True, "num_processes": 2,
    })
    assert launch(plugin, context(1)).render() == (
        f"{CLI} {topology(1)} --multi_gpu --mixed_precision bf16 --num_cpu_threads_per_process 4 "
        "--gpu_ids all --same_network --rdzv_backend c10d --debug -m skyward.worker"
    )


def test_fsdp_config_infers_fsdp_and_becomes_fsdp_flags() -> None:
    plugin = sky.plugins.accelerate({
        "mixed_precision": "bf16",
        "fsdp": {
            "sharding_strategy": "FULL_SHARD",
            "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "transformer_layer_cls_to_wrap": ["LlamaDecoderLayer", "LlamaMLP"],
            "fsdp_offload_params": False,
            "use_orig_params": True,
            "state_dict_type": "SHARDED_STATE_DICT",
        },
    })
    assert launch(plugin, context(0)).render() == (
        f"{CLI} {topology(0)} --use_fsdp --mixed_precision bf16 "
        "--fsdp_sharding_strategy FULL_SHARD --fsdp_auto_wrap_policy TRANSFORMER_BASED_WRAP "
        "--fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer,LlamaMLP --fsdp_offload_params false "
        "--fsdp_use_orig_params true --fsdp_state_dict_type SHARDED_STATE_DICT -m skyward.worker"
    )


def test_deepspeed_config_infers_deepspeed_with_the_per_node_launcher() -> None:
    plugin = sky.plugins.accelerate({
        "mixed_precision": "fp16",
        "deepspeed": {
            "zero_stage": 3, "offload_optimizer_device": "cpu", "offload_param_device": "none",
            "gradient_accumulation_steps": 4, "zero3_init_flag": True, "config_file": "/data/ds config.json",
        },
    })
    assert launch(plugin, context(1)).render() == (
        f"{CLI} {topology(1)} --use_deepspeed --mixed_precision fp16 --zero_stage 3 "
        "--offload_optimizer_device cpu --offload_param_device none --gradient_accumulation_steps 4 "
        "--zero3_init_flag true --deepspeed_config_file '/data/ds config.json' "
        "--deepspeed_multinode_launcher standard -m skyward.worker"
    )


def test_deepspeed_explicit_multinode_launcher_and_single_node() -> None:
    plugin = sky.plugins.accelerate({"deepspeed": {"zero_stage": 2, "deepspeed_multinode_launcher": "nossh"}})
    assert launch(plugin, context(0)).launcher.endswith(
        "--use_deepspeed --zero_stage 2 --deepspeed_multinode_launcher nossh"
    )
    single = sky.plugins.accelerate({"deepspeed": {"zero_stage": 2}})
    assert launch(single, context(0, num_nodes=1)).render() == (
        f"{CLI} {topology(0, 1)} --use_deepspeed --zero_stage 2 -m skyward.worker"
    )


def test_yaml_section_names_are_accepted() -> None:
    plugin = sky.plugins.accelerate({"fsdp_config": {"fsdp_sharding_strategy": "SHARD_GRAD_OP"}})
    assert launch(plugin, context(0)).launcher == (
        f"{CLI} {topology(0)} --use_fsdp --fsdp_sharding_strategy SHARD_GRAD_OP"
    )


@pytest.mark.parametrize(
    ("distributed_type", "flag"),
    [("MULTI_GPU", " --multi_gpu"), ("fsdp", " --use_fsdp"), ("MULTI_CPU", " --cpu"), ("NO", "")],
)
def test_explicit_distributed_type_wins(distributed_type: str, flag: str) -> None:
    with pytest.warns(UserWarning, match="ignores the deepspeed settings"):
        plugin = sky.plugins.accelerate(
            {"distributed_type": distributed_type, "deepspeed": {"zero_stage": 3}}
        )
    assert launch(plugin, context(0)).launcher == f"{CLI} {topology(0)}{flag}"


def test_worker_arguments_follow_the_entrypoint_unchanged() -> None:
    base = LaunchCommand(entrypoint=f"{PY} -m skyward.worker", args=("--node-id", "1"))
    command = launch(sky.plugins.accelerate(), context(1), base)
    assert command.entrypoint == "-m skyward.worker" and command.args == ("--node-id", "1")
    assert command.render().endswith("--multi_gpu -m skyward.worker --node-id 1")


def test_an_entrypoint_that_is_not_python_is_launched_with_no_python() -> None:
    base = LaunchCommand(entrypoint="/usr/local/bin/run-worker")
    command = launch(sky.plugins.accelerate(), context(0), base)
    assert command.render() == f"{CLI} {topology(0)} --multi_gpu --no_python /usr/local/bin/run-worker"


def test_a_python_path_with_spaces_is_quoted() -> None:
    py = "/home/me/my envs/bin/python"
    ctx = LaunchContext(
        node_id=0, num_nodes=2, head_addr="10.0.0.1", rendezvous_port=29500, private_ip="10.0.0.1",
        python_bin=py, venv_dir="/home/me/my envs", concurrency=1, executor="thread",
    )
    base = LaunchCommand(entrypoint=f"{shlex.quote(py)} -m skyward.worker")
    command = launch(sky.plugins.accelerate(), ctx, base)
    assert shlex.split(command.render())[:4] == [py, "-m", "accelerate.commands.accelerate_cli", "launch"]
    assert command.entrypoint == "-m skyward.worker"


def test_transform_adds_accelerate_to_pip() -> None:
    image = sky.Image(pip=["transformers"])
    assert sky.plugins.accelerate().transform(image, None) == sky.Image(pip=["transformers", "accelerate"])


def test_composes_with_the_torch_plugin_in_one_pool_config() -> None:
    hooks = PoolHooks((sky.plugins.torch(cuda="cu126"), sky.plugins.accelerate({"mixed_precision": "bf16"})))
    image = hooks.transform_image(sky.Image(), None)
    assert image.pip == ("torch", "accelerate")
    assert hooks.launch_command(WORKER, context(0)).launcher == (
        f"{CLI} {topology(0)} --multi_gpu --mixed_precision bf16"
    )


@pytest.mark.parametrize(
    "config",
    [
        {"num_machines": 4},
        {"main_process_port": 1234},
        {"mixed_precison": "bf16"},
        {"distributed_type": "TPU_POD"},
        {"fsdp": {"sharding_strategy": "FULL_SHARD"}, "deepspeed": {"zero_stage": 3}},
        {"fsdp": "FULL_SHARD"},
        {"deepspeed": {"zero_optimization": {"stage": 3}}},
        {"fsdp": {}, "fsdp_config": {}},
    ],
)
def test_bad_configs_fail_when_the_plugin_is_built(config: dict) -> None:
    with pytest.raises(ConfigurationError):
        sky.plugins.accelerate(config)  # type: ignore[arg-type]


def test_num_processes_other_than_the_node_count_fails_at_launch() -> None:
    plugin = sky.plugins.accelerate({"num_processes": 8})
    with pytest.raises(PluginError, match="num_processes .* must equal the node count"):
        launch(plugin, context(0))


def test_another_launcher_before_it_is_refused() -> None:
    other = sky.plugins.Plugin.create("torchrun").with_launcher(
        lambda command, ctx: LaunchCommand(launcher="torchrun --nnodes 2", entrypoint=command.entrypoint)
    )
    with pytest.raises(PluginError, match="cannot wrap another launcher"):
        PoolHooks((other, sky.plugins.accelerate())).launch_command(WORKER, context(0))
