"""`python -m skyward.server`: the pool server in this process (what `sky server start` daemonizes)."""

from __future__ import annotations

import argparse

from skyward.client.server_home import DEFAULT_HOST
from skyward.server.daemon import serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m skyward.server", description=__doc__)
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--idle-timeout", type=float, default=None)
    args = parser.parse_args(argv)
    serve(args.host, args.port, args.idle_timeout)


if __name__ == "__main__":
    main()
