"""Who can reach the server: whoever holds the token runs code in the server process, so a
non-loopback `--host` over plain HTTP is refused unless the user opts in by name, or serves TLS."""

from __future__ import annotations

import json
from pathlib import Path

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


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for the test's server, made with `cryptography` (asyncssh's own dependency)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "skyward-test")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256())
    )
    cert, key_file = folder / "cert.pem", folder / "key.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ))
    return cert, key_file


def test_sky_server_start_takes_the_opt_in_as_a_flag(fresh: Server) -> None:
    fresh.start("--host", "0.0.0.0", "--expose", "plain-http")
    assert fresh.state["url"].startswith("http://0.0.0.0:")
    assert fresh.sky("compute", "list", "--json").returncode == 0


def test_a_network_host_is_served_over_tls(fresh: Server, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    fresh.env.update(SKYWARD_SERVER_TLS_CERT=str(cert), SKYWARD_SERVER_TLS_KEY=str(key))
    fresh.start("--host", "0.0.0.0")
    assert fresh.state["url"].startswith("https://0.0.0.0:")
    listed = fresh.sky("compute", "list", "--json")  # the local client trusts the server's certificate
    assert listed.returncode == 0, listed.stderr
    stopped = fresh.sky("server", "stop")
    assert stopped.returncode == 0, stopped.stderr
