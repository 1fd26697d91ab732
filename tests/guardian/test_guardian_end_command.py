"""Which command a node's guardian ends its machine with: a distribution's answer to the
`skyward_end_machine_command` hook first, else the provider's own (`Provider.end_machine_command`)."""

from __future__ import annotations

from typing import Any

import skyward as sky
from skyward.client.hooks import PoolHooks
from skyward.extension.hookspecs import hookimpl
from skyward.options import Options
from skyward.providers.base import Cluster, Instance

INSTANCE = Instance(id="pod0042", node=0)


def ask(config: Any, *implementations: object) -> str | None:
    provider = config.create(Options())
    hooks = PoolHooks(())
    for implementation in implementations:
        hooks.pm.register(implementation)
    return hooks.end_machine_command(provider, Cluster(id="p1", provider=provider.name, spec=None), INSTANCE)


class Answers:
    def __init__(self, command: str | None) -> None:
        self.command = command

    @hookimpl
    def skyward_end_machine_command(self, provider: Any, cluster: Cluster, instance: Instance) -> str | None:
        return self.command if self.command is None else f"{self.command} {instance.id}"


def test_a_runpod_pod_is_deleted_by_its_own_id_not_by_a_variable_ssh_logins_lack() -> None:
    command = ask(sky.RunPod(api_key="rpa_x", api_url="http://127.0.0.1:9/v1"))
    assert command is not None
    assert "http://127.0.0.1:9/v1/pods/pod0042" in command
    assert "RUNPOD_POD_ID" not in command


def test_an_ssh_host_has_no_end_command() -> None:
    assert ask(sky.SSH(hosts=["me@127.0.0.1"])) is None


def test_a_distributions_answer_comes_before_the_providers() -> None:
    assert ask(sky.SSH(hosts=["me@127.0.0.1"]), Answers("mycloud-delete")) == "mycloud-delete pod0042"


def test_a_distribution_that_does_not_answer_leaves_the_providers_command() -> None:
    assert "pods/pod0042" in str(ask(sky.RunPod(api_key="rpa_x"), Answers(None)))
