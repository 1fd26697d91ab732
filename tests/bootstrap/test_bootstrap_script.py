"""The rendered bootstrap script, run for real with bash in temporary folders.

One node is bootstrapped for the whole module (uv, venv, pip, env, includes, skyward, two plugin
ops); the tests read its events, its env.sh and its venv. Failures and timeouts get their own
short runs that stop early.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from bootstrap_support import Events, bootstrap, needs_uv, setup_for, use_shared_uv_cache

import skyward as sky
from skyward.bootstrap.ops import Op
from skyward.bootstrap.render import Script, render_script
from skyward.bootstrap.runner import LocalRunner, run_bootstrap
from skyward.errors import BootstrapFailed
from skyward.extension.plugin import LaunchCommand

pytestmark = [needs_uv, pytest.mark.timeout(300)]

#: Values a naive `export K=v` would break: quotes, $, backticks, spaces, newlines, globs, ;.
HOSTILE = {
    "SKY_QUOTES": "it's \"quoted\" and 'single'",
    "SKY_DOLLAR": "$HOME ${PATH} $(echo no) `echo no`",
    "SKY_SPACES": "  leading and trailing  ",
    "SKY_NEWLINES": "line one\nline two\n\nline four",
    "SKY_GLOB": "* ? [a-z] ; && | > /dev/null",
    "SKY_EMPTY": "",
    "SKY_BACKSLASH": "back\\slash \\n not a newline",
}
TOKEN = "sk-test-5ecret-T0KEN-value"


@pytest.fixture(scope="module")
def uv_cache() -> Any:
    with pytest.MonkeyPatch.context() as mp:
        use_shared_uv_cache(mp)
        yield


@pytest.fixture(scope="module")
def includes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("includes")
    package = root / "skyward_boot_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("VALUE = 'from includes'\n")
    (package / "huge.ckpt").write_text("excluded")
    return package


@pytest.fixture(scope="module")
def node(uv_cache: Any, includes: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One fully bootstrapped node: its folder, Script and events."""
    workdir = tmp_path_factory.mktemp("node") / "n0"
    events = Events()
    image = sky.Image(
        pip=["six"],
        env={**HOSTILE, "MY_TOKEN": TOKEN},
        shell_vars={
            "SKY_FROM_SNIPPET": 'printf "%s|%s" "$SKY_QUOTES" computed',
            "SKY_SNIPPET_NEWLINES": "printf 'a\\nb $x'",
        },
        includes=[str(includes)],
        excludes=["*.ckpt"],
    )
    ops = (
        Op(name="show token", script='echo "the token is $MY_TOKEN"\necho "python: $(command -v python)"',
           secrets=(TOKEN,)),
        "echo second op ran",
    )
    started = time.monotonic()
    script = bootstrap(setup_for(image, ops, emit=events), workdir)
    return {"workdir": workdir, "script": script, "events": events, "seconds": time.monotonic() - started}


def source_env(script: Script, code: str) -> Any:
    """Run `code` with the node's python after sourcing env.sh from /bin/sh, as a worker launch does."""
    launch = LaunchCommand(entrypoint=f"python -c {json.dumps(code)}")
    result = subprocess.run(
        ["/bin/sh", "-c", script.launch_line(launch)], capture_output=True, text=True, check=True,
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
    )
    return json.loads(result.stdout)


def test_phases_run_in_order_and_each_completes(node: dict[str, Any]) -> None:
    phases = node["events"].phases()
    names = ["uv", "venv", "pip", "env", "includes", "skyward", "show-token", "plugin"]
    assert phases == [(name, state) for name in names for state in ("started", "completed")]
    assert not node["events"].errors()


def test_commands_are_reported_before_they_run(node: dict[str, Any]) -> None:
    commands = node["events"].commands()
    pip = [c for c in commands if c.startswith("uv pip install") and c.endswith(" six")]
    assert pip, commands
    assert str(node["workdir"]) in pip[0]  # $W is shown expanded


def test_image_pip_and_skyward_core_resolve_in_one_uv_run(node: dict[str, Any]) -> None:
    installs = [c for c in node["events"].commands() if c.startswith("uv pip install")]
    with_core = [c for c in installs if "skyward_core-" in c]
    assert len(with_core) == 1 and with_core[0].endswith(" six"), installs
    assert "--no-deps" not in with_core[0]


def test_env_file_survives_hostile_values(node: dict[str, Any]) -> None:
    code = f"import os, json; print(json.dumps({{k: os.environ.get(k) for k in {list(HOSTILE)!r}}}))"
    env = source_env(node["script"], code)
    assert env == HOSTILE


def test_shell_vars_are_evaluated_with_the_image_env(node: dict[str, Any]) -> None:
    env = source_env(
        node["script"],
        "import os, json; "
        "print(json.dumps([os.environ['SKY_FROM_SNIPPET'], os.environ['SKY_SNIPPET_NEWLINES']]))",
    )
    assert env == [HOSTILE["SKY_QUOTES"] + "|computed", "a\nb $x"]


def test_launch_line_runs_the_venv_python_with_includes(node: dict[str, Any]) -> None:
    script = node["script"]
    info = source_env(
        script,
        "import sys, json, six, skyward_boot_pkg; "
        "print(json.dumps([sys.prefix, six.__file__, skyward_boot_pkg.VALUE, skyward_boot_pkg.__file__]))",
    )
    prefix, six_file, value, package_file = info
    assert Path(prefix) == Path(script.venv_dir)
    assert Path(six_file).is_relative_to(script.venv_dir)
    assert value == "from includes"
    assert Path(package_file).is_relative_to(node["workdir"] / "includes")
    assert not (node["workdir"] / "includes" / "skyward_boot_pkg" / "huge.ckpt").exists()  # excludes
    assert script.python_bin == f"{script.venv_dir}/bin/python"


def test_plugin_ops_see_the_env_and_the_venv(node: dict[str, Any]) -> None:
    console = node["events"].console()
    assert "the token is ***" in console
    assert f"python: {node['script'].venv_dir}/bin/python" in console
    assert "second op ran" in console


def test_secrets_never_reach_events(node: dict[str, Any]) -> None:
    assert TOKEN not in node["events"].strings()
    assert (node["workdir"] / "env.sh").stat().st_mode & 0o077 == 0  # the env file holds the token


def test_a_second_bootstrap_reuses_the_venv(node: dict[str, Any]) -> None:
    events = Events()
    image = sky.Image(pip=["six"])
    started = time.monotonic()
    bootstrap(setup_for(image, emit=events), node["workdir"])
    reused = "skyward bootstrap: reusing the virtual environment at " + node["script"].venv_dir
    assert reused in events.console()
    assert time.monotonic() - started < max(node["seconds"], 20)


def test_a_failing_pip_phase_names_phase_command_and_uv_error(
    uv_cache: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # uv wraps its error to the terminal's width: one line here
    events = Events()
    image = sky.Image(pip=["this-package-does-not-exist-skyward"])
    with pytest.raises(BootstrapFailed) as caught:
        bootstrap(setup_for(image, emit=events), tmp_path / "n3", node=3)
    error = caught.value
    assert (error.node, error.phase) == (3, "pip")
    assert "this-package-does-not-exist-skyward" in error.command
    assert "not found in the package registry" in error.output_tail
    message = str(error)
    assert "node 3" in message and "'pip'" in message and error.command in message
    assert "not found in the package registry" in message
    assert ("pip", "started") in events.phases() and ("pip", "failed") in events.phases()
    assert ("pip", "completed") not in events.phases()
    [event] = events.errors()
    assert (event.node, event.phase, event.command) == (3, "pip", error.command)


def test_a_failing_op_reports_its_command_with_secrets_masked(uv_cache: Any, tmp_path: Path) -> None:
    events = Events()
    op = Op(
        name="leaky",
        script=f'echo "about to fail with {TOKEN}" >&2\nls /nonexistent-skyward-dir-{TOKEN}\necho never',
        secrets=(TOKEN,),
    )
    with pytest.raises(BootstrapFailed) as caught:
        bootstrap(setup_for(sky.Image(), [op], emit=events), tmp_path / "n0")
    error = caught.value
    assert error.phase == "leaky"
    assert error.command == "ls /nonexistent-skyward-dir-***"
    assert "about to fail with ***" in error.output_tail
    assert "No such file or directory" in error.output_tail
    assert TOKEN not in str(error) and TOKEN not in error.output_tail
    assert TOKEN not in events.strings()
    assert events.phases()[-2:] == [("leaky", "started"), ("leaky", "failed")]
    assert "never" not in events.console()


def test_an_op_that_exits_fails_its_phase(uv_cache: Any, tmp_path: Path) -> None:
    op = Op(name="gives-up", script='echo "cannot go on" >&2\nexit 7')
    with pytest.raises(BootstrapFailed) as caught:
        bootstrap(setup_for(sky.Image(), [op], emit=Events()), tmp_path / "n0")
    assert caught.value.phase == "gives-up"
    assert "exit code 7" in str(caught.value)
    assert "cannot go on" in caught.value.output_tail


@pytest.fixture(scope="module")
def local_index(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PEP 503 index in a folder, serving one package that PyPI does not have."""
    source = tmp_path_factory.mktemp("dummy")
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "skyward-test-dummy"\nversion = "1.0"\n'
    )
    (source / "skyward_test_dummy").mkdir()
    (source / "skyward_test_dummy" / "__init__.py").write_text("SERVED_BY = 'the local index'\n")
    root = tmp_path_factory.mktemp("index")
    folder = root / "skyward-test-dummy"
    folder.mkdir()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(folder),
         str(source)],
        check=True,
    )
    [wheel] = folder.glob("*.whl")
    (folder / "index.html").write_text(f'<html><body><a href="{wheel.name}">{wheel.name}</a></body></html>')
    return root.as_uri()


def test_a_pip_index_serves_its_packages_and_only_them(
    uv_cache: Any, local_index: str, tmp_path: Path
) -> None:
    index = sky.PipIndex(url=local_index, packages=["skyward-test-dummy"])
    image = sky.Image(pip=["skyward-test-dummy", "six"], pip_indexes=[index])
    script = bootstrap(setup_for(image, emit=Events()), tmp_path / "n0")
    served = source_env(script, "import json, six, skyward_test_dummy as d; print(json.dumps(d.SERVED_BY))")
    assert served == "the local index"  # not on PyPI: it came from the index; six came from PyPI


def test_a_package_pinned_to_an_index_does_not_fall_back_to_pypi(
    uv_cache: Any, local_index: str, tmp_path: Path
) -> None:
    index = sky.PipIndex(url=local_index, packages=["six"])  # the local index has no six
    with pytest.raises(BootstrapFailed) as caught:
        bootstrap(setup_for(sky.Image(pip=["six"], pip_indexes=[index]), emit=Events()), tmp_path / "n0")
    assert caught.value.phase == "pip"
    assert "six" in caught.value.output_tail


def _running(marker: str) -> bool:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        return True
            except OSError:
                continue
    return False


def test_timeout_is_enforced_and_stops_the_script(uv_cache: Any, tmp_path: Path) -> None:
    events = Events()
    naptime = "61.4242"  # an unusual duration, to find the process afterwards
    image = sky.Image(shell_vars={"SLOW": f"sleep {naptime}"})
    started = time.monotonic()
    with pytest.raises(BootstrapFailed) as caught:
        bootstrap(setup_for(image, emit=events, timeout=4), tmp_path / "n0")
    assert time.monotonic() - started < 15
    error = caught.value
    assert error.phase == "timeout"
    message = str(error)
    assert "exceeded bootstrap_timeout=4s" in message and "while in phase 'env'" in message
    assert "Image(bootstrap_timeout=...)" in message and "Options(bootstrap_timeout=...)" in message
    assert ("env", "failed") in events.phases()
    assert events.errors()[0].phase == "timeout"
    assert not _running(f"sleep {naptime}")


def test_markers_become_events(tmp_path: Path) -> None:
    """A hand-written script speaking the marker protocol: phases with odd names, commands, output."""
    text = """
printf '::skyward-phase:one:start\\n'
printf '::skyward-command:echo hello\\n'
echo hello
echo to-stderr >&2
printf '::skyward-phase:one:done\\n'
printf '::skyward-phase:name:with:colons:start\\n'
printf '::skyward-phase:name:with:colons:done\\n'
printf '::skyward-phase:broken:start\\n'
printf '::skyward-command:false\\n'
printf '::skyward-phase:unknown-marker-looks-like-output\\n'
printf '::skyward-phase:broken:fail:5\\n'
exit 5
"""
    events = Events()
    script = Script(text=text, python_bin="/x/venv/bin/python", venv_dir="/x/venv", workdir="/x")
    with pytest.raises(BootstrapFailed) as caught:
        asyncio.run(run_bootstrap(LocalRunner(), script, node=1, emit=events, timeout=30))
    assert events.phases() == [
        ("one", "started"), ("one", "completed"),
        ("name:with:colons", "started"), ("name:with:colons", "completed"),
        ("broken", "started"), ("broken", "failed"),
    ]
    assert events.commands() == ["echo hello", "false"]
    # stdout and stderr are separate pipes: order holds within a stream, not across them.
    console = [e for e in events if type(e).__name__ == "BootstrapConsole"]
    stdout = [e.line for e in console if e.stream == "stdout"]
    assert stdout == ["hello", "::skyward-phase:unknown-marker-looks-like-output"]
    assert [e.line for e in console if e.stream == "stderr"] == ["to-stderr"]
    assert (caught.value.phase, caught.value.command, caught.value.node) == ("broken", "false", 1)


def test_the_output_tail_is_the_last_thirty_lines(tmp_path: Path) -> None:
    text = "printf '::skyward-phase:noisy:start\\n'\nfor i in $(seq 1 100); do echo line-$i; done\nexit 1\n"
    script = Script(text=text, python_bin="", venv_dir="", workdir="/x")
    with pytest.raises(BootstrapFailed) as caught:
        asyncio.run(run_bootstrap(LocalRunner(), script, node=0, emit=Events(), timeout=30))
    tail = caught.value.output_tail.splitlines()
    assert tail == [f"line-{i}" for i in range(71, 101)]
    assert caught.value.phase == "noisy"


def test_render_rejects_a_relative_workdir() -> None:
    with pytest.raises(ValueError, match="absolute"):
        render_script(sky.Image(), (), workdir="~/.skyward/node")
