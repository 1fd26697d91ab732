"""Fixtures for the provider contract tests: the SSH tests' real OpenSSH servers, reused.

`ssh_hosts` is tests/ssh's own session fixture (two loopback sshd's, checked for leftover
workers at the end), loaded from its conftest rather than written again.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SSH_TESTS = Path(__file__).resolve().parent.parent / "ssh"
sys.path.insert(0, str(SSH_TESTS))


def _ssh_conftest() -> object:
    spec = importlib.util.spec_from_file_location("ssh_tests_conftest", SSH_TESTS / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ssh_hosts = _ssh_conftest().ssh_hosts  # type: ignore[attr-defined]
