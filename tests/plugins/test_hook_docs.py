"""Every hook in hookspecs.py is documented, and every Plugin field maps to a hook."""

from __future__ import annotations

import inspect
from pathlib import Path

import attrs

from skyward.client.hooks import PluginAdapter, PluginFolds
from skyward.extension import hookspecs
from skyward.extension.plugin import Plugin
from skyward.worker.lifecycle import WorkerAdapter

DOCS = (Path(__file__).resolve().parents[2] / "docs" / "plugins.md").read_text()


def hook_names() -> list[str]:
    return [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("skyward_")]


def test_every_hook_is_documented_in_the_plugin_guide() -> None:
    missing = [name for name in hook_names() if f"`{name}(" not in DOCS]
    assert missing == []


def test_every_hook_has_a_docstring_saying_when_it_runs() -> None:
    assert all(inspect.getdoc(getattr(hookspecs, name)) for name in hook_names())


def test_every_plugin_field_is_carried_by_a_hook_of_an_adapter() -> None:
    adapter_source = "".join(inspect.getsource(cls) for cls in (PluginAdapter, PluginFolds, WorkerAdapter))
    fields = [f.name for f in attrs.fields(Plugin) if f.name != "name"]
    assert [f for f in fields if f"plugin.{f}" not in adapter_source and f"p.{f}" not in adapter_source] == []


def test_every_hook_of_the_catalogue_has_a_row_in_the_catalogue_table() -> None:
    catalogue = DOCS[DOCS.index("## The hook catalogue"):]
    assert [name for name in hook_names() if f"| `{name}(" not in catalogue] == []
