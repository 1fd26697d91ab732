"""`pip install skyward-core skyward-verda` (or skyward-novita) alone gives a working `sky.Verda`.

Both wheels are built as a release builds them (once for the run: conftest) and installed, without
the checkout, into a fresh venv that sees this interpreter's third-party packages (aiohttp,
asyncssh...): the provider resolves through its entry point, and with no credentials it fails naming
the variables, before any request. uv installs them (a pip run costs a second of CPU, uv a fifth):
a wheel's install is the same whoever unpacks it, and `test_distributions` installs core with pip.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

CODE = """
import skyward as sky
cls = getattr(sky, {public!r})
try:
    cls().create()
except sky.ConfigurationError as error:
    print(cls.__module__, "|", error)
"""


@pytest.mark.parametrize(
    ("folder", "public", "says"),
    [
        ("skyward-verda", "Verda", "VERDA_CLIENT_SECRET"),
        ("skyward-novita", "Novita", "NOVITA_API_KEY"),
        ("skyward-vultr", "Vultr", "VULTR_API_KEY"),
        ("skyward-lambda", "LambdaCloud", "LAMBDA_API_KEY"),
        ("skyward-gcp", "GCP", "GOOGLE_APPLICATION_CREDENTIALS"),
        ("skyward-massedcompute", "MassedCompute", "MASSED_API_KEY"),
        ("skyward-tensordock", "TensorDock", "TENSORDOCK_API_KEY"),
        ("skyward-jarvislabs", "JarvisLabs", "JL_API_KEY"),
        ("skyward-hyperstack", "Hyperstack", "HYPERSTACK_API_KEY"),
        ("skyward-scaleway", "Scaleway", "SCW_SECRET_KEY"),
    ],
)
def test_core_and_one_cloud_install_alone_and_the_cloud_resolves(
    folder: str, public: str, says: str, tmp_path: Path, release_wheels: dict[str, Path],
    venv_seeing_this_python: Callable[[Path], Path],
) -> None:
    python = venv_seeing_this_python(tmp_path / "venv")
    built = [str(release_wheels[source]) for source in ("skyward-core", folder)]
    install = ["uv", "pip", "install", "--quiet", "--offline", "--no-deps", "--python", str(python)]
    subprocess.run([*install, *built], check=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([str(python), "-c", CODE.format(public=public)], check=True, capture_output=True,
                         text=True, cwd=tmp_path, env=env).stdout
    module, message = out.split("|", 1)
    assert module.strip() == f"{folder.replace('-', '_')}.config"
    assert says in message
