"""`python -m skyward.server`: the pool server in this process (what `sky server start` daemonizes)."""

from __future__ import annotations

import argparse

from skyward.client.server_home import DEFAULT_HOST
from skyward.server.daemon import EXPOSE_ENV, PLAIN_HTTP, TLS_CERT_ENV, TLS_KEY_ENV, serve
from skyward.server.limits import MAX_CALLS_ENV


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m skyward.server", description=__doc__)
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--idle-timeout", type=float, default=None)
    parser.add_argument("--tls-cert", default=None,
                        help=f"PEM certificate to serve HTTPS (else ${TLS_CERT_ENV})")
    parser.add_argument("--tls-key", default=None, help=f"its PEM key (else ${TLS_KEY_ENV})")
    parser.add_argument("--expose", default=None, metavar=PLAIN_HTTP,
                        help=f"'{PLAIN_HTTP}': serve a non-loopback --host without TLS (else ${EXPOSE_ENV})")
    parser.add_argument("--max-calls", type=int, default=None,
                        help=f"calls and runs in flight before 429 (else ${MAX_CALLS_ENV}, else 64)")
    args = parser.parse_args(argv)
    serve(args.host, args.port, args.idle_timeout, tls_cert=args.tls_cert, tls_key=args.tls_key,
          expose=args.expose, max_calls=args.max_calls)


if __name__ == "__main__":
    main()
