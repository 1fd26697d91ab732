"""Volumes on real nodes: the SSH fixture's host (sshd on loopback, as root here) mounts buckets of
moto's S3 with rclone and FUSE, or copies them when FUSE is hidden (`SKYWARD_FUSE_DEVICE`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from ssh_hosts import processes_of, ssh_pool
from storage_support import ACCESS_KEY, SECRET_KEY

import skyward as sky

#: What the nodes see as their FUSE device when a test hides it: a path that does not exist.
NO_FUSE = {"SKYWARD_FUSE_DEVICE": "/nonexistent/fuse"}


def _put(store: sky.storage.Storage, bucket: str, files: dict[str, bytes]) -> None:
    with store as s3:
        for key, body in files.items():
            s3._client.put_object(Bucket=bucket, Key=key, Body=body)


def _rclone_running(mount: Path) -> bool:
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return any("rclone" in line and str(mount) in line for line in ps.splitlines())


@sky.function
def look(folder: str) -> dict:
    names = sorted(os.listdir(folder))
    text = {name: Path(folder, name).read_text() for name in names}
    try:
        with open(os.path.join(folder, "written.txt"), "w") as f:
            f.write("no")
        writable = True
    except OSError:
        writable = False
    workdir = os.environ["SKYWARD_WORKDIR"]
    conf = os.path.join(workdir, "volumes", "rclone.conf")
    op_files = sorted(p.name for p in Path(workdir, "bootstrap").glob("*volumes.sh"))
    return {"names": names, "text": text, "writable": writable, "conf_mode": os.stat(conf).st_mode & 0o777,
            "op_files": op_files}


@sky.function
def write(folder: str, name: str, body: str) -> list:
    with open(os.path.join(folder, name), "w") as f:
        f.write(body)
    return sorted(os.listdir(folder))


def test_a_read_only_prefix_mount_is_readable_and_not_writable(
    ssh_hosts, store, bucket, tmp_path: Path
) -> None:
    _put(store, bucket, {"data/a.txt": b"alpha", "data/b.txt": b"beta", "other/c.txt": b"gamma"})
    mount = tmp_path / "data"

    async def secret() -> str:  # resolved on the pool's own event loop, as it starts
        return SECRET_KEY

    keyed = sky.storage.Storage(store.endpoint, ACCESS_KEY, secret, path_style=True)
    volume = sky.Volume(bucket=bucket, mount=str(mount), prefix="data/", storage=keyed)
    with ssh_pool(ssh_hosts, servers=[0], volumes=[volume]) as pool:
        seen = look(str(mount)) >> pool
        assert os.path.ismount(mount)
    assert seen["names"] == ["a.txt", "b.txt"]
    assert seen["text"] == {"a.txt": "alpha", "b.txt": "beta"}
    assert seen["writable"] is False
    assert seen["conf_mode"] == 0o600  # the keys' file is the node user's alone
    assert seen["op_files"] == []  # the op that wrote the keys is gone once it ran
    assert not os.path.ismount(mount)  # unmounted at exit
    assert not _rclone_running(mount)
    with store as s3:
        assert "data/written.txt" not in s3.ls(bucket)


def test_a_read_write_mount_puts_what_tasks_write_in_the_bucket(
    ssh_hosts, store, bucket, tmp_path: Path
) -> None:
    mount = tmp_path / "ckpt"
    volume = sky.Volume(bucket=bucket, mount=str(mount), prefix="runs/1", read_only=False, storage=store)
    events: list[sky.Event] = []
    with ssh_pool(ssh_hosts, servers=[0], volumes=[volume], on_event=events.append) as pool:
        listed = write(str(mount), "model.pt", "weights") >> pool
    assert listed == ["model.pt"]
    with store as s3:
        assert s3.ls(bucket) == ["runs/1/model.pt"]
        got = s3.download(bucket, "runs/1/model.pt", tmp_path / "model.pt").read_text()
    assert got == "weights"
    assert not os.path.ismount(mount)
    assert not _rclone_running(mount)
    assert not any(SECRET_KEY in repr(event) for event in events)  # the key never shows


def test_a_failed_bootstrap_unmounts_the_volumes(ssh_hosts, store, bucket, tmp_path: Path) -> None:
    mount = tmp_path / "data"
    volume = sky.Volume(bucket=bucket, mount=str(mount), storage=store)
    mounted: list[bool] = []
    check = f"mountpoint -q {mount} && echo mounted-before-the-failure; exit 3"
    plugin = sky.plugins.Plugin.create("after").with_bootstrap(lambda cluster: check)
    compute = ssh_pool(ssh_hosts, servers=[0], volumes=[volume], plugins=[plugin])
    compute.on(sky.BootstrapConsole, lambda e: mounted.append("mounted-before-the-failure" in e.line))
    with pytest.raises(sky.BootstrapFailed) as caught:
        compute.start()
    assert caught.value.phase == "after"
    assert any(mounted)  # the volume was mounted when the later op failed...
    assert not os.path.ismount(mount)  # ...and is not any more
    assert not _rclone_running(mount)
    assert processes_of(ssh_hosts.servers[0].home) == []


def test_copy_mode_works_where_fuse_is_hidden(ssh_hosts, store, bucket, tmp_path: Path) -> None:
    _put(store, bucket, {"in/a.txt": b"alpha"})
    mount = tmp_path / "work"
    volume = sky.Volume(
        bucket=bucket, mount=str(mount), prefix="in", read_only=False, storage=store, mode="copy"
    )
    image = sky.Image(env=NO_FUSE)
    with ssh_pool(ssh_hosts, servers=[0], volumes=[volume], image=image) as pool:
        listed = write(str(mount), "out.txt", "result") >> pool
        assert not os.path.ismount(mount)  # a copy, not a mount
    assert listed == ["a.txt", "out.txt"]
    with store as s3:
        assert s3.ls(bucket) == ["in/a.txt", "in/out.txt"]  # written files went up at exit
    assert not mount.exists() or list(mount.iterdir()) == []  # the copy does not outlive the pool


def test_a_node_without_fuse_fails_the_pool_naming_node_and_cause(
    ssh_hosts, store, bucket, tmp_path: Path
) -> None:
    mount = tmp_path / "data"
    volume = sky.Volume(bucket=bucket, mount=str(mount), storage=store)
    compute = ssh_pool(ssh_hosts, servers=[0], volumes=[volume], image=sky.Image(env=NO_FUSE))
    with pytest.raises(sky.BootstrapFailed) as caught:
        compute.start()
    message = str(caught.value)
    assert caught.value.node == 0 and caught.value.phase == "volumes"
    assert "cannot mount" in message and "/nonexistent/fuse does not exist" in message
    assert 'mode=\\"copy\\"' in message or 'mode="copy"' in message
    assert not os.path.ismount(mount)


def test_auto_mode_copies_where_the_node_cannot_mount(ssh_hosts, store, bucket, tmp_path: Path) -> None:
    _put(store, bucket, {"a.txt": b"alpha"})
    mount = tmp_path / "data"
    volume = sky.Volume(bucket=bucket, mount=str(mount), storage=store, mode="auto")
    lines: list[str] = []
    compute = ssh_pool(ssh_hosts, servers=[0], volumes=[volume], image=sky.Image(env=NO_FUSE))
    compute.on(sky.BootstrapConsole, lambda e: lines.append(e.line))
    with compute as pool:
        seen = look(str(mount)) >> pool
        assert not os.path.ismount(mount)
    assert seen["text"] == {"a.txt": "alpha"}
    assert any("copying the bucket instead" in line for line in lines)
    with store as s3:
        assert s3.ls(bucket) == ["a.txt"]  # a read-only copy is never uploaded


def test_a_volume_that_cannot_be_mounted_unmounts_the_ones_before_it(
    ssh_hosts, store, bucket, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    second.mkdir()
    (second / "in-the-way.txt").write_text("x")  # a mount point must be empty
    volumes = [sky.Volume(bucket=bucket, mount=str(first), storage=store),
               sky.Volume(bucket=bucket, mount=str(second), storage=store)]
    with pytest.raises(sky.BootstrapFailed, match="is not empty") as caught:
        ssh_pool(ssh_hosts, servers=[0], volumes=volumes).start()
    assert caught.value.phase == "volumes"
    assert str(first) not in Path("/proc/mounts").read_text()
    assert not first.exists()  # the folder the op made for the mount is gone with it
    assert (second / "in-the-way.txt").read_text() == "x"  # what was there is untouched
