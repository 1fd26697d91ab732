"""No package of ours imports itself in a circle, and core imports only downward through its layers.

A cycle between two modules of one package (a config importing its provider, which imports the
config back) works only while every import in it is made late enough, inside a function; it
breaks the day someone moves one to the top, and it hides which module is the lower layer. So
each package's import graph is read from its source, every `import` and `from ... import`
counted, those inside functions too, and checked for cycles. Imports under `if TYPE_CHECKING:`
are left out: they never run (they exist for annotations only).

The graph is read with `ast`, not by importing: nothing runs, and an import made only inside a
function counts as much as one at the top. A module that imports by name (`importlib.import_module`
over a table of names, as the package root's public names and core's plugin factories do) imports
every module of the package that it names in a string.

Core (`skyward`) is held to more: its modules form layers (`CORE_LAYERS`, drawn in
docs/architecture.md, "Layers"), and a module imports from its own layer and those below, never
from one above. Its subpackages and top-level modules ("units": `client`, `worker`, `errors`...)
do not import each other in a circle either, even where no two modules do.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: package -> its source folder.
PACKAGES = {
    "skyward": ROOT / "skyward-core" / "src" / "skyward",
    "skyward_aws": ROOT / "skyward-aws" / "src" / "skyward_aws",
    "skyward_runpod": ROOT / "skyward-runpod" / "src" / "skyward_runpod",
    "skyward_vastai": ROOT / "skyward-vastai" / "src" / "skyward_vastai",
    "skyward_verda": ROOT / "skyward-verda" / "src" / "skyward_verda",
    "skyward_novita": ROOT / "skyward-novita" / "src" / "skyward_novita",
    "skyward_vultr": ROOT / "skyward-vultr" / "src" / "skyward_vultr",
    "skyward_slurm": ROOT / "skyward-slurm" / "src" / "skyward_slurm",
    "skyward_lambda": ROOT / "skyward-lambda" / "src" / "skyward_lambda",
    "skyward_gcp": ROOT / "skyward-gcp" / "src" / "skyward_gcp",
    "skyward_hyperstack": ROOT / "skyward-hyperstack" / "src" / "skyward_hyperstack",
    "skyward_massedcompute": ROOT / "skyward-massedcompute" / "src" / "skyward_massedcompute",
    "skyward_tensordock": ROOT / "skyward-tensordock" / "src" / "skyward_tensordock",
    "skyward_jarvislabs": ROOT / "skyward-jarvislabs" / "src" / "skyward_jarvislabs",
    "skyward_scaleway": ROOT / "skyward-scaleway" / "src" / "skyward_scaleway",
    "skyward_torch": ROOT / "skyward-torch" / "src" / "skyward_torch",
    "skyward_jax": ROOT / "skyward-jax" / "src" / "skyward_jax",
}


#: Core's layers, lowest first, each a list of units: a top-level module, or a subpackage with all
#: its modules (`skyward` is the package root alone). docs/architecture.md draws the same table.
CORE_LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Plain code that needs nothing of ours above it: errors, the wire format, time and retries, the
    # fast paths through libraries' internals (`fastpaths/`), and the task-side helpers (`task/`: where
    # a task runs, its shard, its output), which need only errors.
    (
        "foundations",
        (
            "_environment_mark",
            "_version",
            "accelerators",
            "active",
            "dataclass_view",
            "errors",
            "fastpaths",
            "home",
            "messages",
            "payload",
            "pickling",
            "retry",
            "secrets",
            "task",
            "time",
            "tracebacks",
            "wire",
        ),
    ),
    # What providers and plugins are written against (`extension/`): the hook catalogue, `Plugin`,
    # the registry, the folding hooks' starting values.
    ("contracts", ("extension",)),
    # What a user writes down: a spec, an image, options.
    ("values", ("containers", "health", "image", "metrics", "options", "spec", "storage")),
    # What a pool tells (`observe/`): its events, the console that draws them, the logs.
    ("observability", ("observe",)),
    # What runs a node: bootstrap, channels, the worker, its guardian, the providers, and the
    # market of their offers and prices.
    # The distributed collections (`collections/`: the store on the client, the proxies in tasks) too.
    # `_keeper` is the keeper's entry point outside `transport/` (its import failure unmarks a warm
    # environment).
    (
        "machinery",
        ("_keeper", "bootstrap", "collections", "guardian", "market", "providers", "transport", "worker"),
    ),
    # What the user calls: pools (with the hooks that bind plugins to a pool and core's own
    # registrations, which name the providers), functions, configuration, the plugins that ship
    # with core, the CLI.
    # The pool server (`server/`) holds pools and is driven by the CLI.
    ("client", ("cli", "client", "config", "config_records", "function", "plugins", "resolve", "server")),
    # The public surface, and the provider contract suite written against it.
    ("surface", ("skyward", "testing")),
)


def modules(package: str, folder: Path) -> dict[str, Path]:
    """Every module of the package by dotted name (a package's `__init__` under its own name)."""
    found = {}
    for path in sorted(folder.rglob("*.py")):
        parts = [package, *path.relative_to(folder).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, except the bodies of `if TYPE_CHECKING:` blocks (their `else:` does run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of the same package that `module` imports, at run time, anywhere in it."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    nodes = list(_runtime_nodes(ast.parse(path.read_text(), str(path))))
    by_name = any(_name(node) == "import_module" for node in nodes)
    for node in nodes:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Constant) and by_name and node.value in known:
            names = [node.value]  # a module imported by name: `importlib.import_module(table[key])`
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` imports the module pkg.sub when there is one, else names of pkg.
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:  # `import pkg.sub.attr`-like: the module it names
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def _name(node: ast.AST) -> str:
    """The name a `Name` or `Attribute` node reads (`importlib.import_module`: `import_module`)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def import_graph(package: str, folder: Path) -> dict[str, set[str]]:
    known = modules(package, folder)
    return {name: imported(name, path, known) for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each group of modules that import each other (Tarjan's components),
    written as the path `a -> b -> ... -> a`."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_path_through(graph, group) for group in groups]


def _path_through(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """A shortest cycle from the group's first module back to itself, inside the group."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node] & members):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    following.append(nxt)
        frontier = following
    return group


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_the_package_imports_no_module_in_a_circle(package: str) -> None:
    found = cycles(import_graph(package, PACKAGES[package]))
    assert found == [], "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path: Path) -> None:
    """The check itself: a late import counts, one under TYPE_CHECKING does not."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text("def create():\n    from pkg.provider import Provider\n")
    (pkg / "provider.py").write_text("from pkg.config import create\n")
    (pkg / "api.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.provider import Provider\n"
    )
    graph = import_graph("pkg", pkg)
    assert cycles(graph) == [["pkg.config", "pkg.provider", "pkg.config"]]
    assert graph["pkg.api"] == set()


def unit(module: str) -> str:
    """The subpackage or top-level module that `module` belongs to (`skyward.client.pool`: `client`);
    the package root is its own unit, named after the package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units: dict[str, set[str]] = {}
    for module, targets in graph.items():
        units.setdefault(unit(module), set()).update(unit(t) for t in targets if unit(t) != unit(module))
    return units


def layer_of(layers: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, int]:
    return {name: rank for rank, (_, names) in enumerate(layers) for name in names}


def upward_imports(graph: dict[str, set[str]], layers: tuple[tuple[str, tuple[str, ...]], ...]) -> list[str]:
    """Every import from a module to one in a higher layer, as `a (layer) -> b (layer)` (a module in
    no layer is left to `test_every_core_module_belongs_to_one_layer`)."""
    rank, names = layer_of(layers), [name for name, _ in layers]
    return [
        f"{module} ({names[rank[unit(module)]]}) -> {target} ({names[rank[unit(target)]]})"
        for module in sorted(graph)
        for target in sorted(graph[module])
        if unit(module) in rank and unit(target) in rank and rank[unit(target)] > rank[unit(module)]
    ]


@pytest.fixture(scope="module")
def core() -> dict[str, set[str]]:
    return import_graph("skyward", PACKAGES["skyward"])


def test_every_core_module_belongs_to_one_layer(core: dict[str, set[str]]) -> None:
    """A new subpackage or top-level module is placed in a layer before it is imported anywhere."""
    placed = [name for _, names in CORE_LAYERS for name in names]
    assert len(placed) == len(set(placed)), "a unit is in two layers"
    assert sorted({unit(module) for module in core} - set(placed)) == []
    assert sorted(set(placed) - {unit(module) for module in core}) == [], "a layer names a unit that is gone"


def test_core_imports_nothing_from_a_layer_above(core: dict[str, set[str]]) -> None:
    assert upward_imports(core, CORE_LAYERS) == []


def test_cores_subpackages_and_modules_import_each_other_in_no_circle(core: dict[str, set[str]]) -> None:
    """`transport` -> `worker` -> `transport` is a circle even when no two of their modules are."""
    found = cycles(unit_graph(core))
    assert found == [], "import cycles between units: " + "; ".join(" -> ".join(c) for c in found)


def test_an_import_up_a_layer_is_found_even_inside_a_function(tmp_path: Path) -> None:
    """The check itself: a value that imports a provider late, to build a default, goes up."""
    pkg = tmp_path / "pkg"
    (pkg / "providers").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "providers" / "__init__.py").write_text("")
    (pkg / "providers" / "local.py").write_text("from pkg.spec import Spec\n")
    (pkg / "spec.py").write_text("def default():\n    from pkg.providers.local import Local\n")
    layers = (("values", ("spec",)), ("machinery", ("providers",)), ("surface", ("pkg",)))
    graph = import_graph("pkg", pkg)
    assert upward_imports(graph, layers) == ["pkg.spec (values) -> pkg.providers.local (machinery)"]
    assert cycles(unit_graph(graph)) == [["providers", "spec", "providers"]]


def test_a_module_imported_by_name_counts_as_imported(tmp_path: Path) -> None:
    """`importlib.import_module` over a table of names (a lazy public surface) is an import."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import importlib\n_WHERE = {'Pool': 'pkg.pool'}\n"
        "def __getattr__(name):\n    return getattr(importlib.import_module(_WHERE[name]), name)\n"
    )
    (pkg / "pool.py").write_text("NAME = 'pkg.pool'\n")  # a string alone, without import_module: none
    assert import_graph("pkg", pkg) == {"pkg": {"pkg.pool"}, "pkg.pool": set()}


def test_the_architecture_page_draws_the_same_layers() -> None:
    """docs/architecture.md has a row per layer, lowest first, naming each of its units in backticks
    (a subpackage with a trailing slash: `client/`)."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    section = page.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [row.split("|")[1].strip() for row in rows] == [name for name, _ in CORE_LAYERS]
    for row, (name, units) in zip(rows, CORE_LAYERS, strict=True):
        shown = {name.rstrip("/") for name in re.findall(r"`([^`]+)`", row.split("|")[2])}
        assert shown == set(units), name
