"""A client killed outright (SIGKILL): its Scaleway server terminates itself through the API.

The client is a real process running a pool script against the fake API; the server is a real
sshd. Mid-task, `ttl` seconds after the kill, the node's guardian (`skyward.guardian`) runs the
server's end command: it finds the server by its name and tag with the key its cloud-init kept,
here the guardian's own key (`guardian_secret_key`: an IAM key the machines hold instead of the
pool's), and asks for `terminate`, seen here as the fake's termination. Nothing else ends the
server: the pool never reaches its exit.
"""

from __future__ import annotations

import time
from pathlib import Path

from client_kill import TTL, kill_when, start_client
from fake_scaleway import FakeScaleway
from scaleway_support import ACCESS_KEY, PROJECT, SECRET_KEY
from ssh_hosts import wait_until

#: The key made for the machines alone (in the shape the SDK checks).
GUARDIAN_KEY = "9a9a9a9a-8b8b-4c7c-9d6d-5e5e5e5e5e5e"


def test_a_server_whose_client_was_killed_mid_task_terminates_itself_with_the_guardians_key(
    scaleway_api: FakeScaleway, tmp_path: Path
) -> None:
    scaleway_api.other_keys = {GUARDIAN_KEY}
    provider = (
        f"sky.Scaleway(api_url={scaleway_api.url!r}, ssh_port={scaleway_api.ssh_port}, "
        f"secret_key={SECRET_KEY!r}, access_key={ACCESS_KEY!r}, project_id={PROJECT!r}, "
        f"guardian_secret_key={GUARDIAN_KEY!r}, ip_lookup_url={scaleway_api.echo_url!r}, "
        "ssh_user=getpass.getuser(), python=sys.executable)"
    )
    client = start_client(tmp_path, provider, bootstrap_timeout=300, accelerator="H100")
    killed = kill_when(client, client.started.exists, 120)
    (server,) = scaleway_api.servers
    assert GUARDIAN_KEY not in scaleway_api.tokens_seen, "the pool itself never uses the guardian's key"
    assert wait_until(lambda: server in scaleway_api.terminated, TTL + 30)
    assert time.monotonic() - killed >= TTL / 2, "terminated by the guardian's lapse, not at once"
    assert GUARDIAN_KEY in scaleway_api.tokens_seen
    (volume,) = scaleway_api.volumes.values()
    assert volume["server"] is None, "its boot volume outlives it, detached"
    assert (volume["name"], volume["tags"]) == (scaleway_api.creates[-1]["name"], ["skyward"]), (
        "named and tagged at creation, so sky ls and sky down find it without its server"
    )
    scaleway_api.groups.clear()  # what the killed client's teardown would have removed (`sky down` does too)
    scaleway_api.volumes.clear()
