"""`sky.Local()`: the image's env and includes, instance info, remote output, and specs checked up front."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from core_support import local_pool, wait_until

import skyward as sky

pytestmark = pytest.mark.timeout(60)

ENV = {"SKYWARD_TEST_GREETING": "hello from the image", "SKYWARD_TEST_NUMBER": "42"}


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("includes")
    folder = root / "src"  # a source folder: the modules in it import directly
    folder.mkdir()
    (folder / "skyward_test_helper.py").write_text("def answer():\n    return 42\n")
    package = root / "skyward_test_package"  # a package: its parent goes on the path
    package.mkdir()
    (package / "__init__.py").write_text("NAME = 'package'\n")
    (package / "inner.py").write_text("import os\nSEEN_AT_IMPORT = os.environ.get('SKYWARD_TEST_GREETING')\n")
    single = root / "single_file"
    single.mkdir()
    (single / "skyward_test_single.py").write_text("VALUE = 'single'\n")
    return {"folder": folder, "package": package, "file": single / "skyward_test_single.py"}


@pytest.fixture(scope="module")
def image_pool(sources: dict[str, Path]) -> Iterator[sky.Pool]:
    image = sky.Image(env=ENV, includes=[str(p) for p in sources.values()])
    compute = local_pool(2, accelerator="A100", image=image)
    compute.start()
    try:
        yield compute
    finally:
        compute.stop()


@sky.function
def env_now() -> tuple[str | None, str | None]:
    return os.environ.get("SKYWARD_TEST_GREETING"), os.environ.get("SKYWARD_TEST_NUMBER")


@sky.function
def env_at_process_start() -> dict[str, str]:
    """/proc/self/environ is the environment the worker was exec'd with, before any of its code ran."""
    with open("/proc/self/environ", "rb") as f:
        pairs = (item.decode().split("=", 1) for item in f.read().split(b"\0") if b"=" in item)
        return {k: v for k, v in pairs if k.startswith("SKYWARD_TEST_")}


@sky.function
def import_includes() -> tuple[int, str, str | None, str]:
    import skyward_test_helper
    import skyward_test_package
    import skyward_test_package.inner
    import skyward_test_single

    return (
        skyward_test_helper.answer(),
        skyward_test_package.NAME,
        skyward_test_package.inner.SEEN_AT_IMPORT,
        skyward_test_single.VALUE,
    )


@sky.function
def info() -> sky.InstanceInfo:
    return sky.instance_info()


@sky.function
def chatty(n: int) -> str:
    for i in range(n):
        print(f"line {i}")
    print("to stderr", file=sys.stderr)
    return "result"


@sky.function
def partial_line() -> int:
    sys.stdout.write("no newline at the end")
    return 1


# --- image


def test_image_env_is_visible_in_tasks(image_pool: sky.Pool) -> None:
    assert env_now() @ image_pool == [("hello from the image", "42")] * 2


def test_image_env_is_set_when_the_worker_process_starts(image_pool: sky.Pool) -> None:
    assert env_at_process_start() >> image_pool == ENV


def test_image_env_is_seen_by_included_modules_at_import(image_pool: sky.Pool) -> None:
    assert import_includes() >> image_pool == (42, "package", "hello from the image", "single")


def test_image_env_does_not_leak_into_the_client() -> None:
    assert "SKYWARD_TEST_GREETING" not in os.environ


def test_image_pip_missing_here_warns_naming_the_package() -> None:
    with (
        pytest.warns(UserWarning, match="surely-not-installed-pkg") as caught,
        local_pool(1, image=sky.Image(pip=["surely-not-installed-pkg"])) as compute,
    ):
        assert env_now() >> compute == (None, None)
    assert "pip install surely-not-installed-pkg" in str(caught[0].message)


def test_image_pip_already_installed_does_not_warn(recwarn: pytest.WarningsRecorder) -> None:
    with local_pool(1, image=sky.Image(pip=["numpy", "cloudpickle>=1"])) as compute:
        assert env_now() >> compute == (None, None)
    assert [str(w.message) for w in recwarn if "sky.Local()" in str(w.message)] == []


def test_packages_a_plugin_adds_that_are_missing_here_warn_naming_the_plugins() -> None:
    adds = sky.plugins.Plugin.create("adds").with_image_transform(lambda image, cluster: image.with_pip("surely-not-installed-pkg"))
    with pytest.warns(UserWarning, match=r"lacks surely-not-installed-pkg \(asked for by the pool's plugins\)"):
        with local_pool(1, plugins=[adds]) as compute:
            assert env_now() >> compute == (None, None)


def test_plugin_bootstrap_ops_warn_that_local_does_not_run_them(recwarn: pytest.WarningsRecorder) -> None:
    ops = sky.plugins.Plugin.create("setup-git").with_bootstrap(lambda cluster: "apt-get install -y git")
    with local_pool(2, plugins=[ops]) as compute:
        assert env_now() >> compute == (None, None)
    messages = [str(w.message) for w in recwarn if "runs no bootstrap" in str(w.message)]
    assert len(messages) == 1  # once per pool, not once per node
    assert "(setup-git)" in messages[0] and "sky.Local(isolated=True)" in messages[0]


# --- instance info


def test_instance_info_describes_each_node(image_pool: sky.Pool) -> None:
    first, second = info() @ image_pool
    assert (first.node, second.node) == (0, 1)
    assert first.total_nodes == second.total_nodes == 2
    assert first.head_addr == second.head_addr == "127.0.0.1"
    assert first.is_head and not second.is_head
    assert [p.node for p in first.peers] == [0, 1]
    assert first.job_id == second.job_id == image_pool.name


def test_instance_info_reports_an_accelerator_given_as_a_string(image_pool: sky.Pool) -> None:
    node_info = info() >> image_pool
    assert node_info.accelerator is not None
    assert node_info.accelerator.type == "A100"
    assert node_info.accelerators == 1
    assert node_info.total_accelerators == 2


def test_instance_info_without_accelerator_reports_none(pool: sky.Pool) -> None:
    assert (info() >> pool).accelerator is None


def test_shard_splits_data_by_node(pool: sky.Pool) -> None:
    @sky.function
    def my_share() -> list[int]:
        return sky.shard(list(range(10)))

    assert my_share() @ pool == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]


# --- remote output


def test_remote_prints_arrive_as_log_events_from_their_node(pool: sky.Pool) -> None:
    logs: list[sky.Log] = []
    unsubscribe = pool.on(sky.Log, logs.append)
    try:
        assert pool.run(chatty(3), target=1) == "result"
        seen = list(logs)  # taken as soon as the result is back: nothing was waited for
    finally:
        unsubscribe()
    stdout = [(e.node, e.line) for e in seen if e.stream == "stdout"]
    stderr = [(e.node, e.line) for e in seen if e.stream == "stderr"]
    assert stdout == [(1, "line 0"), (1, "line 1"), (1, "line 2")]
    assert stderr == [(1, "to stderr")]
    assert all(e.instance is not None and e.instance.node == 1 for e in seen)


def test_remote_prints_arrive_before_the_result(pool: sky.Pool) -> None:
    order: list[str] = []  # appended on the pool's loop thread, so in delivery order
    unsubscribe = pool.on(sky.Log, lambda event: order.append(event.line))
    try:
        future = pool.run_async(chatty(2), target=0)
        future.add_done_callback(lambda f: order.append(f"result={f.result()}"))
        future.result(timeout=30)
    finally:
        unsubscribe()
    assert wait_until(lambda: len(order) == 4, timeout=5)
    assert order[-1] == "result=result"
    assert sorted(order[:-1]) == ["line 0", "line 1", "to stderr"]


def test_remote_output_without_newline_is_not_lost(fresh_pool) -> None:
    compute = fresh_pool(1)
    logs: list[sky.Log] = []
    compute.on(sky.Log, logs.append)
    assert partial_line() >> compute == 1
    compute.stop()
    assert [e.line for e in logs] == ["no newline at the end"]


def test_console_log_mode_prints_remote_lines_prefixed_by_node(capsys: pytest.CaptureFixture[str]) -> None:
    with local_pool(2, console="log") as compute:
        compute.run(chatty(1), target=1)
    err = capsys.readouterr().err
    assert any(line.endswith("[node 1] line 0") for line in err.splitlines()), err


# --- specs are checked when the pool is built, before anything starts


def test_compute_with_zero_nodes_names_the_fix() -> None:
    with pytest.raises(sky.ConfigurationError, match="pass nodes=1 or more"):
        sky.Compute(provider=sky.Local(), nodes=0)


def test_compute_with_min_above_desired_names_the_fix() -> None:
    with pytest.raises(sky.ConfigurationError, match="lower min to at most 2"):
        sky.Compute(provider=sky.Local(), nodes=sky.Nodes(desired=2, min=3))


def test_compute_with_a_volume_on_root_names_the_fix() -> None:
    with pytest.raises(sky.ConfigurationError, match=r"/root is reserved.*mount=\"/data\""):
        sky.Compute(provider=sky.Local(), volumes=[sky.Volume(bucket="b", mount="/root")])


def test_compute_with_an_unknown_allocation_lists_the_choices() -> None:
    with pytest.raises(sky.ConfigurationError, match=r"allocation='sometimes'.*'spot-if-available'"):
        sky.Compute(provider=sky.Local(), allocation="sometimes")


def test_compute_with_a_keyword_that_contradicts_a_spec_names_the_spec_and_the_field() -> None:
    with pytest.raises(sky.ConfigurationError, match=r"spec 1 of 1 \(provider Local\) sets nodes="):
        sky.Compute(sky.Spec(provider=sky.Local(), nodes=3), nodes=2)


def test_compute_with_a_typo_suggests_the_keyword() -> None:
    with pytest.raises(sky.ConfigurationError, match="did you mean nodes="):
        sky.Compute(provider=sky.Local(), node=2)


def test_a_credential_in_image_env_is_masked_in_what_a_task_prints() -> None:
    token = "sk-" + "s3cr3t" * 5

    @sky.function
    def show() -> str:
        value = os.environ["OPENAI_API_KEY"]
        print(f"key is {value}", flush=True)
        return value

    lines: list[str] = []
    compute = local_pool(1, image=sky.Image(env={"OPENAI_API_KEY": token, "GREETING": "plain value"}))
    compute.on(sky.Log, lambda event: lines.append(event.line))
    with compute:
        assert show() >> compute == token  # the task itself sees the real value
    assert "key is ***" in lines
    assert token not in repr(compute.image)
    assert "plain value" in repr(compute.image)  # only credential-like names are masked
