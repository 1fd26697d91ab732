#!/usr/bin/env bash
# Install the six Skyward distributions (editable) with pip. Used by demo.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check \
  -e ./skyward-core -e ./skyward-aws -e ./skyward-runpod -e ./skyward-vastai -e ./skyward-verda -e ./skyward-novita -e ./skyward-vultr -e ./skyward-slurm -e ./skyward-lambda -e ./skyward-gcp -e ./skyward-massedcompute -e ./skyward-tensordock -e ./skyward-jarvislabs -e ./skyward-hyperstack -e ./skyward-scaleway \
  -e ./skyward-torch -e ./skyward-jax "$@"
