"""`Image(includes=[...])`: paths are resolved and checked when the image is built, so a missing one
fails on the line that named it, and a later `os.chdir` cannot change what a relative one names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from core_support import local_pool

import skyward as sky
from skyward.errors import ConfigurationError
from skyward.image import Image

pytestmark = pytest.mark.timeout(60)


@sky.function
def import_included() -> str:
    import skyward_includes_probe

    return skyward_includes_probe.VALUE


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with one module to include, made the current directory."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "skyward_includes_probe.py").write_text("VALUE = 'included'\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_missing_absolute_include_fails_at_construction_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "not-there"
    with pytest.raises(ConfigurationError, match=f"includes=.*{missing} does not exist") as caught:
        Image(includes=[str(missing)])
    assert "fix the path" in str(caught.value)


def test_a_missing_relative_include_names_the_folder_it_was_looked_for_in(project: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        sky.Image(includes=["srcc"])
    message = str(caught.value)
    assert f"{project / 'srcc'} does not exist" in message
    assert f"current directory, {project}" in message
    assert "make it absolute" in message


def test_a_missing_include_among_good_ones_is_still_refused(project: Path) -> None:
    with pytest.raises(ConfigurationError, match="missing.py"):
        Image(includes=["src", "missing.py"])


def test_includes_are_stored_absolute_and_expanded(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(project))
    image = Image(includes=["./src", "src/", "~/src/skyward_includes_probe.py"])
    assert image.includes == (str(project / "src"), str(project / "src" / "skyward_includes_probe.py"))


def test_a_relative_include_keeps_naming_its_folder_after_a_chdir(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    image = Image(includes=["src"])
    os.chdir(tmp_path_factory.mktemp("elsewhere"))  # the fixture's monkeypatch restores the cwd
    with local_pool(1, image=image) as compute:
        assert import_included() >> compute == "included"


def test_a_plugin_evolving_the_image_keeps_its_includes(project: Path) -> None:
    image = Image(includes=["src"]).with_pip("six").merge(Image(env={"A": "1"}))
    assert image.includes == (str(project / "src"),)
