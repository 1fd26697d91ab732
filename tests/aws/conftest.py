"""The AWS tests' cloud: moto's EC2 in server mode, with real sshd "machines" behind its instances.

- `moto_url`: one moto server (`moto_support.moto_server`) on 127.0.0.1 for the session, reached with fake
  credentials (set here, restored after; no test reaches anything but loopback).
- `proxy`: a small HTTP proxy in front of moto that can refuse spot launches with EC2's own
  `InsufficientInstanceCapacity` error (moto never runs out of capacity); everything else passes.
- `network`: a VPC 127.W.0.0/16 and a subnet 127.W.N.0/24 (W: this xdist worker's octet, see
  ssh_hosts.loopback); moto gives instances launched there private addresses from that range in
  order, and all of 127/8 is this machine.
- `machines`: watches moto like a hypervisor would. For each running instance of the subnet it
  reads the instance's real user data (the cloud-config the provider sent), and starts an OpenSSH
  server at the instance's private address answering with the host key found there and letting in
  the login key found there, as cloud-init would configure it; when moto says the instance is
  terminated, the server stops. So provision -> cloud-init keys -> SSH with a pinned host key ->
  bootstrap -> run -> terminate runs for real.
"""

from __future__ import annotations

import http.server
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))

from aws_cloud import FaultProxy, Machines, Network, proxy_handler  # noqa: E402
from fake_imds import FakeIMDS  # noqa: E402
from moto_support import accelerated, moto_server, only_instance_types
from ssh_hosts import free_port, loopback, workers_of  # noqa: E402

#: Fake credentials; the secret is looked for in logs and events (it must never be there).
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "AKIASKYWARDTESTING01",
    "AWS_SECRET_ACCESS_KEY": "skyward-test-secret-access-key-0123456789",
    "AWS_DEFAULT_REGION": "us-east-1",
}
#: Settings of this machine that would send boto3 elsewhere (a profile, a config file, a proxy).
CLEARED = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
           "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
           "https_proxy")
SUBNET_OCTET = 211
#: The CPU-only families the provider chooses from (`skyward_aws.catalog`'s `_CPU_FAMILIES`).
CPU_FAMILY = re.compile(r"^[mcrt]\d+[a-z-]*$")
#: The most vCPUs a CPU-only type these tests are served has: the largest any test asks for is 8.
MOST_CPU_VCPUS = 8


@pytest.fixture(scope="session")
def aws_credentials(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with pytest.MonkeyPatch.context() as patch:
        for name in CLEARED:
            patch.delenv(name, raising=False)
        empty = tmp_path_factory.mktemp("aws-config")
        patch.setenv("AWS_CONFIG_FILE", str(empty / "config"))
        patch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty / "credentials"))
        patch.setenv("NO_PROXY", "127.0.0.1,localhost")
        for name, value in CREDENTIALS.items():
            patch.setenv(name, value)
        yield dict(CREDENTIALS)


def choosable(instance_type: dict) -> bool:
    """An instance type these tests' specs may get or be told about: every accelerated type, and
    the CPU-only families' sizes up to `MOST_CPU_VCPUS` (metal aside, which is never chosen).

    The provider lists the whole catalog once per process, and moto renders and botocore parses
    it in seconds of CPU (1,263 types, 5,700 spot prices), again in every client process a test
    starts. What it leaves out no test here is chosen or told about: the other families are never
    chosen for a CPU-only spec, and no test asks a CPU-only node for more than 8 vCPUs."""
    if accelerated(instance_type):
        return True
    family = instance_type["InstanceType"].split(".", 1)[0]
    return (
        CPU_FAMILY.match(family) is not None and not instance_type.get("BareMetal", False)
        and instance_type["VCpuInfo"]["DefaultVCpus"] <= MOST_CPU_VCPUS
    )


@pytest.fixture(scope="session")
def moto_url(aws_credentials: dict[str, str]) -> Iterator[str]:
    with only_instance_types(choosable), moto_server() as url:
        yield url


# -- the fault-injecting proxy ---------------------------------------------------------------------

@pytest.fixture(scope="session")
def proxy(moto_url: str) -> Iterator[FaultProxy]:
    state = FaultProxy()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), proxy_handler(moto_url, state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="aws-fault-proxy", daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def faults(proxy: FaultProxy) -> Iterator[FaultProxy]:
    """The proxy, its faults cleared after the test."""
    yield proxy
    proxy.refuse_spot = False
    proxy.spot_refusals = 0
    proxy.launches.clear()
    proxy.refuse_ip_lookup = False
    proxy.ip_lookups = 0
    proxy.stall_terminate = 0.0
    proxy.release_terminate.clear()


# -- EC2 as the tests see it -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def ec2(moto_url: str) -> Any:
    return boto3.client("ec2", endpoint_url=moto_url, region_name="us-east-1")


@pytest.fixture(scope="session")
def network(ec2: Any) -> Network:
    vpc = ec2.create_vpc(CidrBlock=f"{loopback(0, 1)[:-1]}0/16")["Vpc"]["VpcId"]
    subnet_block = f"{loopback(SUBNET_OCTET, 1)[:-1]}0/24"
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=subnet_block)["Subnet"]["SubnetId"]
    images = ec2.describe_images(Owners=["amazon"], Filters=[
        {"Name": "architecture", "Values": ["x86_64"]}, {"Name": "name", "Values": ["ubuntu/*"]},
    ])["Images"]
    return Network(vpc, subnet, images[0]["ImageId"])


@pytest.fixture
def machines(ec2: Any, network: Network, proxy: FaultProxy, tmp_path: Path) -> Iterator[Machines]:
    watcher = Machines(ec2, network.subnet_id, tmp_path / "machines", free_port("127.0.0.1"))
    proxy.changes.append(watcher.changed)
    thread = threading.Thread(target=watcher.watch, name="aws-machines", daemon=True)
    thread.start()
    try:
        yield watcher
        left = {i: workers_of(home) for i, home in watcher.homes.items()}
        assert not any(left.values()), f"workers left running on the machines: {left}"
        assert not watcher.errors, watcher.errors
    finally:
        proxy.changes.remove(watcher.changed)
        watcher.stop()
        thread.join(5)


@pytest.fixture
def imds(machines: Machines) -> Iterator[FakeIMDS]:
    """The machines' instance metadata service (IMDSv2), which a test arms with spot notices."""
    service = FakeIMDS(machines.homes).start()
    try:
        yield service
    finally:
        service.stop()


@pytest.fixture
def skyward_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "skyward-home"
    monkeypatch.setenv("SKYWARD_HOME", str(home))
    return home


