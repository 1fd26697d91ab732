"""Run every example in order, each in its own Python process; stop loudly at the first failure.

python examples/run_all.py
"""

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

EXAMPLES = ["hello.py", "parallel.py", "broadcast.py", "sharding.py", "streaming.py", "joblib_parallel.py",
            "shared_state.py"]


def main() -> int:
    for name in EXAMPLES:
        print(f"\n=== {name} " + "=" * (60 - len(name)), flush=True)
        start = time.monotonic()
        result = subprocess.run([sys.executable, str(HERE / name)], check=False)
        took = time.monotonic() - start
        if result.returncode != 0:
            print(
                f"\nFAILED: {name} exited with status {result.returncode} after {took:.1f}s", file=sys.stderr
            )
            return result.returncode or 1
        print(f"--- {name} ok ({took:.1f}s)", flush=True)
    print(f"\nall {len(EXAMPLES)} examples passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
