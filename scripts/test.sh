#!/usr/bin/env bash
# Install everything the test suite needs on a fresh machine, then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# The SSH tests run real OpenSSH servers on loopback: install Debian's sshd when it is missing.
if ! command -v sshd >/dev/null 2>&1 && ! /usr/sbin/sshd -V >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y openssh-server
fi
# The volume tests mount buckets with rclone over FUSE (fusermount3): install them when missing.
if ! command -v rclone >/dev/null 2>&1 || ! command -v fusermount3 >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y fuse3 rclone
fi
# The console test draws the rich console in a real terminal: tmux's.
if ! command -v tmux >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y tmux
fi
# tests/slurm starts a real Slurm cluster on loopback: Debian's slurm-wlm and munge.
bash scripts/slurm-packages.sh
# The suite runs in a virtual environment of its own, `.venv` (kept for the next run), unless this
# python3 already is one: torch, jax, moto and the rest stay out of the machine's Python, and the
# suite's thousands of Python processes skip what the machine's site-packages runs at every start
# (a `.pth` file that imports a package costs each start tens of milliseconds).
if ! python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
  if [ ! -x .venv/bin/python3 ]; then
    if ! python3 -m venv .venv 2>/dev/null; then  # Debian's python3 makes venvs with python3-venv
      rm -rf .venv
      if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
      $sudo apt-get update
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv
      python3 -m venv .venv
    fi
  fi
  export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH"
fi
bash scripts/install.sh -r requirements-test.txt
# Parallel, one process per pytest-xdist worker (tests/conftest.py isolates each: its own
# $SKYWARD_HOME, loopback addresses, sshd hosts, moto server, tmp folders). Most tests wait on sshd,
# guardians and worker start-up rather than compute, so more workers than cores pays; worksteal
# evens out the long modules. SKYWARD_TEST_WORKERS=0 runs everything in this one process.
workers="${SKYWARD_TEST_WORKERS:-4}"
# The suite starts thousands of Python processes (workers, keepers, guardians, `sky`, pools' scripts):
# each would compile every skyward module it imports where bytecode may not be written (some
# images set PYTHONDONTWRITEBYTECODE), so the checkout is compiled once here and bytecode is kept.
unset PYTHONDONTWRITEBYTECODE
python3 -m compileall -q -j 0 skyward-*/src tests benchmarks > /dev/null
python3 -m pytest tests -n "$workers" --dist worksteal --durations=25 "$@"
# The fast paths on private internals (skyward/fastpaths) each have a public fallback: the tests that
# drive the client's loop (operators, maps, streams, timeouts, failures) and the SSH path run again
# with every fast path off, so a Python or asyncssh release that removes an internal still finds a
# working Skyward.
core=tests/core
SKYWARD_FAST_PATHS=off python3 -m pytest $core/test_fastpaths.py $core/test_loop_drive.py \
  $core/test_loop_run_here.py $core/test_operators.py $core/test_window.py $core/test_scheduler_pump.py \
  $core/test_streaming.py $core/test_timeouts.py $core/test_node_failure.py $core/test_shutdown.py \
  $core/test_task_waiter.py $core/test_local_provider.py $core/test_reply_lane.py \
  $core/test_uncalled_function_operators.py tests/ssh/test_ssh_pool.py tests/ssh/test_ssh_transport.py \
  tests/ssh/test_ssh_round_trips.py tests/ssh/test_ssh_reconnect.py -n "$workers" --dist worksteal "$@"
