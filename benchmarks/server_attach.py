"""The pool server's point, timed: a script's first task on a fresh pool, and attached to a server's.

    python benchmarks/server_attach.py [--repeat N] [--json PATH]

Starts a pool server (`sky server start`, in a temporary `$SKYWARD_HOME`, on a free loopback
port), creates a Local pool of 1 there, then `--repeat` times measures, in this process, from
`sky.Compute(...)` to the first no-op result: once on a fresh `sky.Compute(provider=sky.Local())`
(started, then stopped), once on `sky.Compute(name=...)` attached to the server's pool. Prints
the medians; nothing is asserted. The server is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def noop() -> None:
    return None


def sky_command(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "skyward.cli", *args], capture_output=True, text=True,
                          check=False, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"sky {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def first_task(**compute: object) -> float:
    import skyward as sky

    began = time.perf_counter()
    with sky.Compute(**compute) as pool:
        sky.function(noop)() >> pool
        return (time.perf_counter() - began) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", default=None, metavar="PATH")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["SKYWARD_HOME"] = home
        state = json.loads(sky_command("server", "start", "--port", "0", "--json"))
        try:
            sky_command("compute", "create", "bench", "--provider", "local")
            import skyward as sky

            local = {"provider": sky.Local(), "console": False, "logging": False}
            fresh = [first_task(**local) for _ in range(args.repeat)]
            os.environ["SKYWARD_SERVER_URL"] = state["url"]
            attached = [first_task(name="bench") for _ in range(args.repeat)]
        finally:
            sky_command("server", "stop")
    result = {"fresh_ms": statistics.median(fresh), "attached_ms": statistics.median(attached),
              "runs": {"fresh": fresh, "attached": attached}}
    print(f"first task, fresh Local pool:      {result['fresh_ms']:8.1f} ms (median of {args.repeat})")
    print(f"first task, attached to the server: {result['attached_ms']:8.1f} ms (median of {args.repeat})")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(result, file, indent=2)


if __name__ == "__main__":
    main()
