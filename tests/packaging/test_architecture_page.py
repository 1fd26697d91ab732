"""docs/architecture.md draws the client package's imports and the wire's header as the code has them.

The diagram under "The client package" has a line `module.py ──► a, b, c` for every module of
`skyward/client/` that imports others of the package at runtime, naming exactly those (imports under
`if TYPE_CHECKING:` never run and are left out); the source is read with `ast`, nothing is imported.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "skyward-core" / "src" / "skyward" / "client"
PAGE = (ROOT / "docs" / "architecture.md").read_text()


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and getattr(test, "id", getattr(test, "attr", "")) == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def client_imports() -> dict[str, set[str]]:
    """Each client module -> the client modules it imports at runtime (itself left out)."""
    names = {p.stem for p in CLIENT.glob("*.py") if p.stem != "__init__"}
    graph = {}
    for path in sorted(CLIENT.glob("*.py")):
        found: set[str] = set()
        for node in _runtime_nodes(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "skyward.client":
                found |= {alias.name for alias in node.names if alias.name in names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("skyward.client."):
                found.add(node.module.split(".")[2])
            elif isinstance(node, ast.Import):
                found |= {a.name.split(".")[2] for a in node.names if a.name.startswith("skyward.client.")}
        found.discard(path.stem)
        if found:
            graph[path.stem] = found
    return graph


def drawn_imports() -> dict[str, set[str]]:
    section = PAGE.split("## The client package", 1)[1].split("\n## ", 1)[0]
    (diagram,) = re.findall(r"```\n(.*?)```", section, re.S)
    drawn = {}
    for line in diagram.splitlines():
        module, _, targets = line.partition("──►")
        drawn[module.strip().removesuffix(".py")] = {t.strip() for t in targets.split(",")}
    return drawn


def test_the_client_diagram_draws_every_runtime_import_between_client_modules_and_no_other() -> None:
    assert drawn_imports() == client_imports()


def test_the_wire_section_gives_the_frame_headers_real_size_and_format() -> None:
    from skyward.wire import HEADER

    section = PAGE.split("## The wire", 1)[1].split("\n## ", 1)[0]
    assert f"a {HEADER.size}-byte header (`{HEADER.format}`" in section
