"""What a node does when skyward cannot import in its warm environment: take the ready mark away.

The bootstrap marks a warm environment complete once its installs succeeded
(`skyward.bootstrap.environments`), and the worker's own start is the import check, which saves a
separate `python -c "import skyward.worker"`. A worker whose imports fail there runs this first:
the environment is then not reused as complete, and the next pool builds it again. Only the
standard library here: it runs when skyward's own dependencies cannot be imported.
"""

from __future__ import annotations

import contextlib
import os
import sys

#: Set on nodes by the bootstrap's `env.sh`: the folder of the warm environment the venv lives in.
ENVIRONMENT_VARIABLE = "SKYWARD_ENVIRONMENT"
#: The mark of a complete environment (`skyward.bootstrap.environments.READY`).
READY = ".ready"


def unmark_environment() -> None:
    """Remove the ready mark of the environment this process runs in, if it runs in one."""
    environment = os.environ.get(ENVIRONMENT_VARIABLE)
    if not environment:
        return
    with contextlib.suppress(OSError):
        os.remove(os.path.join(environment, READY))
    print(
        f"skyward: skyward cannot be imported in the environment {environment}; it is marked "
        "incomplete, and the next pool builds it again",
        file=sys.stderr,
    )
