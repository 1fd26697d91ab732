"""skyward.toml: finding the file, building named pools, and errors that point into the file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from skyward.config import find_config, load_config, load_pool
from skyward.errors import ConfigurationError
from skyward.image import Image, PipIndex
from skyward.options import LogConfig, Options, Worker
from skyward.spec import Nodes, Volume


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own working directory and no inherited SKYWARD_CONFIG."""
    monkeypatch.delenv("SKYWARD_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)


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


def test_plugins_in_the_file_point_to_python(tmp_path: Path) -> None:
    write(tmp_path, '[pools.train]\nplugins = ["torch"]\n')
    with pytest.raises(ConfigurationError, match="plugins cannot be set in skyward.toml"):
        load_pool("train")


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[pools.train\n")
    with pytest.raises(ConfigurationError, match=f"{path}: not valid TOML"):
        load_config()


def test_unknown_top_level_table_names_the_valid_ones(tmp_path: Path) -> None:
    write(tmp_path, "[pool.train]\n")
    with pytest.raises(ConfigurationError, match=r"use \[defaults\] and \[pools.<name>\]"):
        load_config()


def test_load_config_reads_an_explicit_path(tmp_path: Path) -> None:
    path = tmp_path / "custom.toml"
    path.write_text("[pools.x]\nnodes = 3\n")
    assert load_config(path).pool("x")[0].nodes == Nodes(3)


def test_provider_without_a_type_shows_both_forms(tmp_path: Path) -> None:
    write(tmp_path, '[pools.train.provider]\nregion = "us-east-1"\n')
    with pytest.raises(ConfigurationError, match=r'provider = "aws" or provider = \{ type = "aws" \}'):
        load_pool("train")


# --- these need skyward.registry.provider_config (the lead's module)


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
