"""The README's Python blocks run as written, its two set-up commands exist and say what they install,
and every link and file path the README and docs/ cite exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, re.S)


def test_every_readme_python_block_runs() -> None:
    for block in python_blocks():
        quiet = "sky.Compute(provider=sky.Local(), nodes=2, console=False)"
        script = block.replace("sky.Compute(provider=sky.Local(), nodes=2)", quiet)
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT
        )
        assert result.returncode == 0, result.stderr


def test_quickstart_prints_what_its_comments_promise() -> None:
    quickstart = python_blocks()[1]
    out = subprocess.run(
        [sys.executable, "-c", quickstart], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    first, second, third = out.strip().splitlines()
    nodes = "['node 0 of 4', 'node 1 of 4', 'node 2 of 4', 'node 3 of 4']"
    assert first.startswith(f"20 {nodes} 2 4 20 [2, 3, 4] [2, 4]")
    assert second == "499500 [0, 1, 4, 9, 16]"
    assert third == "4"


def test_readme_names_the_two_setup_scripts_and_they_exist() -> None:
    commands = re.findall(r"```bash\n(.*?)```", README, re.S)
    assert [c.strip() for c in commands[:2]] == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    assert (ROOT / "scripts/demo.sh").exists() and (ROOT / "scripts/test.sh").exists()
    assert "scripts/test.sh" in (ROOT / ".ci/run").read_text()


# --- links and cited paths: README.md and every page of docs/ -------------------------------------

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: Where a short path such as `client/pool.py` or `skyward/wire.py` is looked up besides the page's
#: own folder and the repository root: each distribution's source tree and its package.
SOURCE_ROOTS = [
    p for d in sorted(ROOT.glob("skyward-*/src")) for p in (d, *sorted(d.iterdir())) if p.is_dir()
]
CODE_PATH = re.compile(r"`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+/?)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
SECTION = re.compile(r"docs/([\w-]+\.md)`?,\s*\"([^\"]+)\"")


def without_code_blocks(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def slug(heading: str) -> str:
    """The anchor of a heading, as GitHub and mkdocs make it."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def headings(page: Path) -> list[str]:
    return [m[1].strip() for m in re.finditer(r"^#{1,6} (.+)$", without_code_blocks(page.read_text()), re.M)]


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_relative_link_reaches_a_file_and_an_anchor_that_exist(page: Path) -> None:
    for target in LINK.findall(without_code_blocks(page.read_text())):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page_id(page)} links to {target}, which does not exist"
        if anchor and linked.suffix == ".md":
            anchors = [slug(h) for h in headings(linked)]
            assert anchor in anchors, f"{page_id(page)} links to {target}: no such heading in {linked.name}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_file_path_a_page_cites_exists(page: Path) -> None:
    """`benchmarks/run.py`, `client/pool.py`: in the repository, beside the page, or in a package."""
    top_level = {p.name for p in ROOT.iterdir() if p.is_dir()}
    for cited in CODE_PATH.findall(without_code_blocks(page.read_text())):
        is_file = re.search(r"\.[a-z]{1,5}$", cited) is not None  # not `22/tcp`, not `127.0.0.0/16`
        if not is_file and cited.split("/")[0] not in top_level:
            continue
        places = [ROOT, page.parent, *SOURCE_ROOTS]
        assert any((place / cited).exists() for place in places), f"{page_id(page)} cites `{cited}`"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_cited_docs_section_is_a_heading_of_that_page(page: Path) -> None:
    """`docs/architecture.md, "Fast paths, and why each exists"` names a heading that is there."""
    for name, section in SECTION.findall(page.read_text()):
        cited = ROOT / "docs" / name
        assert cited.exists(), f"{page_id(page)} cites docs/{name}"
        assert section in headings(cited), f"{page_id(page)} cites docs/{name}, {section!r}: no such heading"


def test_set_up_section_has_exactly_the_two_commands() -> None:
    setup = README[README.index("## Set up") : README.index("\n## ", README.index("## Set up") + 1)]
    commands = [c.strip() for c in re.findall(r"```bash\n(.*?)```", setup, re.S)]
    assert commands == ["bash scripts/demo.sh", "bash scripts/test.sh"]


def test_set_up_section_says_what_the_test_command_installs_beyond_pip() -> None:
    setup = README[README.index("## Set up") : README.index("\n## ", README.index("## Set up") + 1)]
    test_script = (ROOT / "scripts/test.sh").read_text()
    demo_script = (ROOT / "scripts/demo.sh").read_text()
    for package in ("openssh-server",):
        assert package in test_script and package in setup
    assert "apt-get" in test_script and "apt-get" in setup
    for package in ("torch", "jax"):
        assert package in (ROOT / "requirements-test.txt").read_text() and package in setup
    assert "joblib" in demo_script and "joblib" in setup


def test_demo_installs_what_the_readme_snippets_import() -> None:
    """Every module a README snippet imports is Skyward, the standard library, or installed by demo.sh."""
    demo = (ROOT / "scripts/demo.sh").read_text()
    for block in python_blocks():
        for module in re.findall(r"^(?:from|import) (\w+)", block, re.M):
            if module in sys.stdlib_module_names or module == "skyward":
                continue
            assert re.search(rf"\b{module}\b", demo), f"a README snippet imports {module}; demo.sh lacks it"
