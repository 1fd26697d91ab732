"""No secret of a pool's table leaves the server: not in an answer, a log line or a database row.

Pools made from skyward.toml tables carrying an `Image.env` token, a database URL with its
password, an index URL with its password and a provider's API key. Every answer the CLI and the
API give, every file the server writes and every row of `pools.db` (read with sqlite3 directly)
are searched for the values. A restarted server takes the secrets from its own environment, by the
references the database keeps.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections.abc import Iterator

import pytest
from server_support import Server, wait_gone

HF_TOKEN = "hf_SeCrEtToKeN0123456789"
DB_PASSWORD = "Db-PaSsWoRd-987"
DATABASE_URL = f"postgres://app:{DB_PASSWORD}@db.internal:5432/app"
INDEX_PASSWORD = "IdxPaSs-555-xyz"
API_KEY = "rpa_SECRETKEY0000000000AB"
SECRETS = (HF_TOKEN, DB_PASSWORD, INDEX_PASSWORD, API_KEY)

TABLES = f"""
[pools.sec]
provider = "local"
[pools.sec.image]
env = {{ HF_TOKEN = "{HF_TOKEN}", DATABASE_URL = "{DATABASE_URL}", GREETING = "hello" }}

[pools.idx]
provider = "local"
[pools.idx.image]
pip_indexes = [{{ url = "https://user:{INDEX_PASSWORD}@pypi.invalid/simple", packages = ["nothing-here"] }}]

[pools.cloud]
[pools.cloud.provider]
type = "runpod"
api_key = "{API_KEY}"
api_url = "http://127.0.0.1:9/v1"
graphql_url = "http://127.0.0.1:9/graphql"
"""

USES_THEM = f"""
import os, sys
print(os.environ["HF_TOKEN"] == {HF_TOKEN!r}, os.environ["DATABASE_URL"] == {DATABASE_URL!r})
print("token:", os.environ["HF_TOKEN"], "argv:", *sys.argv[1:])
"""


def leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def database_rows(server: Server) -> str:
    """Every row of every table of pools.db, as text."""
    db = sqlite3.connect(server.home / "server" / "pools.db")
    try:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return "\n".join(repr(row) for table in tables for row in db.execute(f"SELECT * FROM {table}"))
    finally:
        db.close()


def server_files(server: Server) -> dict[str, bytes]:
    """What the server wrote: its folder (log, database, state) and Skyward's log files."""
    found = {}
    for folder in (server.home / "server", server.home / "logs"):
        for path in folder.rglob("*") if folder.exists() else ():
            if path.is_file():
                found[str(path)] = path.read_bytes()
    return found


@pytest.fixture
def secret_pools(fresh: Server) -> Iterator[Server]:
    (fresh.root / "skyward.toml").write_text(TABLES)
    fresh.start()
    done = fresh.sky("compute", "create", "sec", "--json")
    assert done.returncode == 0, done.stderr
    yield fresh


def test_no_answer_of_the_server_shows_a_secret_of_a_pool(secret_pools: Server) -> None:
    server = secret_pools
    answers = []
    for name in ("idx", "cloud"):
        created = server.sky("compute", "create", name, "--no-wait", "--json")
        assert created.returncode == 0, created.stderr
        answers.append(created.stdout)
    (server.root / "uses.py").write_text(USES_THEM)
    ran = server.sky("compute", "run", "sec", "uses.py", "--token", HF_TOKEN)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[0] == "True True"  # the pool has the values; the answer hides them
    answers.append(ran.stdout + ran.stderr)
    for command in (("compute", "list", "--json"), ("compute", "get", "sec", "--json"),
                    ("compute", "get", "idx", "--json"), ("compute", "get", "cloud", "--json"),
                    ("compute", "view", "sec", "--once", "--json"), ("log", "sec"), ("log", "cloud")):
        done = server.sky(*command)
        assert done.returncode == 0, (command, done.stderr)
        answers.append(done.stdout + done.stderr)
    for path in ("/v1/pools", "/v1/pools/sec/history", "/v1/pools/sec/runs", "/v1/pools/cloud/history"):
        answers.append(json.dumps(server.request("GET", path)[1]))
    config = json.loads(server.sky("compute", "get", "sec", "--json").stdout)["config"]
    assert config["image"]["env"] == {"HF_TOKEN": "***", "DATABASE_URL": "postgres://app:***@db.internal:5432/app",
                                      "GREETING": "hello"}
    assert [leaks(answer) for answer in answers if leaks(answer)] == []


def test_the_database_keeps_references_not_secrets(secret_pools: Server) -> None:
    server = secret_pools
    assert server.sky("compute", "create", "cloud", "--no-wait").returncode == 0
    (server.root / "uses.py").write_text(USES_THEM)
    assert server.sky("compute", "run", "sec", "uses.py", "--token", HF_TOKEN).returncode == 0
    db = sqlite3.connect(server.home / "server" / "pools.db")
    stored = {name: json.loads(config) for name, config in db.execute("SELECT name, config FROM pools")}
    db.close()
    assert stored["sec"]["image"]["env"] == {
        "HF_TOKEN": {"from_env": "HF_TOKEN"}, "DATABASE_URL": {"from_env": "DATABASE_URL"},
        "GREETING": "hello",
    }
    assert stored["cloud"]["provider"]["api_key"] == {"from_env": "RUNPOD_API_KEY"}
    assert leaks(database_rows(server)) == []


def test_no_file_the_server_writes_holds_a_secret(secret_pools: Server) -> None:
    server = secret_pools
    for name in ("idx", "cloud"):
        assert server.sky("compute", "create", name, "--no-wait").returncode == 0
    (server.root / "uses.py").write_text(USES_THEM)
    assert server.sky("compute", "run", "sec", "uses.py", "--token", HF_TOKEN).returncode == 0
    for name in ("sec", "idx", "cloud"):
        server.request("GET", f"/v1/pools/{name}?wait=60")
        assert server.sky("compute", "delete", name).returncode == 0
    assert server.sky("server", "stop").returncode == 0
    written = server_files(server)
    assert any(path.endswith("server.log") for path in written) and any("pools.db" in p for p in written)
    assert {path: leaks(data.decode(errors="replace")) for path, data in written.items()
            if leaks(data.decode(errors="replace"))} == {}


def kill_and_restart(server: Server, **env: str) -> dict:
    os.kill(server.pid, signal.SIGKILL)
    assert wait_gone(server.pid)
    server.env.update(env)
    server.start()
    return dict(server.request("GET", "/v1/server")[1]["restored"])


def test_a_restarted_server_takes_the_secrets_from_its_environment(secret_pools: Server) -> None:
    server = secret_pools
    restored = kill_and_restart(server, HF_TOKEN=HF_TOKEN, DATABASE_URL=DATABASE_URL)
    assert restored == {"adopted": ["sec"], "ended": [], "failed": []}
    assert server.request("GET", "/v1/pools/sec?wait=60")[1]["state"] == "ready"
    (server.root / "uses.py").write_text(USES_THEM)
    ran = server.sky("compute", "run", "sec", "uses.py")
    assert ran.stdout.splitlines()[0] == "True True", ran.stderr


def test_a_restarted_server_without_the_variables_fails_the_pool_naming_them(secret_pools: Server) -> None:
    server = secret_pools
    restored = kill_and_restart(server)
    assert restored == {"adopted": [], "ended": [], "failed": ["sec"]}
    status, described = server.request("GET", "/v1/pools/sec")
    assert status == 200 and described["state"] == "failed"
    assert "HF_TOKEN" in described["error"] and "DATABASE_URL" in described["error"]
    assert "sky server start" in described["error"]
    assert server.sky("compute", "delete", "sec").returncode == 0


def test_a_table_may_name_a_secret_by_a_variable_of_the_servers_environment(fresh: Server) -> None:
    (fresh.root / "skyward.toml").write_text(
        '[pools.named]\nprovider = "local"\n'
        '[pools.named.image]\nenv = { HF_TOKEN = { from_env = "MY_HF" } }\n'
    )
    fresh.env["MY_HF"] = HF_TOKEN  # the server's environment; the request carries only the name
    fresh.start()
    created = fresh.sky("compute", "create", "named", "--json")
    assert created.returncode == 0, created.stderr
    (fresh.root / "uses.py").write_text(f"import os\nprint(os.environ['HF_TOKEN'] == {HF_TOKEN!r})\n")
    assert fresh.sky("compute", "run", "named", "uses.py").stdout == "True\n"
    assert leaks(created.stdout) == [] and leaks(database_rows(fresh)) == []
