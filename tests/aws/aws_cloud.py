"""The AWS tests' cloud, as the fixtures in conftest.py assemble it (see there): a fault-injecting
proxy in front of moto, the test network, the sshd "machines" behind moto's instances, and helpers
that read back what moto still holds of a pool."""

from __future__ import annotations

import base64
import http.client
import http.server
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import attrs
import yaml
from ssh_hosts import SSHServer, start_machine

_CAPACITY_ERROR = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
    "<Code>InsufficientInstanceCapacity</Code>"
    "<Message>We currently do not have sufficient capacity in the Availability Zone you requested.</Message>"
    "</Error></Errors><RequestID>skyward-test</RequestID></Response>"
)


#: The address the proxy's echo service (`/checkip`, AWS's checkip.amazonaws.com for the tests)
#: says the client has (TEST-NET-3: documentation, never routed).
CLIENT_IP = "203.0.113.7"


@attrs.define
class FaultProxy:
    """What the proxy refuses: spot launches while `refuse_spot` is set; `spot_refusals` counts.
    It also answers `GET /checkip` with `client_ip` as AWS's echo service would (an error while
    `refuse_ip_lookup`), and holds `TerminateInstances` back for `stall_terminate` seconds or until
    `release_terminate` is set.
    Once moto has answered a request that may change something (any action but a Describe), it
    sets each of `changes` (the `Machines` watcher's, which then looks at moto again)."""

    url: str = ""
    refuse_spot: bool = False
    spot_refusals: int = 0
    launches: list[dict[str, str]] = attrs.field(factory=list)
    client_ip: str = CLIENT_IP
    refuse_ip_lookup: bool = False
    ip_lookups: int = 0
    stall_terminate: float = 0.0
    release_terminate: threading.Event = attrs.field(factory=threading.Event)
    changes: list[threading.Event] = attrs.field(factory=list)

    @property
    def ip_lookup_url(self) -> str:
        return f"{self.url}/checkip"


def proxy_handler(upstream: str, state: FaultProxy) -> type[http.server.BaseHTTPRequestHandler]:
    target = urllib.parse.urlsplit(upstream)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path != "/checkip":
                self._answer(404, b"not found", {"Content-Type": "text/plain"})
                return
            state.ip_lookups += 1
            if state.refuse_ip_lookup:
                self._answer(503, b"unavailable", {"Content-Type": "text/plain"})
                return
            self._answer(200, f"{state.client_ip}\n".encode(), {"Content-Type": "text/plain"})

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            form = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode(errors="replace")).items()}
            if form.get("Action") == "TerminateInstances" and state.stall_terminate:
                state.release_terminate.wait(state.stall_terminate)
            if form.get("Action") == "RunInstances":
                state.launches.append(form)
                if state.refuse_spot and form.get("InstanceMarketOptions.MarketType") == "spot":
                    state.spot_refusals += 1
                    self._answer(400, _CAPACITY_ERROR.encode(), {"Content-Type": "text/xml"})
                    return
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
                conn.request("POST", self.path, body=body, headers=headers)
                answer = conn.getresponse()
                payload = answer.read()
                kept = {k: v for k, v in answer.getheaders()
                        if k.lower() not in ("connection", "transfer-encoding", "content-length")}
            finally:
                conn.close()
            if not str(form.get("Action", "")).startswith("Describe"):
                for change in list(state.changes):
                    change.set()
            self._answer(answer.status, payload, kept)

        def _answer(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler



@attrs.frozen
class Network:
    vpc_id: str
    subnet_id: str
    ami: str



def machine_keys(ec2: Any, instance_id: str) -> tuple[str, str]:
    """(private host key, login key) from the instance's user data, as cloud-init reads them."""
    value = ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")["UserData"]["Value"]
    config = yaml.safe_load(base64.b64decode(value))
    return config["ssh_keys"]["ed25519_private"], config["ssh_authorized_keys"][0]


@attrs.define
class Machines:
    """The sshd's standing in for the subnet's instances, by instance id.

    Each machine boots as an EC2 instance would: cloud-init's `runcmd` from the instance's user
    data runs (as the login user, in the machine's home: the pool's boot guardian), then its sshd
    starts (unless `sshd_down`: a machine that never answers SSH). Its PATH leads to the machine's
    own `sudo` and `shutdown`: `sudo shutdown -h now` powers the machine off, and EC2 then does
    what the instance's `InstanceInitiatedShutdownBehavior` says (terminate or stop), as here.
    """

    ec2: Any
    subnet_id: str
    folder: Path
    port: int
    servers: dict[str, SSHServer] = attrs.field(factory=dict)
    homes: dict[str, Path] = attrs.field(factory=dict)
    host_keys: dict[str, str] = attrs.field(factory=dict)
    #: Answer with this private host key instead of the user data's (an impostor).
    impostor_key: str | None = None
    #: Boot machines whose sshd never answers (the pool never logs in).
    sshd_down: bool = False
    #: What starting each machine's boot guardian answered (cloud-init's `runcmd`), by instance id.
    boot_guardians: dict[str, str] = attrs.field(factory=dict)
    #: The machines that powered themselves off (`shutdown`), in order.
    powered_off: list[str] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)
    #: Set when moto may hold news for the watcher (the proxy sets it; see `watch`).
    changed: threading.Event = attrs.field(factory=threading.Event)
    _ended: dict[str, threading.Event] = attrs.field(factory=dict)
    _stop: threading.Event = attrs.field(factory=threading.Event)
    #: Held by a sync and by `stop`: the two never change the servers at once.
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def sync(self) -> None:
        with self._lock:
            if not self._stop.is_set():
                self._sync()

    def _sync(self) -> None:
        # Terminated instances stay listed for the session (moto keeps them), and rendering and
        # parsing them all ten times a second would cost more CPU than the tests themselves.
        filters = [{"Name": "subnet-id", "Values": [self.subnet_id]},
                   {"Name": "instance-state-name", "Values": NOT_TERMINATED}]
        listed = set()
        for reservation in self.ec2.describe_instances(Filters=filters)["Reservations"]:
            for row in reservation["Instances"]:
                instance, state = row["InstanceId"], row["State"]["Name"]
                listed.add(instance)
                if state == "running" and instance not in self.servers and instance not in self.homes:
                    self._boot(instance, row["PrivateIpAddress"])
                elif state == "running" and instance in self.servers:
                    self._obey_shutdown(instance)
                elif state in GONE_OR_STOPPED and instance in self.servers:
                    self.servers.pop(instance).stop()
                    if state == "stopped":
                        self.ended(instance).set()
        for instance in [i for i in self.servers if i not in listed]:  # terminated
            self.servers.pop(instance).stop()
            self.ended(instance).set()

    def ended(self, instance: str) -> threading.Event:
        """Set once moto says `instance` is terminated or stopped (its sshd is then stopped)."""
        return self._ended.setdefault(instance, threading.Event())

    def _boot(self, instance: str, address: str) -> None:
        host_key, login_key = machine_keys(self.ec2, instance)
        self.host_keys[instance] = host_key
        folder = self.folder / instance
        path = f"{machine_bin(folder)}:{os.environ['PATH']}"
        server = start_machine(folder, address, self.port, self.impostor_key or host_key, login_key,
                               start=False, env={"PATH": path})
        self.servers[instance] = server
        self.homes[instance] = server.home
        for line in runcmd_lines(self.ec2, instance):
            result = subprocess.run(
                ["sh", "-c", line], capture_output=True, text=True, timeout=30, check=False,
                env={**os.environ, "HOME": str(server.home), "PATH": path},
            )
            self.boot_guardians[instance] = result.stdout.strip() + result.stderr.strip()
        if not self.sshd_down:
            server.boot()

    def _obey_shutdown(self, instance: str) -> None:
        if instance in self.powered_off or not (self.folder / instance / POWERED_OFF).exists():
            return
        self.powered_off.append(instance)
        attribute = self.ec2.describe_instance_attribute(
            InstanceId=instance, Attribute="instanceInitiatedShutdownBehavior"
        )["InstanceInitiatedShutdownBehavior"]["Value"]
        if attribute == "terminate":
            self.ec2.terminate_instances(InstanceIds=[instance])
        else:
            self.ec2.stop_instances(InstanceIds=[instance])
        self.changed.set()  # told moto directly, not through the proxy

    def watch(self) -> None:
        """Look at moto when the proxy saw a change, when a machine powered itself off, and every
        `RESYNC` seconds whatever happened (a change that did not pass the proxy)."""
        looked = 0.0
        while not self._stop.wait(0.1):
            due = self.changed.is_set() or time.monotonic() - looked >= RESYNC or self._powering_off()
            if not due:
                continue
            self.changed.clear()
            looked = time.monotonic()
            try:
                self.sync()
            except Exception as exc:  # noqa: BLE001 - reported by the fixture
                self.errors.append(repr(exc))

    def _powering_off(self) -> bool:
        """A running machine ran `shutdown` and EC2 has not yet been told."""
        return any(
            i not in self.powered_off and (self.folder / i / POWERED_OFF).exists() for i in list(self.servers)
        )

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            for server in self.servers.values():
                server.stop()
            self.servers.clear()


#: EC2 states the watcher lists (a terminated instance's sshd was stopped when it left the list).
NOT_TERMINATED = ["pending", "running", "shutting-down", "stopping", "stopped"]
#: The longest the watcher goes without looking at moto (seconds).
RESYNC = 1.0
#: EC2 states in which the machine no longer runs (its sshd is stopped).
GONE_OR_STOPPED = ("shutting-down", "terminated", "stopping", "stopped")
#: The file a machine's `shutdown` leaves in its folder: the hypervisor sees the machine power off.
POWERED_OFF = "powered-off"


def machine_bin(folder: Path) -> Path:
    """The machine's own `sudo` (its login user may use it without a password, as on EC2's
    images) and `shutdown` (which powers the machine off: it leaves `POWERED_OFF`)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    (bin_dir / "shutdown").write_text(f'#!/bin/sh\necho "$@" > {folder / POWERED_OFF}\n')
    for tool in ("sudo", "shutdown"):
        (bin_dir / tool).chmod(0o755)
    return bin_dir


def runcmd_lines(ec2: Any, instance_id: str) -> list[str]:
    """The shell lines of the user data's `runcmd`, as cloud-init would run them: an entry
    `["su", "-", user, "-c", line]` runs `line` as the login user (here: this user, with the
    machine's home)."""
    value = ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")["UserData"]["Value"]
    config = yaml.safe_load(base64.b64decode(value))
    lines = []
    for entry in config.get("runcmd") or []:
        argv = entry if isinstance(entry, list) else ["sh", "-c", entry]
        lines.append(argv[-1])
    return lines



def aws_provider(
    proxy: FaultProxy, network: Network, machines: Machines | None = None, **kwargs: Any
) -> Any:
    """`sky.AWS` on the test cloud: moto through the proxy, the test subnet, private addresses."""
    import getpass

    import skyward as sky

    kwargs.setdefault("endpoint_url", proxy.url)
    kwargs.setdefault("ip_lookup_url", proxy.ip_lookup_url)
    kwargs.setdefault("region", "us-east-1")
    kwargs.setdefault("subnet_id", network.subnet_id)
    kwargs.setdefault("ami", network.ami)
    kwargs.setdefault("use_private_ip", True)
    kwargs.setdefault("username", getpass.getuser())
    kwargs.setdefault("python", sys.executable)
    if machines is not None:
        kwargs.setdefault("ssh_port", machines.port)
    return sky.AWS(**kwargs)


def offered_gpu(ec2: Any) -> tuple[str, set[str]]:
    """A GPU the region's current generation offers (the smallest such type's), and every type that
    carries it, as moto reports them: which families are current differs between moto releases
    (5.2.5 marks g5 previous generation), so a test that needs a card on offer asks for one."""
    pages = ec2.get_paginator("describe_instance_types").paginate(
        Filters=[{"Name": "current-generation", "Values": ["true"]}]
    )
    rows = [row for page in pages for row in page["InstanceTypes"] if (row.get("GpuInfo") or {}).get("Gpus")]
    smallest = min(rows, key=lambda row: (row["VCpuInfo"]["DefaultVCpus"], row["InstanceType"]))
    card = smallest["GpuInfo"]["Gpus"][0]["Name"]
    return card, {row["InstanceType"] for row in rows if row["GpuInfo"]["Gpus"][0]["Name"] == card}


def tagged(ec2: Any, pool: str) -> dict[str, list[str]]:
    """What moto still holds of a pool: live instances, key pairs, security groups (by name or
    tag) and volumes (by tag)."""
    tag = [{"Name": "tag:skyward:pool", "Values": [pool]}]
    live = [
        i["InstanceId"] for r in ec2.describe_instances(Filters=tag)["Reservations"] for i in r["Instances"]
        if i["State"]["Name"] != "terminated"
    ]
    keys = [k["KeyName"] for k in ec2.describe_key_pairs()["KeyPairs"]
            if k["KeyName"] == f"skyward-{pool}" or pool in tags_of(k).values()]
    groups = [g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]
              if g["GroupName"] == f"skyward-{pool}" or pool in tags_of(g).values()]
    volumes = [v["VolumeId"] for v in ec2.describe_volumes(Filters=tag)["Volumes"]]
    return {"instances": live, "key_pairs": keys, "security_groups": groups, "volumes": volumes}


def tags_of(row: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in row.get("Tags") or []}


NOTHING_LEFT = {"instances": [], "key_pairs": [], "security_groups": [], "volumes": []}

