"""`sky.plan(...)`: the script a pool would run, rendered without provisioning anything."""

from __future__ import annotations

import subprocess

import pytest

import skyward as sky
from skyward.bootstrap.ops import Op
from skyward.client.planning import Plan, plan


def _plugin(name: str, *ops: object, pip: str | None = None) -> sky.Plugin:
    plugin = sky.Plugin.create(name).with_bootstrap(lambda cluster: ops)
    if pip is not None:
        plugin = plugin.with_image_transform(lambda image, cluster: image.with_pip(pip))
    return plugin


def _phase_order(script: str) -> list[str]:
    begins = (line for line in script.splitlines() if line.startswith("__sky_begin "))
    return [line.split(" ", 1)[1].strip("'") for line in begins]


def test_plan_is_public_and_the_same_function() -> None:
    assert sky.plan is plan
    assert "plan" in sky.__all__


def test_plugin_ops_follow_the_image_phases_in_plugin_order() -> None:
    first = _plugin("first", Op(name="first-op", script="echo one"), pip="six")
    second = _plugin("second", "echo two-a", Op(name="second-b", script="echo two-b"))
    result = sky.plan(image=sky.Image(pip=["attrs"], apt=["git"]), plugins=[first, second])
    assert isinstance(result, Plan)
    # A plain string is an op named after its plugin.
    assert [op.name for op in result.ops] == ["first-op", "second", "second-b"]
    assert result.image.pip == ("attrs", "six")  # the transform ran
    assert _phase_order(result.script) == [
        "uv", "venv", "apt", "pip", "env", "skyward", "first-op", "second", "second-b",
    ]
    where = [result.script.index(text) for text in ("echo one", "echo two-a", "echo two-b")]
    assert where == sorted(where)
    subprocess.run(["bash", "-n"], input=result.script, text=True, check=True)  # it parses


def test_plan_takes_what_compute_takes() -> None:
    spec = sky.Spec(
        provider=sky.Local(isolated=True), image=sky.Image(pip=["six"]), plugins=[sky.plugins.mps()]
    )
    result = plan(spec, options=sky.Options(console="log"))
    assert _phase_order(result.script)[-1] == "mps"
    assert result.image.env["CUDA_MPS_PIPE_DIRECTORY"]
    with pytest.raises(sky.ConfigurationError):
        plan(spec, image=sky.Image())  # contradicts the spec's own image, refused as in Compute


def test_plan_shows_secrets_masked_where_the_pool_writes_them_into_the_node_env_file() -> None:
    """The huggingface op refers to $HF_TOKEN; the token itself lives only in env.sh, which a
    plan shows masked, as the image's repr does."""
    token = "hf_" + "x" * 30
    result = sky.plan(plugins=[sky.plugins.huggingface(token=token)])
    [op] = result.ops
    assert op.secrets == (token,) and token not in op.script
    assert result.image.env["HF_TOKEN"] == token  # the value itself, for the pool's own script
    assert "export HF_TOKEN=***" in result.script
    assert token not in result.script
    assert token not in repr(result)
    assert token not in repr(result.image)


def test_plan_with_indexes_scopes_them_to_their_packages() -> None:
    index = sky.PipIndex(url="https://download.pytorch.org/whl/cpu", packages=["torch"])
    result = sky.plan(image=sky.Image(pip=["torch==2.13.0", "six"], pip_indexes=[index]))
    script = result.script
    assert '"torch" = { index = "skyward-0" }' in script
    assert 'url = "https://download.pytorch.org/whl/cpu"' in script and "explicit = true" in script
    assert '"six" = {' not in script


def test_plan_masks_credential_named_image_env_values() -> None:
    result = sky.plan(image=sky.Image(env={"DB_PASSWORD": "hunter2-but-longer", "REGION": "eu-west-1"}))
    assert "export DB_PASSWORD=***" in result.script
    assert "export REGION=eu-west-1" in result.script


def test_plan_builds_the_venv_as_the_provider_does_and_shows_the_launch_line() -> None:
    """SSH(python=...) builds the venv on that interpreter, with its site-packages; the worker then
    starts through the plugins' launchers (tests/ssh/test_ssh_plan.py compares with a real host)."""
    from skyward.extension.plugin import LaunchCommand

    def launcher(command: LaunchCommand, context: object) -> LaunchCommand:
        return LaunchCommand(launcher="env MY_LAUNCHER=1", entrypoint=command.entrypoint, args=command.args)

    plugin = sky.Plugin.create("launch").with_launcher(launcher)
    result = sky.plan(provider=sky.SSH(hosts=["u@h1"], python="/usr/bin/python3.11"), plugins=[plugin])
    assert "__sky_cmd 'uv venv --system-site-packages --python /usr/bin/python3.11 $W/venv'" in result.script
    launch = ". /opt/skyward/env.sh && exec env MY_LAUNCHER=1 venv/bin/python -m skyward.worker"
    assert result.launch == launch
    assert str(result).endswith(f"#   {result.launch}\n")
    default = sky.plan(provider=sky.SSH(hosts=["u@h1"]))  # no python named: uv's, without site-packages
    assert "--system-site-packages" not in default.script
    assert default.launch == ". /opt/skyward/env.sh && exec venv/bin/python -m skyward.worker"
