"""The docs site builds with warnings as errors, and what its pages show runs as they say.

`mkdocs build --strict` fails on a broken link or anchor, a page left out of the nav, and an API
page whose module mkdocstrings cannot load, so this one build checks all of them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def blocks(page: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (DOCS / page).read_text(), re.S)


def build(site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # mkdocs-material's banner, not a warning
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env=env,
    )


def test_docs_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    result = build(tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "WARNING" not in output, output
    for page in DOCS.glob("*.md"):  # every page of docs/ is a page of the site
        assert (tmp_path / "site" / ("" if page.stem == "index" else page.stem) / "index.html").is_file()
    # API pages are generated from docstrings: the docstring of Pool.run is on the Pools page.
    pool_page = (tmp_path / "site" / "api" / "pool" / "index.html").read_text()
    assert 'id="skyward.client.pool.Pool.run"' in pool_page
    assert "AWS" in (tmp_path / "site" / "api" / "providers" / "index.html").read_text()


def test_docs_site_build_fails_on_a_broken_link(tmp_path: Path) -> None:
    """The build above is a real check: the same command fails when a page links nowhere."""
    docs = tmp_path / "repo"
    docs.mkdir()
    (docs / "docs").mkdir()
    (docs / "docs" / "index.md").write_text("# Home\n\nSee [the missing page](missing.md).\n")
    config = (ROOT / "mkdocs.yml").read_text()
    config = config[: config.index("\nnav:")] + "\nnav:\n  - Home: index.md\n"
    config = re.sub(r"          paths:\n(?:            - .*\n)+", "          paths: []\n", config)
    (docs / "mkdocs.yml").write_text(config)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=docs, capture_output=True, text=True, timeout=120, env=env,
    )
    assert result.returncode != 0
    assert "missing.md" in result.stdout + result.stderr


def test_skyward_toml_example_builds_the_pools_the_page_says(tmp_path: Path) -> None:
    (toml,) = blocks("configuration.md", "toml")
    (tmp_path / "skyward.toml").write_text(toml)
    same_as = next(b for b in blocks("configuration.md", "python") if b.lstrip().startswith("sky.Compute("))
    code = (
        "import skyward as sky\n"
        "from skyward.config import load_config\n"
        "from skyward.resolve import resolve_compute_args\n"
        "config = load_config()\n"
        "print(sorted(config.pool_names))\n"
        "for name in config.pool_names:\n"
        "    config.pool(name)\n"
        f"(spec,), options = {same_as.strip().replace('sky.Compute(', 'resolve_compute_args(', 1)}\n"
        "print((spec, options) == config.pool('train'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if k != "SKYWARD_CONFIG"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["['cpu', 'local', 'train']", "True"]


def test_a_print_in_a_task_is_not_shown_when_the_console_is_off() -> None:
    """docs/console.md: with console=False a task's print reaches a `sky.Log` handler, not the terminal."""
    (snippet,) = [b for b in blocks("console.md", "python") if "console=False" in b and "sky.Log" in b]
    off = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert off.returncode == 0, off.stderr
    assert off.stdout.splitlines() == ["['[node 0] hello from the node']"]
    assert "hello from the node" not in off.stderr
    on = subprocess.run(
        [sys.executable, "-c", snippet.replace("console=False", 'console="minimal"')],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert "[node 0] hello from the node" in on.stderr.splitlines()


def runnable_blocks() -> list[tuple[str, str]]:
    """Self-contained Local examples of the guide pages: they import skyward and open a Local pool."""
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for index, block in enumerate(blocks(page.name, "python")):
            if "import skyward as sky" in block and "sky.Compute(provider=sky.Local()" in block:
                found.append((f"{page.name}#{index}", block))
    return found


@pytest.mark.parametrize(("where", "code"), runnable_blocks(), ids=[w for w, _ in runnable_blocks()])
def test_local_examples_in_the_docs_run(where: str, code: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, f"{where}:\n{result.stderr}"
    # `print(x)   # [1, 2]`: the list a comment promises is what the line prints.
    for expected in re.findall(r"print\(.*\)\s+# (\[.*\])", code):
        assert expected in result.stdout.splitlines() or expected in result.stdout, (where, result.stdout)
