"""A distribution whose hooks do not fit Skyward's is named in a warning and skipped: pools that
do not need it still start, and a name it was meant to provide says why it is missing.

Each case is a distribution on `PYTHONPATH` (a module and its `.dist-info`), which
`importlib.metadata` finds exactly as it finds an installed wheel.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_support import distribution, run

POOL = """
import skyward as sky

@sky.function
def ping():
    return "pong"

with sky.Compute(provider=sky.Local(), nodes=1, console=False) as pool:
    print(ping() >> pool)
"""


@pytest.mark.parametrize(
    ("hooks", "why"),
    [
        ("@hookimpl\ndef skyward_plugins(config):\n    return {}\n", "does not match Skyward's hooks"),
        ("@hookimpl\ndef skyward_plugin():\n    return {}\n", "unknown hook 'skyward_plugin'"),
        ("@hookimpl\ndef skyward_plugins():\n    return ['mine']\n", "returned list from skyward_plugins"),
    ],
    ids=["extra-argument", "misspelt-hook", "list-instead-of-dict"],
)
def test_a_distribution_whose_hooks_do_not_fit_is_named_and_other_pools_still_run(
    tmp_path: Path, hooks: str, why: str
) -> None:
    site = distribution(tmp_path, "odd-hooks", hooks)
    result = run(site, POOL)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "pong"
    assert "odd-hooks:odd-hooks" in result.stderr
    assert why in result.stderr


def test_a_known_package_that_fails_to_import_says_why_instead_of_asking_for_an_upgrade(tmp_path: Path) -> None:
    # A copy of skyward-torch's entry point whose module raises on import, ahead of the real one.
    site = distribution(tmp_path, "skyward-torch", "raise ImportError('a simulated bug in the plugin')\n")
    result = run(site, "import skyward as sky\ntry:\n    sky.plugins.torch\nexcept ImportError as e:\n    print(e)")
    assert "could not be loaded" in result.stdout
    assert "a simulated bug in the plugin" in result.stdout
    assert "upgrade" not in result.stdout


def test_a_known_package_left_out_by_the_autoload_switch_says_so(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        "import skyward as sky\ntry:\n    sky.plugins.jax\nexcept ImportError as e:\n    print(e)",
        SKYWARD_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    assert "SKYWARD_DISABLE_PLUGIN_AUTOLOAD" in result.stdout
    assert "upgrade" not in result.stdout
