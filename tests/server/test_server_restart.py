"""A server that dies: what it held is taken up again at the next start, or ends by itself.

The server is SIGKILLed (no shutdown, no clean-up). Its pools' workers lose their channel and
exit; the pools are in its database. Started again, it adopts the Local and SSH pools (the same
name, the same node folders on the same hosts) and ends a cloud pool's machines through the
provider's sweeper (moto's EC2). Never started again, the SSH host's guardian ends everything the
pool left once the lease lapses (`ttl` seconds).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from server_support import Server, alive, wait_gone
from ssh_hosts import SSHHosts, processes_of, wait_until, workers_of

WHERE = "import os\nprint(os.getpid(), os.getcwd())\n"
#: The pools' lease: short, so that a restart sometimes outlasts it on a 2-core VM and the adoption
#: comes as the node's guardian ends the old lease (the guardian's start then waits for that end,
#: and the adopted pool starts after it: `skyward.guardian.agent._outlast_ending`).
TTL = 2


def ssh_config(hosts: SSHHosts, root: Path) -> None:
    host = hosts.servers[0]
    (root / "skyward.toml").write_text(
        f"[pools.remote]\nttl = {TTL}\n"
        f'[pools.remote.provider]\ntype = "ssh"\nhosts = ["{host.target}"]\n'
        f'key_file = "{hosts.key_file}"\nknown_hosts = "{hosts.known_hosts}"\npython = "{sys.executable}"\n'
    )


def run_where(server: Server, pool: str) -> tuple[int, str]:
    (server.root / "where.py").write_text(WHERE)
    done = server.sky("compute", "run", pool, "where.py")
    assert done.returncode == 0, done.stderr
    pid, folder = done.stdout.split()
    return int(pid), folder


def kill(server: Server) -> None:
    os.kill(server.pid, signal.SIGKILL)
    assert wait_gone(server.pid)


def wait_ready(server: Server, pool: str) -> dict:
    done = server.sky("compute", "get", pool, "--json")
    assert done.returncode == 0, done.stderr
    status, described = server.request("GET", f"/v1/pools/{pool}?wait=120")
    assert status == 200 and described["state"] == "ready", described
    return described


def test_a_killed_servers_local_pool_is_adopted_at_the_next_start(fresh: Server) -> None:
    fresh.start()
    assert fresh.sky("compute", "create", "dev", "--provider", "local").returncode == 0
    worker, _ = run_where(fresh, "dev")
    kill(fresh)
    assert wait_gone(worker)  # its channel to the server is gone: the worker exits

    fresh.start()
    restored = fresh.request("GET", "/v1/server")[1]["restored"]
    assert restored == {"adopted": ["dev"], "ended": [], "failed": []}
    wait_ready(fresh, "dev")
    again, _ = run_where(fresh, "dev")
    assert again != worker and alive(again)


def test_a_killed_servers_ssh_pool_is_adopted_on_the_same_host(fresh: Server, ssh_host: SSHHosts) -> None:
    home = ssh_host.servers[0].home
    ssh_config(ssh_host, fresh.root)
    fresh.start()
    created = fresh.sky("compute", "create", "remote")
    assert created.returncode == 0, created.stderr
    worker, folder = run_where(fresh, "remote")
    assert folder.startswith(str(home / ".skyward" / "pools"))
    kill(fresh)

    fresh.start()
    assert fresh.request("GET", "/v1/server")[1]["restored"]["adopted"] == ["remote"]
    wait_ready(fresh, "remote")
    again, same_folder = run_where(fresh, "remote")
    assert same_folder == folder and again != worker
    time.sleep(TTL + 2)  # past the old lease: the adopted pool renews it, nothing is ended
    assert run_where(fresh, "remote")[0] == again

    assert fresh.sky("server", "stop").returncode == 0
    assert wait_until(lambda: not workers_of(home), 30)


def test_a_killed_server_not_restarted_leaves_nothing_on_its_ssh_host_after_ttl(
    fresh: Server, ssh_host: SSHHosts
) -> None:
    home = ssh_host.servers[0].home
    ssh_config(ssh_host, fresh.root)
    fresh.start()
    assert fresh.sky("compute", "create", "remote").returncode == 0
    run_where(fresh, "remote")
    assert processes_of(home)
    kill(fresh)
    assert wait_until(lambda: not processes_of(home), TTL + 30)
    described = json.loads((fresh.home / "server" / "server.json").read_text())
    assert described["pid"] == fresh.pid  # nothing cleaned up after the server: it was killed


def test_a_killed_servers_cloud_pool_is_ended_at_the_next_start(tmp_path: Path) -> None:
    """A cloud pool is not reconnected to: its machines, found by their tag, are ended (moto's EC2).

    The dead server's database is written as the server writes it, and the machines as the pool
    left them; someone else's machine on the account stays untouched."""
    import boto3
    from moto_support import moto_server

    from skyward.server.store import Store

    credentials = {"AWS_ACCESS_KEY_ID": "AKIASKYWARDTESTING01", "AWS_SECRET_ACCESS_KEY": "skyward-test",
                   "AWS_DEFAULT_REGION": "us-east-1"}
    with moto_server() as url:
        ec2 = boto3.client("ec2", endpoint_url=url, region_name="us-east-1",
                           aws_access_key_id="AKIASKYWARDTESTING01", aws_secret_access_key="x")
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]

        def machine(tags: dict[str, str]) -> str:
            spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
            made = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType="t3.micro",
                                     TagSpecifications=spec)
            return str(made["Instances"][0]["InstanceId"])

        ours = machine({"skyward:pool": "gpu", "skyward:node": "0", "skyward:expires": "2099-01-01T00:00:00Z",
                        "Name": "skyward-gpu-node-0"})
        theirs = machine({"Name": "skyward-gpu-node-1"})
        server = Server(tmp_path)
        server.env.update(credentials, AWS_ENDPOINT_URL=url, AWS_EC2_METADATA_DISABLED="true")
        (server.home / "server").mkdir(parents=True)
        store = Store(server.home / "server" / "pools.db")
        store.put_pool("gpu", {"provider": {"type": "aws", "region": "us-east-1"}}, "ready")
        store.close()
        try:
            server.start()
            restored = server.request("GET", "/v1/server")[1]["restored"]
            assert restored == {"adopted": [], "ended": ["gpu"], "failed": []}
            assert server.request("GET", "/v1/pools")[1]["pools"] == []

            def state(instance: str) -> str:
                rows = ec2.describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"]
                return str(rows[0]["State"]["Name"])

            assert state(ours) in ("shutting-down", "terminated")
            assert state(theirs) == "running"
        finally:
            server.close()

