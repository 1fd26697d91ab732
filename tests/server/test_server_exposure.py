"""Who can reach the server: whoever holds the token runs code in the server process, so a
non-loopback `--host` over plain HTTP is refused unless the user opts in by name, or serves TLS."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from server_support import Server


def test_a_network_host_over_plain_http_is_refused(fresh: Server) -> None:
    done = fresh.sky("server", "start", "--host", "0.0.0.0", "--port", "0", "--json")
    if done.returncode == 0:
        fresh.state = json.loads(done.stdout)  # started (the old behaviour): stopped at the end
    assert done.returncode == 1
    assert "SKYWARD_SERVER_EXPOSE=plain-http" in done.stderr and "TLS" in done.stderr
    assert "runs code in the server process" in done.stderr
    assert not (fresh.home / "server" / "server.json").exists()


def test_a_network_host_over_plain_http_is_served_when_the_user_opts_in(fresh: Server) -> None:
    fresh.env["SKYWARD_SERVER_EXPOSE"] = "plain-http"
    fresh.start("--host", "0.0.0.0")
    assert fresh.state["url"].startswith("http://0.0.0.0:")
    assert fresh.sky("compute", "list", "--json").returncode == 0


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_a_network_host_is_served_over_tls(fresh: Server, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=skyward-test", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    fresh.env.update(SKYWARD_SERVER_TLS_CERT=str(cert), SKYWARD_SERVER_TLS_KEY=str(key))
    fresh.start("--host", "0.0.0.0")
    assert fresh.state["url"].startswith("https://0.0.0.0:")
    listed = fresh.sky("compute", "list", "--json")  # the local client trusts the server's certificate
    assert listed.returncode == 0, listed.stderr
    stopped = fresh.sky("server", "stop")
    assert stopped.returncode == 0, stopped.stderr
