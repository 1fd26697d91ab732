"""A pool with several specs skips those that cannot start (credentials missing, package not
installed), says so (a `SpecSkipped` event, a console line, a log line), and starts the next;
only when none can start is the error raised, listing each spec and why."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import attrs
import pytest
from cloud_env import clear_cloud_credentials

import skyward as sky
from skyward.errors import ConfigurationError, MissingPackageError

RUNPOD_LINE = "skipping RunPod: no RUNPOD_API_KEY (set it or pass RunPod(api_key=...))"
VASTAI_LINE = (
    "skipping VastAI: no VAST_API_KEY (set it, run `vastai set api-key ...`, or pass VastAI(api_key=...))"
)


@pytest.fixture
def unpublished_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """One more provider Skyward knows, `sky.Nimbus` from `skyward-nimbus`, whose package is not
    installed: every provider package Skyward knows is installed where the tests run."""
    from skyward.extension import registry

    monkeypatch.setitem(registry.KNOWN_PROVIDER_PACKAGES, "Nimbus", "skyward-nimbus")


@pytest.fixture(autouse=True)
def _no_cloud_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clear_cloud_credentials(monkeypatch, tmp_path)


@sky.function
def provider_here() -> str:
    return sky.instance_info().provider


def clouds_then_local(selection: str, **kwargs: Any) -> sky.Pool:
    """RunPod, then Vast.ai, then this machine: the script of a user with no cloud credentials."""
    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    return sky.Compute(
        sky.Spec(provider=sky.RunPod()), sky.Spec(provider=sky.VastAI()), sky.Spec(provider=sky.Local()),
        options=sky.Options(selection=selection), **kwargs,
    )


@pytest.mark.parametrize("selection", ["first", "cheapest"])
def test_a_pool_without_cloud_credentials_runs_its_task_on_the_local_spec(selection: str) -> None:
    with clouds_then_local(selection) as pool:
        assert (provider_here() >> pool) == "local"


@pytest.mark.parametrize("selection", ["first", "cheapest"])
def test_each_skipped_spec_is_an_event_naming_its_provider_and_credential(selection: str) -> None:
    events: list[sky.Event] = []
    with clouds_then_local(selection, on_event=events.append):
        pass
    skipped = [e for e in events if isinstance(e, sky.SpecSkipped)]
    assert [(e.spec, e.provider, e.credential) for e in skipped] == [
        (1, "RunPod", "RUNPOD_API_KEY"), (2, "VastAI", "VAST_API_KEY"),
    ]
    assert [e.message for e in skipped] == [RUNPOD_LINE, VASTAI_LINE]
    assert all(isinstance(e, sky.Error) and not e.fatal for e in skipped)


@pytest.mark.parametrize("selection", ["first", "cheapest"])
def test_the_console_names_each_skipped_provider_and_its_credential(
    selection: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with clouds_then_local(selection, console="log"):
        pass
    err = capsys.readouterr().err
    assert RUNPOD_LINE in err and VASTAI_LINE in err, err
    said = [line for line in err.splitlines() if RUNPOD_LINE in line]
    assert said and "WARN" in said[0] and "ERROR" not in said[0]  # the pool goes on: a warning


def test_the_log_file_names_each_skipped_provider_and_its_credential(tmp_path: Path) -> None:
    log_file = tmp_path / "skyward.log"
    with clouds_then_local("first", logging=sky.LogConfig(file=str(log_file), console=False)):
        pass
    lines = [line for line in log_file.read_text().splitlines() if "skyward.spec_skipped" in line]
    assert len(lines) == 2
    assert "provider=RunPod" in lines[0] and "credential=RUNPOD_API_KEY" in lines[0]
    assert "provider=VastAI" in lines[1] and "credential=VAST_API_KEY" in lines[1]


def test_cheapest_never_prices_a_spec_it_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    from skyward_runpod.config import RunPod

    asked: list[str] = []

    def record(name: str) -> Any:
        return lambda *args, **kwargs: asked.append(name)

    monkeypatch.setattr(RunPod, "hourly_price", record("hourly_price"))
    monkeypatch.setattr(RunPod, "offer_source", record("offer_source"))

    @attrs.frozen
    class Pricey(sky.Local):
        def hourly_price(self, spec: object) -> float:
            return 5.0

    with sky.Compute(
        sky.Spec(provider=sky.RunPod()),
        sky.Spec(provider=Pricey(), nodes=1),
        sky.Spec(provider=sky.Local(), nodes=2),
        options=sky.Options(selection="cheapest"), console=False, logging=False,
    ) as pool:
        assert pool.current_nodes() == 2  # the two Local specs were priced, and the cheaper started
    assert asked == []


@pytest.mark.parametrize("selection", ["first", "cheapest"])
def test_with_every_spec_lacking_credentials_the_error_lists_each_spec_and_why(selection: str) -> None:
    events: list[sky.Event] = []
    compute = sky.Compute(
        *(sky.Spec(provider=p) for p in (sky.RunPod(), sky.VastAI(), sky.Verda(), sky.Novita(), sky.AWS())),
        options=sky.Options(selection=selection), console=False, logging=False, on_event=events.append,
    )
    with pytest.raises(ConfigurationError) as caught, compute:
        pass
    message = str(caught.value)
    assert "none of the pool's 5 specs could start" in message
    for line in (
        "spec 1 (RunPod): skipped: no RUNPOD_API_KEY",
        "spec 2 (VastAI): skipped: no VAST_API_KEY",
        "spec 3 (Verda): skipped: no VERDA_CLIENT_ID and VERDA_CLIENT_SECRET",
        "spec 4 (Novita): skipped: no NOVITA_API_KEY",
        "spec 5 (AWS): skipped: no AWS_ACCESS_KEY_ID",
    ):
        assert line in message, message
    assert len([e for e in events if isinstance(e, sky.SpecSkipped)]) == 5


def test_when_the_last_spec_tried_fails_its_own_error_is_raised_listing_each_spec() -> None:
    @attrs.frozen
    class Unrentable(sky.Local):
        def create(self, options: object = None) -> Any:
            raise sky.NoOffersError("no offer fits this spec")

    compute = sky.Compute(
        sky.Spec(provider=sky.RunPod()), sky.Spec(provider=Unrentable()), console=False, logging=False,
    )
    with pytest.raises(sky.NoOffersError, match="no offer fits") as caught, compute:
        pass
    notes = "\n".join(caught.value.__notes__)
    assert "spec 1 (RunPod): skipped: no RUNPOD_API_KEY" in notes
    assert "spec 2 (Unrentable): failed: no offer fits this spec" in notes


def test_a_spec_alone_is_not_skipped_and_runpod_names_its_variable_at_pool_start() -> None:
    events: list[sky.Event] = []
    compute = sky.Compute(provider=sky.RunPod(), accelerator="A100", console=False, logging=False,
                          on_event=events.append)  # builds: the key is looked for when it starts
    with pytest.raises(ConfigurationError, match=r"RunPod needs an API key.*RUNPOD_API_KEY"), compute:
        pass
    assert not [e for e in events if isinstance(e, sky.SpecSkipped)]


@pytest.mark.usefixtures("unpublished_provider")
def test_a_spec_whose_package_is_missing_is_skipped_naming_the_pip_command() -> None:
    events: list[sky.Event] = []
    with sky.Compute(
        sky.Spec(provider=sky.Nimbus(project="p")), sky.Spec(provider=sky.Local()),
        console=False, logging=False, on_event=events.append,
    ) as pool:
        assert (provider_here() >> pool) == "local"
    (skipped,) = [e for e in events if isinstance(e, sky.SpecSkipped)]
    assert (skipped.provider, skipped.credential) == ("Nimbus", "")
    assert "pip install skyward-nimbus" in skipped.reason and skipped.message.startswith("skipping Nimbus: ")


@pytest.mark.usefixtures("unpublished_provider")
def test_a_spec_alone_whose_package_is_missing_fails_at_start_naming_the_pip_command() -> None:
    compute = sky.Compute(provider=sky.Nimbus(), console=False, logging=False)
    with pytest.raises(MissingPackageError, match="pip install skyward-nimbus"), compute:
        pass


@pytest.mark.usefixtures("unpublished_provider")
def test_the_stand_in_for_a_missing_package_is_a_value_that_pickles() -> None:
    config = sky.Nimbus(project="p", zone="europe-west4-a")
    assert pickle.loads(pickle.dumps(config)) == config
    assert "skyward-nimbus is not installed" in repr(config) and config.name == "nimbus"
    assert sky.Nimbus is type(config)


def test_a_provider_name_no_package_of_this_repository_offers_does_not_exist() -> None:
    with pytest.raises(AttributeError, match="Container"):
        sky.Container  # noqa: B018


def test_an_unknown_provider_name_is_still_no_attribute() -> None:
    with pytest.raises(AttributeError):
        sky.NoSuchCloud  # noqa: B018
