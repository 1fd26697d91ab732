"""`python -m skyward.worker`: the worker's start, which is also the bootstrap's import check.

The bootstrap runs no `python -c "import skyward.worker"` before the worker starts (a second
interpreter start on the critical path of every cold pool): the worker's own imports are the
check, and their traceback reaches the client as the node's start error. When they fail in a warm
environment, its ready mark goes first (`skyward._environment_mark`).
"""

try:
    from skyward.worker.main import main
except Exception:  # an import error (an interrupt says nothing of the environment)
    from skyward._environment_mark import unmark_environment

    unmark_environment()
    raise

if __name__ == "__main__":
    main()
