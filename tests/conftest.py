"""What every test directory shares.

Test modules are not importable on a worker (a node's venv, a host's home folder), so each one is
shipped by value, as a user's script is: a `@sky.function` defined in a test travels whole.

The suite runs in parallel (pytest-xdist, scripts/test.sh). Each xdist worker is a process of its
own with its own `$SKYWARD_HOME` (set here, before any test runs), its own loopback /16 for SSH
hosts and fake machines (tests/ssh/ssh_hosts.py `loopback`), and its own session fixtures (moto,
sshd hosts) and tmp folders, so no two workers share a port, a file or a pool key. Its cloud fakes'
machines boot with the environments its earlier machines built (`_machine_environments`), as a
machine that ran the image before would; each cloud's contract tests build theirs from nothing.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import cloudpickle
import pytest


def pytest_configure(config: pytest.Config) -> None:
    """An xdist worker's own `$SKYWARD_HOME`: pool keys, logs and the server's folder are per
    user, and two workers sharing one would see each other's pools. It lives beside the user's
    (not in a tmp folder). Its cache (`$SKYWARD_CACHE_DIR`: the assembled wheels, the workers'
    bytecode) is the worker's too, and stays when a test gives itself a `$SKYWARD_HOME` of its
    own: the wheels are built once per worker and machine, not once per pool. A test of the cache
    itself sets its own."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    base = os.environ.get("SKYWARD_HOME") or str(Path("~/.skyward").expanduser())
    home = f"{base}-test-{worker}"
    os.environ["SKYWARD_CACHE_DIR"] = home
    if worker != "main":
        os.environ["SKYWARD_HOME"] = home


#: tests/ssh/ssh_hosts.py `SHELF_VARIABLE`: where the cloud fakes' machines share their environments.
MACHINE_ENVIRONMENTS = "SKYWARD_TEST_MACHINE_ENVIRONMENTS"


@pytest.fixture(autouse=True)
def _machine_environments(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """The cloud fakes' machines of this worker start with the environments its earlier machines
    built (tests/ssh/ssh_hosts.py `stock_environments`), unless the test is marked `cold_machines`."""
    before = os.environ.pop(MACHINE_ENVIRONMENTS, None)
    if request.node.get_closest_marker("cold_machines") is None:
        os.environ[MACHINE_ENVIRONMENTS] = str(tmp_path_factory.getbasetemp() / "machine-environments")
    yield
    os.environ.pop(MACHINE_ENVIRONMENTS, None)
    if before is not None:
        os.environ[MACHINE_ENVIRONMENTS] = before


@pytest.fixture(autouse=True, scope="module")
def _ship_test_module_by_value(request: pytest.FixtureRequest) -> Iterator[None]:
    module = request.module
    cloudpickle.register_pickle_by_value(module)
    yield
    cloudpickle.unregister_pickle_by_value(module)


def make_venv_seeing_this_python(path: Path) -> Path:
    """A new venv at `path` that sees every package this interpreter sees; returns its python.

    `python -m venv --system-site-packages` shows the *base* interpreter's packages: when the suite
    runs in a venv, that leaves out the venv's own (the test requirements, the editable checkout).
    A .pth file in the new venv adds them as site dirs, after the new venv's own site-packages, so
    what a test installs into the new venv wins over what it sees.

    The venv gets no pip of its own (`--without-pip`: ensurepip takes seconds per venv): the pip it
    sees, run by the venv's python (`python -m pip`), installs into the venv.
    """
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(path)], check=True
    )
    python = path / "bin" / "python"
    if sys.prefix != sys.base_prefix:
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        mine = [d for d in site.getsitepackages([sys.prefix]) if os.path.isdir(d)]
        lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in mine)
        (Path(purelib) / "_this_python.pth").write_text(lines)
    return python


@pytest.fixture(scope="session")
def venv_seeing_this_python() -> Callable[[Path], Path]:
    """`make_venv_seeing_this_python`, for tests that install into a venv of their own."""
    return make_venv_seeing_this_python
