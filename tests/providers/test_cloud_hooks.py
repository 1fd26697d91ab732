"""`skyward.extension.cloud_hooks`: a cloud package's three entry-point hooks, written once,
registered with a real pluggy manager on Skyward's hook specs, importing the cloud's modules only
when a hook is called."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pluggy
import pytest

from skyward.extension import hookspecs
from skyward.extension.cloud_hooks import cloud_hooks, load

CLOUD = """
class Cloud:
    pass

class CloudSweeper:
    pass

class CloudOffers:
    pass
"""


@pytest.fixture
def cloud_module(tmp_path: Path) -> Iterator[str]:
    """A cloud package's module on the path, not yet imported."""
    (tmp_path / "fake_cloud_pkg.py").write_text(CLOUD)
    sys.path.insert(0, str(tmp_path))
    try:
        yield "fake_cloud_pkg"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("fake_cloud_pkg", None)


def test_the_hooks_answer_the_cloud_and_import_it_only_when_called(cloud_module: str) -> None:
    entry = types.ModuleType("fake_cloud_hooks")
    entry.skyward_providers, entry.skyward_sweepers, entry.skyward_offer_sources = cloud_hooks(  # type: ignore[attr-defined]
        providers={"Cloud": f"{cloud_module}:Cloud"},
        sweeper=f"{cloud_module}:CloudSweeper",
        offers=f"{cloud_module}:CloudOffers",
    )
    manager = pluggy.PluginManager("skyward")
    manager.add_hookspecs(hookspecs)
    manager.register(entry, name="skyward-cloud:cloud")
    manager.check_pending()
    assert cloud_module not in sys.modules, "discovery imports none of the cloud"

    (providers,) = manager.hook.skyward_providers()
    assert list(providers) == ["Cloud"] and providers["Cloud"].__module__ == cloud_module
    (sweepers,) = manager.hook.skyward_sweepers()
    (sources,) = manager.hook.skyward_offer_sources()
    assert [type(s).__name__ for s in sweepers + sources] == ["CloudSweeper", "CloudOffers"]


def test_a_path_without_its_attribute_says_the_form_expected() -> None:
    with pytest.raises(ValueError, match="module:attribute"):
        load("skyward.providers.rest")
