#!/usr/bin/env bash
# Install Skyward and run the examples on the Local provider (no cloud account needed).
# numpy and joblib are what the README's snippets and the examples use beyond Skyward itself.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e ./skyward-core numpy joblib
python3 examples/run_all.py
