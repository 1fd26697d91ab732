"""skyward.toml: finding the file, building named pools, and errors that point into the file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import skyward as sky
from skyward.config import find_config, load_config, load_pool
from skyward.errors import ConfigurationError
from skyward.image import Image, PipIndex
from skyward.options import LogConfig, Options, Worker
from skyward.spec import Nodes, Volume


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own working directory, no inherited SKYWARD_CONFIG, and its own
    (empty) SKYWARD_HOME, so the user's real ~/.skyward/defaults.toml never leaks in."""
    monkeypatch.delenv("SKYWARD_CONFIG", raising=False)
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def write_user_defaults(folder: Path, text: str) -> Path:
    home = folder / "home"
    home.mkdir(exist_ok=True)
    path = home / "defaults.toml"
    path.write_text(textwrap.dedent(text))
    return path


def write(folder: Path, text: str) -> Path:
    path = folder / "skyward.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_find_config_finds_the_file_in_the_working_directory(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    assert find_config() == path.resolve()


def test_find_config_looks_in_parent_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "")
    nested = tmp_path / "src" / "pkg"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    assert find_config() == path.resolve()


def test_find_config_prefers_the_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "")
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text("")
    monkeypatch.setenv("SKYWARD_CONFIG", str(elsewhere))
    assert find_config() == elsewhere


def test_find_config_with_a_missing_env_file_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKYWARD_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigurationError, match="SKYWARD_CONFIG=.*no such file"):
        find_config()


def test_load_config_without_a_file_is_empty() -> None:
    config = load_config()
    assert config.path is None and config.pool_names == ()


def test_pool_without_a_file_says_where_it_looked() -> None:
    with pytest.raises(ConfigurationError, match=r"no skyward.toml found in .* or its parents"):
        load_pool("train")


def test_unknown_pool_lists_defined_pools_and_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[pools.train]\n[pools.infer]\n")
    with pytest.raises(ConfigurationError) as error:
        load_pool("bench")
    message = str(error.value)
    assert str(path) in message and "'train', 'infer'" in message


def test_unknown_pool_suggests_a_close_name(tmp_path: Path) -> None:
    write(tmp_path, "[pools.train]\n")
    with pytest.raises(ConfigurationError, match="did you mean 'train'"):
        load_pool("trian")


def test_pool_builds_spec_fields(tmp_path: Path) -> None:
    write(
        tmp_path,
        """
        [pools.train]
        nodes = 4
        allocation = "on-demand"
        ttl = 900
        vcpus = 8
        region = "us-east-1"
        """,
    )
    spec, _ = load_pool("train")
    assert (spec.nodes, spec.allocation, spec.ttl, spec.vcpus, spec.region) == (
        Nodes(4),
        "on-demand",
        900,
        8,
        "us-east-1",
    )


def test_pool_without_provider_runs_locally(tmp_path: Path) -> None:
    write(tmp_path, "[pools.dev]\n")
    spec, options = load_pool("dev")
    assert spec.provider is None and options == Options()


def test_pool_accelerator_string_resolves(tmp_path: Path) -> None:
    write(tmp_path, '[pools.train]\naccelerator = "A100"\n')
    spec, _ = load_pool("train")
    assert spec.accelerator is not None and spec.accelerator.name == "A100"


def test_pool_nodes_array_is_a_range(tmp_path: Path) -> None:
    write(tmp_path, "[pools.train]\nnodes = [2, 8]\n")
    assert load_pool("train")[0].nodes == Nodes(desired=2, max=8)


def test_pool_nodes_table_is_nodes(tmp_path: Path) -> None:
    write(tmp_path, "[pools.train]\nnodes = { desired = 8, min = 4 }\n")
    assert load_pool("train")[0].nodes == Nodes(desired=8, min=4)


def test_pool_image_table_becomes_an_image(tmp_path: Path) -> None:
    write(
        tmp_path,
        """
        [pools.train.image]
        python = "3.12"
        pip = ["torch"]
        env = { HF_HOME = "/data/hf" }

        [[pools.train.image.pip_indexes]]
        url = "https://download.pytorch.org/whl/cu121"
        packages = ["torch"]
        """,
    )
    image = load_pool("train")[0].image
    assert image == Image(
        python="3.12",
        pip=["torch"],
        env={"HF_HOME": "/data/hf"},
        pip_indexes=[PipIndex("https://download.pytorch.org/whl/cu121", ["torch"])],
    )


def test_pool_volumes_become_volumes(tmp_path: Path) -> None:
    write(tmp_path, '[pools.train]\nvolumes = [{ bucket = "my-data", mount = "/data" }]\n')
    assert load_pool("train")[0].volumes == (Volume(bucket="my-data", mount="/data"),)


def test_pool_options_table_becomes_options(tmp_path: Path) -> None:
    write(
        tmp_path,
        """
        [pools.train.options]
        selection = "first"
        console = "log"
        worker = { concurrency = 4 }
        logging = { level = "DEBUG" }
        """,
    )
    _, options = load_pool("train")
    assert options == Options(
        selection="first", console="log", worker=Worker(concurrency=4), logging=LogConfig(level="DEBUG")
    )


def test_defaults_apply_under_every_pool(tmp_path: Path) -> None:
    write(tmp_path, "[defaults]\nttl = 900\n[pools.a]\n[pools.b]\n")
    assert load_pool("a")[0].ttl == load_pool("b")[0].ttl == 900


def test_a_pool_value_replaces_the_default(tmp_path: Path) -> None:
    write(tmp_path, "[defaults]\nttl = 900\n[pools.a]\nttl = 60\n")
    assert load_pool("a")[0].ttl == 60


def test_default_and_pool_tables_merge_key_by_key(tmp_path: Path) -> None:
    write(
        tmp_path,
        """
        [defaults.image]
        pip = ["numpy"]
        env = { A = "1", B = "1" }
        [defaults.options]
        console = "log"

        [pools.a.image]
        env = { B = "2" }
        [pools.a.options]
        selection = "first"
        """,
    )
    spec, options = load_pool("a")
    assert spec.image.pip == ("numpy",) and spec.image.env == {"A": "1", "B": "2"}
    assert (options.console, options.selection) == ("log", "first")


def test_unknown_key_suggests_the_close_field_and_names_the_pool(tmp_path: Path) -> None:
    path = write(tmp_path, '[pools.train]\nacelerator = "A100"\n')
    with pytest.raises(ConfigurationError) as error:
        load_pool("train")
    assert str(error.value).startswith(f"{path} [pools.train]: unknown key 'acelerator'")
    assert "did you mean 'accelerator'" in str(error.value)


def test_unknown_option_key_names_the_options_table(tmp_path: Path) -> None:
    write(tmp_path, "[pools.train.options]\nselectoin = 'first'\n")
    with pytest.raises(ConfigurationError, match=r"\[pools.train\].options: unknown key 'selectoin'"):
        load_pool("train")


def test_invalid_value_is_reported_with_file_and_pool(tmp_path: Path) -> None:
    path = write(tmp_path, "[pools.train]\nnodes = 0\n")
    with pytest.raises(ConfigurationError) as error:
        load_pool("train")
    assert str(error.value) == (
        f"{path} [pools.train]: nodes=0: a pool needs at least one node; pass nodes=1 or more"
    )


def test_a_broken_pool_does_not_stop_another(tmp_path: Path) -> None:
    write(tmp_path, "[pools.bad]\nnodes = 0\n[pools.good]\nnodes = 2\n")
    assert load_pool("good")[0].nodes == Nodes(2)


def test_plugins_by_name_and_with_arguments_are_built_by_their_factories(tmp_path: Path) -> None:
    write(tmp_path, """
        [pools.train]
        plugins = ["sklearn", { name = "mig", profile = "3g.40gb" }, { name = "joblib", version = "1.4.2" }]
    """)
    spec, _ = load_pool("train")
    assert [plugin.name for plugin in spec.plugins] == ["sklearn", "mig", "joblib"]
    assert spec.plugins[1] == sky.plugins.mig("3g.40gb")
    assert "joblib==1.4.2" in spec.plugins[2].transform(Image(), None).pip  # type: ignore[misc]


def test_an_unknown_plugin_argument_names_the_plugin_and_the_close_key(tmp_path: Path) -> None:
    path = write(tmp_path, '[pools.train]\nplugins = ["sklearn", { name = "joblib", versoin = "1" }]\n')
    with pytest.raises(ConfigurationError) as raised:
        load_pool("train")
    message = str(raised.value)
    assert message.startswith(f"{path} [pools.train].plugins[1]: unknown key 'versoin'")
    assert "did you mean 'version'?" in message


def test_a_plugin_without_its_package_says_what_to_install(tmp_path: Path) -> None:
    write(tmp_path, '[pools.train]\nplugins = ["nosuchplugin"]\n')
    with pytest.raises(ConfigurationError, match=r"plugins\[0\]: No plugin named 'nosuchplugin'"):
        load_pool("train")


def test_a_named_provider_table_is_used_by_a_pool(tmp_path: Path) -> None:
    write(tmp_path, """
        [providers.box]
        type = "local"
        isolated = true

        [pools.train]
        provider = "box"
        nodes = 2
    """)
    spec, _ = load_pool("train")
    assert spec.provider == sky.Local(isolated=True)


def test_a_provider_table_named_after_its_type_needs_no_type(tmp_path: Path) -> None:
    write(tmp_path, '[providers.local]\nisolated = true\n[pools.train]\nprovider = "local"\n')
    assert load_pool("train")[0].provider == sky.Local(isolated=True)


def test_a_pool_may_still_name_a_provider_type_directly(tmp_path: Path) -> None:
    write(tmp_path, '[providers.box]\ntype = "local"\nisolated = true\n[pools.train]\nprovider = "local"\n')
    assert load_pool("train")[0].provider == sky.Local()


def test_a_mistake_in_a_named_provider_names_its_table_and_the_fix(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [providers.box]
        type = "local"
        isolatd = true
        [pools.train]
        provider = "box"
    """)
    with pytest.raises(ConfigurationError) as raised:
        load_pool("train")
    assert str(raised.value).startswith(f"{path} [providers.box]: unknown key 'isolatd'")
    assert "did you mean 'isolated'?" in str(raised.value)


def test_user_defaults_lie_under_the_project_file(tmp_path: Path) -> None:
    write_user_defaults(tmp_path, """
        [defaults]
        ttl = 120
        nodes = 3
        [defaults.options]
        console = "log"
        [providers.box]
        type = "local"
        isolated = true
    """)
    write(tmp_path, '[defaults]\nttl = 60\n[pools.train]\nprovider = "box"\n')
    spec, options = load_pool("train")
    assert (spec.ttl, spec.nodes, spec.provider) == (60, Nodes(3), sky.Local(isolated=True))
    assert options.console == "log"


def test_a_project_provider_table_merges_over_the_users_of_the_same_name(tmp_path: Path) -> None:
    write_user_defaults(tmp_path, '[providers.box]\ntype = "local"\nisolated = true\n')
    write(tmp_path, '[providers.box]\nfork = false\n[pools.train]\nprovider = "box"\n')
    assert load_pool("train")[0].provider == sky.Local(isolated=True, fork=False)


def test_user_defaults_may_not_hold_pools(tmp_path: Path) -> None:
    path = write_user_defaults(tmp_path, "[pools.train]\nnodes = 2\n")
    with pytest.raises(ConfigurationError, match=rf"{path}: unknown top-level table\(s\) pools"):
        load_config()


def test_a_file_pool_equals_the_same_pool_written_in_python(tmp_path: Path) -> None:
    write_user_defaults(tmp_path, '[providers.box]\ntype = "local"\nisolated = true\n')
    write(tmp_path, """
        [defaults]
        ttl = 300
        [pools.train]
        provider = "box"
        accelerator = "A100"
        nodes = [2, 4]
        plugins = [{ name = "mig", profile = "1g.10gb" }]
        image = { pip = ["numpy"] }
        options = { console = "log", worker = { concurrency = 2 } }
    """)
    in_python = (
        sky.Spec(
            provider=sky.Local(isolated=True), accelerator="A100", nodes=(2, 4), ttl=300,
            plugins=[sky.plugins.mig("1g.10gb")], image=sky.Image(pip=["numpy"]),
        ),
        sky.Options(console="log", worker=sky.Worker(concurrency=2)),
    )
    assert load_pool("train") == in_python


def test_problems_lists_each_broken_provider_and_pool_once(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [providers.box]
        type = "local"
        bogus = 1
        [pools.ok]
        nodes = 1
        [pools.bad]
        nodse = 2
    """)
    problems = load_config().problems()
    assert problems == [
        f"{path} [providers.box]: unknown key 'bogus' for the local provider; valid keys: isolated, fork",
        f"{path} [pools.bad]: unknown key 'nodse'; did you mean 'nodes'?",
    ]


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[pools.train\n")
    with pytest.raises(ConfigurationError, match=f"{path}: not valid TOML"):
        load_config()


def test_unknown_top_level_table_names_the_valid_ones(tmp_path: Path) -> None:
    write(tmp_path, "[pool.train]\n")
    valid = r"use \[defaults\], \[providers.<name>\] and \[pools.<name>\]"
    with pytest.raises(ConfigurationError, match=valid):
        load_config()


def test_load_config_reads_an_explicit_path(tmp_path: Path) -> None:
    path = tmp_path / "custom.toml"
    path.write_text("[pools.x]\nnodes = 3\n")
    assert load_config(path).pool("x")[0].nodes == Nodes(3)


def test_provider_without_a_type_shows_both_forms(tmp_path: Path) -> None:
    write(tmp_path, '[pools.train.provider]\nregion = "us-east-1"\n')
    with pytest.raises(ConfigurationError, match=r'provider = "aws" or provider = \{ type = "aws" \}'):
        load_pool("train")


# --- these need skyward.extension.registry.provider_config (the lead's module)


def test_provider_name_becomes_its_config(tmp_path: Path) -> None:
    from skyward.providers.local import Local

    write(tmp_path, '[pools.dev]\nprovider = "local"\n')
    assert load_pool("dev")[0].provider == Local()


def test_provider_table_becomes_its_config(tmp_path: Path) -> None:
    from skyward.providers.local import Local

    write(tmp_path, '[pools.dev.provider]\ntype = "local"\n')
    assert load_pool("dev")[0].provider == Local()


def test_default_provider_applies_under_a_pool(tmp_path: Path) -> None:
    from skyward.providers.local import Local

    write(tmp_path, '[defaults]\nprovider = "local"\n[pools.dev]\nnodes = 2\n')
    assert load_pool("dev")[0].provider == Local()


# --- key paths: every failure names the table and key it came from


def test_an_unknown_key_in_a_nested_table_names_its_whole_path(tmp_path: Path) -> None:
    write(tmp_path, "[pools.train.options.worker]\nconcurency = 4\n")
    with pytest.raises(ConfigurationError, match=r"\[pools.train\].options.worker: unknown key 'concurency'; "
                       r"did you mean 'concurrency'\?"):
        load_pool("train")


def test_an_unknown_key_in_a_volume_names_the_volume_by_index(tmp_path: Path) -> None:
    write(tmp_path, """\
        [pools.train]
        volumes = [{ bucket = "a", mount = "/data" }, { bucket = "b", mount = "/ckpt", readonly = false }]
        """)
    with pytest.raises(ConfigurationError, match=r"\[pools.train\].volumes\[1\]: unknown key 'readonly'; "
                       r"did you mean 'read_only'\?"):
        load_pool("train")


def test_an_invalid_value_in_a_nested_table_names_its_path(tmp_path: Path) -> None:
    write(tmp_path, "[pools.train.options.logging]\nlevel = 'LOUD'\n")
    with pytest.raises(ConfigurationError, match=r"\[pools.train\].options.logging: .*LOUD"):
        load_pool("train")


def test_a_value_where_a_table_belongs_says_to_write_a_table(tmp_path: Path) -> None:
    write(tmp_path, "[pools.train]\nimage = 'python:3.12'\n")
    with pytest.raises(ConfigurationError, match=r"\[pools.train\].image: image must be a table"):
        load_pool("train")


def test_logging_may_be_a_switch_or_a_table(tmp_path: Path) -> None:
    write(tmp_path, "[pools.quiet.options]\nlogging = false\n[pools.loud.options.logging]\nlevel = 'DEBUG'\n")
    assert load_pool("quiet")[1].logging is False
    assert load_pool("loud")[1].logging == LogConfig(level="DEBUG")


def test_a_key_only_the_defaults_table_gets_wrong_is_reported_for_every_pool(tmp_path: Path) -> None:
    write(tmp_path, "[defaults]\nnodez = 2\n[pools.a]\n")
    with pytest.raises(ConfigurationError, match=r"\[pools.a\]: unknown key 'nodez'; did you mean 'nodes'\?"):
        load_pool("a")
