"""`pip install skyward-core skyward-verda` (or skyward-novita) alone gives a working `sky.Verda`.

Both wheels are built as a release builds them and installed, without the checkout, into a fresh
venv that sees this interpreter's third-party packages (aiohttp, asyncssh...): the provider
resolves through its entry point, and with no credentials it fails naming the variables, before
any request.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

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
    folder: str, public: str, says: str, tmp_path: Path, venv_seeing_this_python: Callable[[Path], Path]
) -> None:
    wheels = tmp_path / "wheels"
    for source in ("skyward-core", folder):
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
             "--wheel-dir", str(wheels), str(ROOT / source)],
            check=True,
        )
    python = venv_seeing_this_python(tmp_path / "venv")
    built = [str(wheel) for wheel in wheels.glob("*.whl")]
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", *built], check=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([str(python), "-c", CODE.format(public=public)], check=True, capture_output=True,
                         text=True, cwd=tmp_path, env=env).stdout
    module, message = out.split("|", 1)
    assert module.strip() == f"{folder.replace('-', '_')}.config"
    assert says in message
