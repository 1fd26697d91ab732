"""A client killed outright: the node's guardian stops the volume's rclone with the pool's other
processes, runs the pool's exit scripts (unmount, upload a read-write copy) and deletes its keys."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from ssh_hosts import processes_of, wait_until
from storage_support import ACCESS_KEY, SECRET_KEY

TTL = 2

CLIENT = """
import sys, time
import skyward as sky

provider = sky.SSH(hosts=[{target!r}], key_file={key!r}, known_hosts={known!r}, python=sys.executable)
store = sky.storage.Storage({url!r}, {access!r}, {secret!r}, path_style=True)
volume = sky.Volume(bucket={bucket!r}, mount={mount!r}, storage=store, read_only={read_only}, mode={mode!r})
image = sky.Image(env={env!r})

@sky.function
def hold() -> None:
    if not {read_only}:
        open({mount!r} + "/result.txt", "w").write("made before the client died")
    open({started!r}, "w").write("running")
    time.sleep(600)

with sky.Compute(provider=provider, volumes=[volume], image=image, ttl={ttl}, console=False,
                 logging=False) as pool:
    hold() >> pool
"""


def start_client(ssh_hosts, s3_url: str, bucket: str, folder: Path, **volume: object):
    """A client process that starts a pool with one volume on the host and holds it in a task."""
    server = ssh_hosts.servers[0]
    script = folder / "client.py"
    settings = {"read_only": True, "mode": "mount", "env": {}, **volume}
    script.write_text(CLIENT.format(
        target=server.target, key=str(ssh_hosts.key_file), known=str(ssh_hosts.known_hosts), url=s3_url,
        access=ACCESS_KEY, secret=SECRET_KEY, bucket=bucket, mount=str(folder / "data"),
        started=str(folder / "started"), ttl=TTL, **settings,
    ))
    with open(folder / "client.log", "wb") as log:
        return subprocess.Popen([sys.executable, str(script)], stdout=log, stderr=log, cwd=folder)


def keys_on(home: Path) -> list[Path]:
    return list((home / ".skyward" / "pools").glob("*/node-*/volumes/rclone.conf"))


def test_a_client_killed_leaves_no_mount_nor_key_on_its_host(
    ssh_hosts, s3_url: str, bucket: str, tmp_path: Path
) -> None:
    server, mount = ssh_hosts.servers[0], tmp_path / "data"
    client = start_client(ssh_hosts, s3_url, bucket, tmp_path)
    try:
        assert wait_until((tmp_path / "started").exists, 120), (tmp_path / "client.log").read_text()
        assert os.path.ismount(mount) and keys_on(server.home)
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    assert wait_until(lambda: not processes_of(server.home), TTL + 30)
    assert wait_until(lambda: str(mount) not in Path("/proc/mounts").read_text(), 5)
    assert keys_on(server.home) == []


def test_a_client_killed_still_uploads_a_read_write_copy(
    ssh_hosts, store, s3_url: str, bucket: str, tmp_path: Path
) -> None:
    server = ssh_hosts.servers[0]
    no_fuse = {"SKYWARD_FUSE_DEVICE": "/none"}
    client = start_client(ssh_hosts, s3_url, bucket, tmp_path, read_only=False, mode="copy", env=no_fuse)
    try:
        assert wait_until((tmp_path / "started").exists, 120), (tmp_path / "client.log").read_text()
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    assert wait_until(lambda: not keys_on(server.home), TTL + 40)
    with store as s3:
        assert s3.ls(bucket) == ["result.txt"]  # the guardian ran the exit script: the copy went up
