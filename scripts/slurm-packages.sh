#!/usr/bin/env bash
# Install what tests/slurm needs: Slurm's daemons and commands, and munge (its authentication).
# The tests start their own cluster in a temporary folder (tests/slurm/slurm_cluster.py); nothing
# here is configured or started.
set -euo pipefail
if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
  && command -v sbatch >/dev/null; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
$sudo apt-get update
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm munge
