"""Every distribution is ready for a package index: README, classifiers, URLs, `py.typed`, pins.

Each wheel is built on its own (`pip wheel --no-deps`), the way a release builds it, and its
METADATA is read back as an index would show it. The `skyward` meta-distribution (`skyward-meta/`)
is what `pip install skyward` and `pip install "skyward[aws,torch]"` resolve to.
"""

from __future__ import annotations

import email
import email.message
import re
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
CODE_DISTRIBUTIONS = {
    "skyward-core": "skyward",
    "skyward-aws": "skyward_aws",
    "skyward-runpod": "skyward_runpod",
    "skyward-vastai": "skyward_vastai",
    "skyward-verda": "skyward_verda",
    "skyward-novita": "skyward_novita",
    "skyward-vultr": "skyward_vultr",
    "skyward-slurm": "skyward_slurm",
    "skyward-lambda": "skyward_lambda",
    "skyward-gcp": "skyward_gcp",
    "skyward-hyperstack": "skyward_hyperstack",
    "skyward-massedcompute": "skyward_massedcompute",
    "skyward-tensordock": "skyward_tensordock",
    "skyward-jarvislabs": "skyward_jarvislabs",
    "skyward-scaleway": "skyward_scaleway",
    "skyward-torch": "skyward_torch",
    "skyward-jax": "skyward_jax",
}
META_FOLDER = "skyward-meta"
FOLDERS = [*CODE_DISTRIBUTIONS, META_FOLDER]
EXTRAS = {"aws": "skyward-aws", "runpod": "skyward-runpod", "vastai": "skyward-vastai",
          "verda": "skyward-verda", "novita": "skyward-novita", "vultr": "skyward-vultr", "slurm": "skyward-slurm",
          "lambda": "skyward-lambda", "gcp": "skyward-gcp", "hyperstack": "skyward-hyperstack",
          "massedcompute": "skyward-massedcompute", "tensordock": "skyward-tensordock",
          "jarvislabs": "skyward-jarvislabs", "scaleway": "skyward-scaleway",
          "torch": "skyward-torch", "jax": "skyward-jax"}
URL_LABELS = {"Homepage", "Documentation", "Repository", "Issues"}


@pytest.fixture(scope="module")
def wheels(release_wheels: dict[str, Path]) -> dict[str, Path]:
    """One wheel per folder, each built from its folder alone by its own build backend (conftest)."""
    return {folder: release_wheels[folder] for folder in FOLDERS}


def metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_string(archive.read(name).decode("utf-8"))


def pyproject(folder: str) -> dict:
    return tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]


def core_version() -> Version:
    return Version(pyproject("skyward-core")["version"])


@pytest.mark.parametrize("folder", FOLDERS)
def test_wheel_metadata_carries_the_readme_as_its_description(folder: str, wheels: dict[str, Path]) -> None:
    meta = metadata(wheels[folder])
    readme = (ROOT / folder / "README.md").read_text()
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().strip() == readme.strip()
    assert len(readme.split()) >= 40, f"{folder}/README.md is too thin to introduce the package"


@pytest.mark.parametrize("folder", FOLDERS)
def test_readme_links_work_off_the_repository(folder: str) -> None:
    """An index renders the README alone: a relative link (`../docs/x.md`) would point nowhere."""
    readme = (ROOT / folder / "README.md").read_text()
    for target in re.findall(r"\]\(([^)]+)\)", readme):
        assert target.startswith("https://"), f"{folder}/README.md links to {target!r}"


@pytest.mark.parametrize("folder", FOLDERS)
def test_wheel_metadata_has_classifiers_urls_and_license(folder: str, wheels: dict[str, Path]) -> None:
    meta = metadata(wheels[folder])
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert any(c.startswith("Development Status ::") for c in classifiers)
    assert meta["License-Expression"] == "MIT"
    assert meta["Requires-Python"] == ">=3.11"
    urls = dict(entry.split(", ", 1) for entry in meta.get_all("Project-URL") or [])
    assert set(urls) == URL_LABELS
    assert all(url.startswith("https://") for url in urls.values())


def test_every_distribution_names_the_same_project_urls(wheels: dict[str, Path]) -> None:
    seen = {folder: sorted(metadata(wheel).get_all("Project-URL") or []) for folder, wheel in wheels.items()}
    assert len({tuple(urls) for urls in seen.values()}) == 1, seen


@pytest.mark.parametrize("folder", list(CODE_DISTRIBUTIONS))
def test_wheel_carries_py_typed(folder: str, wheels: dict[str, Path]) -> None:
    package = CODE_DISTRIBUTIONS[folder]
    assert (ROOT / folder / "src" / package / "py.typed").is_file()
    with zipfile.ZipFile(wheels[folder]) as archive:
        assert f"{package}/py.typed" in archive.namelist()


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_distribution_is_released_at_the_core_version(folder: str) -> None:
    assert Version(pyproject(folder)["version"]) == core_version()


def skyward_requirements(folder: str) -> list[Requirement]:
    project = pyproject(folder)
    listed = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        listed += extra
    return [r for r in map(Requirement, listed) if r.name.startswith("skyward-")]


@pytest.mark.parametrize("folder", [f for f in FOLDERS if f != "skyward-core"])
def test_dependencies_on_skyward_pin_the_release_series(folder: str) -> None:
    """`>=0.1.0,<0.2`: this release and its fixes, never the next minor (pre-1.0, it may break)."""
    requirements = skyward_requirements(folder)
    assert any(r.name == "skyward-core" for r in requirements), f"{folder} does not depend on skyward-core"
    version = core_version()
    next_minor = Version(f"{version.major}.{version.minor + 1}.0")
    previous_minor = Version(f"{version.major}.{max(version.minor - 1, 0)}.99")
    for requirement in requirements:
        assert requirement.specifier.contains(version), f"{folder}: {requirement} excludes {version}"
        assert requirement.specifier.contains(Version(f"{version}.post1"))
        assert not requirement.specifier.contains(next_minor), f"{folder}: {requirement} allows {next_minor}"
        if version.minor > 0:
            assert not requirement.specifier.contains(previous_minor)


def test_meta_distribution_is_named_skyward_and_depends_on_core(wheels: dict[str, Path]) -> None:
    meta = metadata(wheels[META_FOLDER])
    assert meta["Name"] == "skyward"
    plain = [Requirement(r) for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert [r.name for r in plain] == ["skyward-core"]


def test_meta_distribution_extras_pull_the_right_distributions(wheels: dict[str, Path]) -> None:
    meta = metadata(wheels[META_FOLDER])
    assert set(meta.get_all("Provides-Extra") or []) == {*EXTRAS, "all"}
    requires = [Requirement(r) for r in meta.get_all("Requires-Dist") or []]
    for extra, distribution in EXTRAS.items():
        pulled = {r.name for r in requires if r.marker is not None and r.marker.evaluate({"extra": extra})}
        assert pulled == {distribution}, f"skyward[{extra}] pulls {pulled}"
    everything = {r.name for r in requires if r.marker is not None and r.marker.evaluate({"extra": "all"})}
    assert everything == set(EXTRAS.values())


def test_meta_wheel_ships_no_code(wheels: dict[str, Path]) -> None:
    """Its only files are metadata, so it can never shadow the `skyward` package of skyward-core."""
    with zipfile.ZipFile(wheels[META_FOLDER]) as archive:
        assert all(".dist-info/" in name for name in archive.namelist()), archive.namelist()
