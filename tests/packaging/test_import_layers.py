"""No package of ours imports itself in a circle.

A cycle between two modules of one package (a config importing its provider, which imports the
config back) works only while every import in it is made late enough, inside a function; it
breaks the day someone moves one to the top, and it hides which module is the lower layer. So
each package's import graph is read from its source, every `import` and `from ... import`
counted, those inside functions too, and checked for cycles. Imports under `if TYPE_CHECKING:`
are left out: they never run (they exist for annotations only).

The graph is read with `ast`, not by importing: nothing runs, and an import made only inside a
function counts as much as one at the top.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: package -> its source folder. Core (`skyward`) is not here yet: it still has cycles to cut.
PACKAGES = {
    "skyward_aws": ROOT / "skyward-aws" / "src" / "skyward_aws",
    "skyward_runpod": ROOT / "skyward-runpod" / "src" / "skyward_runpod",
    "skyward_vastai": ROOT / "skyward-vastai" / "src" / "skyward_vastai",
    "skyward_torch": ROOT / "skyward-torch" / "src" / "skyward_torch",
    "skyward_jax": ROOT / "skyward-jax" / "src" / "skyward_jax",
}


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
    for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
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
