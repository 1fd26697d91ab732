#!/usr/bin/env bash
# Install Skyward and run the examples on the Local provider (no cloud account needed).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e ./skyward-core numpy
python3 examples/run_all.py
