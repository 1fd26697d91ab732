"""`python tests/cli/sky_with_unpublished_provider.py ARGS...`: the `sky` command, with one more provider
Skyward knows (`Nimbus`, from `skyward-nimbus`) whose package is not installed.

Every provider package Skyward knows is installed where the tests run, so this is how they see a
user's machine that lacks one: the same command, the same registry, one name more in its table.
"""

import runpy
import sys

from skyward.extension import registry

registry.KNOWN_PROVIDER_PACKAGES["Nimbus"] = "skyward-nimbus"
sys.argv[0] = "sky"
runpy.run_module("skyward.cli", run_name="__main__", alter_sys=True)
