"""A named interpreter that is a virtual environment's (`SSH(python="/opt/venv/bin/python")`).

A host's packages often live in a venv: a Deep Learning AMI's /opt/pytorch, an image's /app/.venv.
uv builds the node venv on that venv's base interpreter, so `--system-site-packages` alone would
show the base's packages and none of the venv's. The bootstrap adds the venv's site-packages, after
the node venv's own. The host venv here is made by the test from this interpreter's base.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bootstrap_support import Events, bootstrap, needs_uv, setup_for, use_shared_uv_cache

import skyward as sky

pytestmark = [needs_uv, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def host_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding a module, a folder added by a .pth file (as an editable install is) and a
    `six` of its own; none of them is in its base interpreter."""
    root = tmp_path_factory.mktemp("host")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    site_packages = Path(purelib)
    (site_packages / "skyward_host_marker.py").write_text("VALUE = 'from the host venv'\n")
    (site_packages / "six.py").write_text("VALUE = 'the host venv six'\n")
    editable = root / "checkout"
    editable.mkdir()
    (editable / "skyward_host_editable.py").write_text("VALUE = 'from a .pth of the host venv'\n")
    (site_packages / "_skyward_host_editable.pth").write_text(f"{editable}\n")
    return python


@pytest.fixture(scope="module")
def node(host_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a node bootstrapped as SSH(python=<the host venv's python>) bootstraps it."""
    with pytest.MonkeyPatch.context() as mp:
        use_shared_uv_cache(mp)
        workdir = tmp_path_factory.mktemp("node") / "n0"
        setup = setup_for(sky.Image(pip=["six"]), emit=Events())
        script = bootstrap(setup, workdir, python=str(host_venv), system_site_packages=True)
    return Path(script.python_bin)


def run(python: Path, code: str) -> Any:
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_node_venv_sees_the_packages_of_a_named_venv_interpreter(node: Path) -> None:
    values = run(node, (
        "import json, skyward_host_marker as m, skyward_host_editable as e; "
        "print(json.dumps([m.VALUE, e.VALUE]))"
    ))
    assert values == ["from the host venv", "from a .pth of the host venv"]


def test_image_pip_installs_on_top_of_the_named_venvs_packages(node: Path) -> None:
    six_file, has_real_api = run(
        node, "import json, six; print(json.dumps([six.__file__, hasattr(six, 'moves')]))"
    )
    assert Path(six_file).is_relative_to(node.parent.parent)  # the node venv's six, not the host's
    assert has_real_api
