"""A pool on TensorDock, end to end against the fake marketplace: VMs deployed on hostnodes, used
over SSH through the ports TensorDock forwards, deleted.

Every VM here is a real sshd the fake started on its hostnode's address, at the external port the
deploy asked to forward to 22, with the host key from the VM's cloud-init script and the login key
from the deploy's `ssh_key`, so these tests cross the same boundary a real VM does: the pair in
the form, the deploy, the cloud-init script, the forwarded port, the pinned host key, the
bootstrap and the workers, and the deletion confirmed before the pool reports its end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cloud_workloads import assert_every_node_answers
from fake_tensordock import FakeTensorDock
from tensordock_support import API_KEY, API_TOKEN, tensordock, tensordock_pool

import skyward as sky
from skyward.errors import CapacityError, NoOffersError, ProvisionError


def test_a_pool_falls_over_from_a_hostnode_out_of_stock_and_reaches_its_vms_through_forwarded_ports(
    tensordock_api: FakeTensorDock, tmp_path: Path
) -> None:
    tensordock_api.out_of_stock = {"hn-winnipeg"}  # the cheapest, but its listing is stale
    log_file = tmp_path / "skyward.log"
    events: list[Any] = []
    logging_config = sky.LogConfig(level="DEBUG", file=str(log_file), console=False)
    with tensordock_pool(tensordock_api, nodes=2, logging=logging_config, on_event=events.append) as pool:
        assert_every_node_answers(pool, 2, "tensordock")
        vms = dict(tensordock_api.vms)
    refused = [f["name"] for f in tensordock_api.deploys if f["hostnode"] == "hn-winnipeg"]
    assert sorted(refused) == sorted(row["name"] for row in vms.values()), "each node tried it first"
    assert {row["hostnode"] for row in vms.values()} == {"hn-chicago"}, "the next hostnode took both"
    ports = sorted(int(port) for row in vms.values() for port in row["port_forwards"])
    assert len(set(ports)) == 2 and 22 not in ports, "one forwarded port each, never 22 itself"
    assert sorted(row["name"] for row in vms.values()) == [
        f"skyward-{pool.name}-0".lower(),
        f"skyward-{pool.name}-1".lower(),
    ]
    taken = [f for f in tensordock_api.deploys if f["hostnode"] == "hn-chicago"]
    assert {(f["gpu_model"], f["gpu_count"], f["vcpus"], f["ram"]) for f in taken} == {
        ("geforcertx4090-pcie-24gb", "1", "4", "16")
    }
    assert sorted(tensordock_api.deleted) == sorted(vms)
    text = log_file.read_text()
    assert "skyward.tensordock_vm_created" in text
    for secret in (API_KEY, API_TOKEN):
        assert secret not in text
        assert not any(secret in repr(event) for event in events)


def test_no_stock_anywhere_fails_with_a_capacity_error_within_the_provision_timeout(
    tensordock_api: FakeTensorDock,
) -> None:
    tensordock_api.out_of_stock = {"hn-helsinki"}
    options = sky.Options(provision_timeout=2, provision_retry_delay=0.2)
    with (
        pytest.raises(CapacityError, match=r"no capacity for node 0.*a100-pcie-80gb in Helsinki"),
        tensordock_pool(tensordock_api, accelerator="A100", options=options),
    ):
        pass
    assert len(tensordock_api.deploys) >= 2, "capacity errors are retried"


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"allocation": "spot"}, NoOffersError, "no spot"),
        ({"accelerator": "B200"}, NoOffersError, r"no hostnode with 1x B200.*close GPUs"),
        ({"accelerator": "H100"}, CapacityError, "no hostnode has the GPUs free"),
    ],
    ids=["spot", "unknown-card", "only-offline-hostnodes"],
)
def test_a_spec_the_marketplace_cannot_serve_fails_before_anything_is_deployed(
    tensordock_api: FakeTensorDock, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    options = sky.Options(provision_timeout=1, provision_retry_delay=0.2)
    with pytest.raises(error, match=match), tensordock_pool(tensordock_api, options=options, **kwargs):
        pass
    assert tensordock_api.deploys == []


def test_a_refused_pair_fails_naming_both_variables_and_neither_secret(
    tensordock_api: FakeTensorDock,
) -> None:
    provider = tensordock(tensordock_api, api_token="tdtoken-NOT-THE-ORGANIZATIONS")
    with (
        pytest.raises(ProvisionError, match="TENSORDOCK_API_KEY and TENSORDOCK_API_TOKEN") as caught,
        tensordock_pool(tensordock_api, provider=provider),
    ):
        pass
    assert "tdtoken-NOT-THE-ORGANIZATIONS" not in str(caught.value)
    assert not tensordock_api.vms


def test_a_missing_token_fails_naming_its_variable_before_any_request(tensordock_api: FakeTensorDock) -> None:
    config = sky.TensorDock(api_url=tensordock_api.url, api_key=API_KEY)
    compute = sky.Compute(provider=config, accelerator="RTX_4090", console=False, logging=False)
    with pytest.raises(sky.ConfigurationError, match="TENSORDOCK_API_TOKEN"), compute:
        pass


def test_a_vm_answering_its_forwarded_port_with_another_host_key_is_never_handed_over(
    tensordock_api: FakeTensorDock,
) -> None:
    import asyncssh

    from skyward_tensordock import provider

    tensordock_api.impostor_key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    provider.GRACE, grace = 0.0, provider.GRACE
    try:
        with (
            pytest.raises(sky.HostKeyError),
            tensordock_pool(tensordock_api, options=sky.Options(ssh_timeout=5)),
        ):
            pass
    finally:
        provider.GRACE = grace
    assert len(tensordock_api.deleted) == 1
