"""`python -m skyward._keeper`: a worker's keeper (`skyward.transport.keeper`), started outside the
`skyward.transport` package so that its import failure is an environment's import check too.

On an SSH node the keeper is the first of skyward to import in the venv, and it imports little
(the standard library and the keeper's stream scanner: it starts on every pool start's critical
path, before the worker). When even that fails in a warm environment, its ready mark goes before
the error reaches the client (`skyward._environment_mark`), as the worker's own start does for
everything else the environment must hold (lz4, cloudpickle...); otherwise the broken environment
would be reused as complete by the next pool.
"""

try:
    from skyward.transport.keeper import main
except Exception:  # an import error (an interrupt says nothing of the environment)
    from skyward._environment_mark import unmark_environment

    unmark_environment()
    raise

if __name__ == "__main__":
    import sys

    sys.exit(main())
