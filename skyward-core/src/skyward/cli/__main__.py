"""`python -m skyward.cli ...`: the `sky` command where the console script is not on PATH."""

from skyward.cli import main

if __name__ == "__main__":
    main(prog_name="sky")
