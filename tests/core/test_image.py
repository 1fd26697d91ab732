"""Image and PipIndex: natural input, validation at construction, and copy-on-change helpers."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import cloudpickle
import pytest

from skyward.errors import ConfigurationError
from skyward.image import DEFAULT_IMAGE, Image, PipIndex


def test_image_defaults_match_the_reference() -> None:
    image = Image()
    assert image.python == "auto"
    assert image.pip == image.apt == image.includes == image.excludes == image.pip_indexes == ()
    assert image.env == {} and image.shell_vars == {}
    assert image.skyward_source == "auto"
    assert image.bootstrap_timeout == 300


def test_default_image_is_a_plain_image() -> None:
    assert Image() == DEFAULT_IMAGE


def test_image_turns_lists_into_tuples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path)
    image = Image(pip=["torch", "numpy"], apt=["ffmpeg"], includes=["./src"], excludes=["*.pyc"])
    assert image.pip == ("torch", "numpy")
    assert image.apt == ("ffmpeg",)
    assert image.includes == (str(tmp_path / "src"),)  # resolved when built: see test_image_includes.py
    assert image.excludes == ("*.pyc",)


def test_image_treats_a_lone_string_as_one_package() -> None:
    assert Image(pip="torch").pip == ("torch",)


def test_image_with_the_same_env_dict_is_equal() -> None:
    assert Image(env={"A": "1", "B": "2"}) == Image(env={"B": "2", "A": "1"})


def test_image_with_different_env_is_not_equal() -> None:
    assert Image(env={"A": "1"}) != Image(env={"A": "2"})


def test_image_with_env_is_hashable() -> None:
    assert hash(Image(env={"A": "1"})) == hash(Image(env={"A": "1"}))


def test_image_survives_pickle_and_cloudpickle() -> None:
    image = Image(
        pip=["torch"], env={"HF_HOME": "/data/hf"}, pip_indexes=[PipIndex("https://x.org/simple", ["a"])]
    )
    assert pickle.loads(pickle.dumps(image)) == image
    assert cloudpickle.loads(cloudpickle.dumps(image)) == image


def test_image_env_values_become_strings() -> None:
    assert Image(env={"WORKERS": 4, "DEBUG": True}).env == {"WORKERS": "4", "DEBUG": "True"}


def test_image_env_with_invalid_name_names_the_rule() -> None:
    with pytest.raises(ConfigurationError, match="not a valid environment variable name"):
        Image(env={"1BAD": "x"})


def test_image_env_with_none_value_names_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="must be strings"):
        Image(shell_vars={"X": None})


def test_image_python_auto_resolves_to_the_client_version() -> None:
    assert Image().python_version() == f"{sys.version_info.major}.{sys.version_info.minor}"


def test_image_explicit_python_version_is_kept() -> None:
    assert Image(python="3.12").python_version() == "3.12"


def test_image_float_python_version_asks_for_a_string() -> None:
    with pytest.raises(ConfigurationError, match='python="3.1"'):
        Image(python=3.10)  # type: ignore[arg-type]


def test_image_malformed_python_version_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match='"auto" or a CPython version'):
        Image(python="latest")


def test_image_unknown_skyward_source_lists_valid_values() -> None:
    with pytest.raises(ConfigurationError, match="'auto', 'local', 'github', 'pypi'"):
        Image(skyward_source="conda")


def test_image_non_positive_bootstrap_timeout_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="bootstrap_timeout=600"):
        Image(bootstrap_timeout=0)


def test_image_metrics_default_asks_for_the_default_set() -> None:
    assert Image().metrics == "default"


def test_image_metrics_none_means_disabled_and_is_kept() -> None:
    assert Image(metrics=None).metrics is None


def test_image_metrics_list_becomes_a_tuple() -> None:
    import skyward as sky

    collector = sky.metrics.CPU()
    assert Image(metrics=[collector]).metrics == (collector,)


def test_with_pip_returns_a_new_image_and_leaves_the_original() -> None:
    base = Image(pip=["numpy"])
    extended = base.with_pip("torch")
    assert extended.pip == ("numpy", "torch")
    assert base.pip == ("numpy",)


def test_with_pip_does_not_repeat_a_listed_package() -> None:
    assert Image(pip=["torch"]).with_pip("torch", "numpy").pip == ("torch", "numpy")


def test_with_apt_appends_system_packages() -> None:
    assert Image(apt=["git"]).with_apt("ffmpeg").apt == ("git", "ffmpeg")


def test_with_env_overrides_a_variable_of_the_same_name() -> None:
    assert Image(env={"A": "1", "B": "2"}).with_env(B="3", C=4).env == {"A": "1", "B": "3", "C": "4"}


def test_with_pip_index_adds_a_scoped_index() -> None:
    index = PipIndex(url="https://download.pytorch.org/whl/cu121", packages=["torch"])
    assert Image().with_pip_index(index).pip_indexes == (index,)


def test_merge_concatenates_sequences_without_repeats() -> None:
    merged = Image(pip=["numpy", "torch"]).merge(Image(pip=["torch", "jax"]))
    assert merged.pip == ("numpy", "torch", "jax")


def test_merge_lets_the_other_image_win_on_env_names() -> None:
    merged = Image(env={"A": "1", "B": "1"}).merge(Image(env={"B": "2"}))
    assert merged.env == {"A": "1", "B": "2"}


def test_merge_takes_the_other_images_non_default_scalars() -> None:
    assert Image(python="3.11").merge(Image(python="3.12")).python == "3.12"


def test_merge_keeps_this_images_scalars_where_the_other_has_defaults() -> None:
    assert Image(python="3.12", bootstrap_timeout=900).merge(Image()).bootstrap_timeout == 900


def test_pip_index_turns_package_list_into_tuple() -> None:
    assert PipIndex("https://x.org/simple", ["a", "b"]).packages == ("a", "b")


def test_pip_index_without_a_url_scheme_names_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="expected an index URL"):
        PipIndex(url="download.pytorch.org")


def test_image_accepts_pip_indexes_as_plain_tables() -> None:
    image = Image(pip_indexes=[{"url": "https://x.org/simple", "packages": ["torch"]}])
    assert image.pip_indexes == (PipIndex("https://x.org/simple", ("torch",)),)


def test_image_rejects_a_pip_index_of_the_wrong_type() -> None:
    with pytest.raises(ConfigurationError, match="not a PipIndex"):
        Image(pip_indexes=["https://x.org/simple"])


def test_image_is_immutable() -> None:
    with pytest.raises(AttributeError):
        Image().pip = ("torch",)  # type: ignore[misc]


@pytest.mark.parametrize("field", ["pip", "apt"])
def test_a_package_list_entry_that_is_an_option_is_refused_at_construction(field: str) -> None:
    with pytest.raises(ConfigurationError, match="is an option, not a package"):
        Image(**{field: ["numpy", "--index-url=https://elsewhere.example/simple"]})


def test_the_bootstrap_ends_the_options_before_the_image_packages() -> None:
    from skyward.bootstrap.render import render_script

    text = render_script(Image(pip=["numpy"], apt=["git"]), (), workdir="/W").text
    assert "apt-get install -y --no-install-recommends -- git" in text
    (uv_line,) = [line for line in text.splitlines() if line.startswith('"$W/bin/uv" pip install')]
    options, _, packages = uv_line.partition(" -- ")
    assert "numpy" in packages.split() and "numpy" not in options
