"""Remote tracebacks that name the user's own files and lines.

A task's traceback is formatted on the worker, where a frame's file may not be what the user knows
or may not be readable at all:

- a function shipped by value (defined in the script being run, a notebook cell, a closure) runs
  code compiled from a file the node does not have (`skyward.pickling` keeps its file name);
- a module of an `Image(includes=[...])` package runs from the node's copy under
  `$SKYWARD_WORKDIR/includes`, not from the user's folder.

So each side does its half. The worker shows an includes file under the path it has on the client
(`format_exception`, with the mapping the client sent in the handshake, see `include_sources`), and
the client fills in the source line of every frame the worker could not read from its own
`linecache` (`with_source_lines`), which knows the user's files and the notebook's cells (IPython
registers each cell there under its `<ipython-input-...>` or `/tmp/ipykernel_.../....py` name).
"""

from __future__ import annotations

import linecache
import os
import re
import traceback
from collections.abc import Iterable
from pathlib import Path

#: One frame's heading in `traceback`'s text; `margin` is what an exception group puts before it.
_FRAME = re.compile(r'^(?P<margin>[ |]*?)  File "(?P<file>[^"\n]+)", line (?P<line>\d+), in .*$')

#: Worker side: the node's includes folder and {top-level name in it: the client's path for it}.
_includes_dir: str | None = None
_include_sources: dict[str, str] = {}


def include_sources(includes: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """Client side: (name at the top of a node's includes folder, the client's path it came from).

    Mirrors `skyward.bootstrap.prepare.stage_includes`' layout: a `.py` file and a package keep
    their name; the entries of a plain source folder land at the top. A later include wins a name
    two share, as its copy does there.
    """
    sources: dict[str, str] = {}
    for item in includes:
        path = Path(item).expanduser().resolve()
        if path.is_dir() and not (path / "__init__.py").exists():
            sources.update({child.name: str(child) for child in path.iterdir()})
        else:
            sources[path.name] = str(path)
    return tuple(sources.items())


def set_include_sources(workdir: str | None, sources: Iterable[tuple[str, str]]) -> None:
    """Worker side: where this node keeps its includes (`<workdir>/includes`, the bootstrap's
    layout; None where includes are not copied, as on `sky.Local()`) and where they came from."""
    global _includes_dir, _include_sources
    _includes_dir = os.path.join(workdir, "includes") if workdir else None
    _include_sources = dict(sources)


def client_path(path: str) -> str:
    """Worker side: `path` as the client knows it (itself unless it is a copied include)."""
    if _includes_dir is None or not path.startswith(_includes_dir + os.sep):
        return path
    relative = path[len(_includes_dir) + 1 :]
    top, sep, rest = relative.partition(os.sep)
    source = _include_sources.get(top)
    if source is None:
        return path
    return os.path.join(source, rest) if sep else source


def format_exception(exc: BaseException) -> str:
    """Worker side: `traceback.format_exception`, with includes named by their client paths."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if _includes_dir is None or not _include_sources:
        return text
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        match = _FRAME.match(line)
        if match is not None:
            shown = client_path(match["file"])
            if shown != match["file"]:
                lines[i] = line[: match.start("file")] + shown + line[match.end("file") :]
    return "".join(lines)


def with_source_lines(text: str) -> str:
    """Client side: `text` with the source line of each frame the worker could not show filled in
    from this process's `linecache`, where it has that file or notebook cell."""
    lines = text.splitlines()
    shown: list[str] = []
    for i, line in enumerate(lines):
        shown.append(line)
        match = _FRAME.match(line)
        if match is None:
            continue
        indent = match["margin"] + "    "
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if following.startswith(indent) and _FRAME.match(following) is None:
            continue  # the worker showed this frame's line itself
        filename = match["file"]
        linecache.checkcache(filename)  # a file edited since: its lines as they are now
        source = linecache.getline(filename, int(match["line"])).strip()
        if source:
            shown.append(indent + source)
    return "\n".join(shown) + ("\n" if text.endswith("\n") else "")
