#!/usr/bin/env bash
# Install everything the test suite needs on a fresh machine, then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh -r requirements-test.txt
python3 -m pytest tests "$@"
