"""resolve_compute_args: the three Compute conventions, shortcuts, older spellings, and typos."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyward.errors import ConfigurationError
from skyward.image import Image
from skyward.options import Options, Worker
from skyward.providers.local import Local
from skyward.resolve import resolve_compute_args
from skyward.spec import Nodes, Spec, Volume


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Named pools are read from this test's own directory, never from the developer's."""
    monkeypatch.delenv("SKYWARD_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)


# --- convention 1: flat Spec keywords


def test_no_arguments_give_one_local_spec_and_default_options() -> None:
    assert resolve_compute_args() == ((Spec(provider=Local()),), Options())


# --- the default provider: chosen here, so that a Spec stays a value below every provider


def test_a_spec_without_a_provider_leaves_with_local() -> None:
    assert Spec().provider is None
    (spec,), _ = resolve_compute_args(Spec(nodes=2, ttl=60))
    assert spec == Spec(provider=Local(), nodes=2, ttl=60)


def test_a_spec_that_names_its_provider_keeps_that_very_provider() -> None:
    provider = Local(isolated=True)
    given = Spec(provider=provider)
    (spec,), _ = resolve_compute_args(given)
    assert spec is given and spec.provider is provider


def test_each_fallback_spec_without_a_provider_gets_local_and_the_others_keep_theirs() -> None:
    isolated = Local(isolated=True)
    specs, _ = resolve_compute_args(Spec(provider=isolated), Spec(nodes=3))
    assert [s.provider for s in specs] == [isolated, Local()]
    assert specs[1].nodes == Nodes(3)


def test_a_named_pool_without_a_provider_leaves_with_local(tmp_path: Path) -> None:
    (tmp_path / "skyward.toml").write_text("[pools.dev]\nnodes = 2\n")
    (spec,), _ = resolve_compute_args(name="dev")
    assert spec.provider == Local() and spec.nodes == Nodes(2)


def test_flat_keywords_build_one_spec() -> None:
    specs, _ = resolve_compute_args(nodes=4, image=Image(pip=["torch"]), allocation="on-demand")
    assert specs == (Spec(provider=Local(), nodes=4, image=Image(pip=["torch"]), allocation="on-demand"),)


def test_flat_keywords_are_validated_like_spec() -> None:
    with pytest.raises(ConfigurationError, match="nodes=0"):
        resolve_compute_args(nodes=0)


# --- convention 2: positional specs


def test_positional_specs_are_kept_in_order() -> None:
    first, second = Spec(provider=Local(), nodes=1), Spec(provider=Local(isolated=True), nodes=2)
    specs, _ = resolve_compute_args(first, second, options=Options(selection="first"))
    assert specs == (first, second)


def test_positional_specs_take_the_given_options() -> None:
    options = Options(selection="first")
    assert resolve_compute_args(Spec(), options=options)[1] is options


def test_spec_keywords_beside_specs_fill_in_what_the_specs_leave_unset() -> None:
    (spec,), _ = resolve_compute_args(Spec(), nodes=2)
    assert spec.nodes.desired == 2


def test_a_provider_passed_positionally_suggests_the_keyword() -> None:
    with pytest.raises(ConfigurationError, match=r"argument 1 is .*; did you mean Compute\(provider="):
        resolve_compute_args(object())


def test_a_string_passed_positionally_suggests_name() -> None:
    with pytest.raises(ConfigurationError, match=r"did you mean Compute\(name='train'\)"):
        resolve_compute_args("train")


# --- convention 3: named pools


def test_name_loads_the_pool_from_skyward_toml(tmp_path: Path) -> None:
    (tmp_path / "skyward.toml").write_text(
        "[pools.train]\nnodes = 3\n[pools.train.options]\nconsole = 'log'\n"
    )
    specs, options = resolve_compute_args(name="train")
    assert specs == (Spec(provider=Local(), nodes=3),) and options == Options(console="log")


def test_name_with_spec_keywords_names_the_fix() -> None:
    with pytest.raises(
        ConfigurationError, match=r"cannot be combined with nodes; move those into \[pools.train\]"
    ):
        resolve_compute_args(name="train", nodes=2)


def test_name_with_specs_names_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="cannot be combined with Spec objects"):
        resolve_compute_args(Spec(), name="train")


def test_name_with_an_unknown_pool_lists_the_defined_ones(tmp_path: Path) -> None:
    (tmp_path / "skyward.toml").write_text("[pools.train]\n")
    with pytest.raises(ConfigurationError, match=r"no such pool .* \(defined: 'train'\)"):
        resolve_compute_args(name="infer")


def test_shortcuts_override_the_files_options(tmp_path: Path) -> None:
    (tmp_path / "skyward.toml").write_text("[pools.train.options]\nconsole = 'log'\nselection = 'first'\n")
    _, options = resolve_compute_args(name="train", console="silent")
    assert (options.console, options.selection) == ("silent", "first")


def test_explicit_options_override_the_files_options(tmp_path: Path) -> None:
    (tmp_path / "skyward.toml").write_text("[pools.train.options]\nconsole = 'log'\nselection = 'first'\n")
    _, options = resolve_compute_args(name="train", options=Options(console="minimal"))
    assert (options.console, options.selection) == ("minimal", "first")


# --- Options shortcuts


def test_option_shortcuts_go_into_options() -> None:
    worker = Worker(concurrency=4)
    specs, options = resolve_compute_args(nodes=2, worker=worker, console="log", retry_on_interruption=5)
    assert specs == (Spec(provider=Local(), nodes=2),)
    assert (options.worker, options.console, options.retry_on_interruption) == (worker, "log", 5)


def test_every_options_field_is_a_shortcut() -> None:
    _, options = resolve_compute_args(selection="first", default_compute_timeout=60.0, logging=False)
    assert (options.selection, options.default_compute_timeout, options.logging) == ("first", 60.0, False)


def test_shortcuts_are_validated_like_options() -> None:
    with pytest.raises(ConfigurationError, match="console='fancy'"):
        resolve_compute_args(console="fancy")


def test_a_shortcut_fills_a_field_options_left_at_default() -> None:
    _, options = resolve_compute_args(options=Options(selection="first"), console="log")
    assert (options.selection, options.console) == ("first", "log")


def test_a_shortcut_contradicting_options_names_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="options= already sets console='rich'; set it in one place"):
        resolve_compute_args(options=Options(console="rich"), console="log")


def test_a_shortcut_agreeing_with_options_is_accepted() -> None:
    options = Options(console="log")
    assert resolve_compute_args(options=options, console="log")[1] == options


def test_options_of_the_wrong_type_name_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="expected a sky.Options"):
        resolve_compute_args(options={"console": "log"})  # type: ignore[arg-type]


# --- older ComputePool spellings


def test_volume_is_the_older_name_of_volumes() -> None:
    volume = Volume(bucket="b", mount="/data")
    assert resolve_compute_args(volume=[volume])[0][0].volumes == (volume,)


def test_timeout_is_the_older_name_of_ttl() -> None:
    assert resolve_compute_args(timeout=3600)[0][0].ttl == 3600


@pytest.mark.parametrize(("display", "console"), [("log", "log"), ("spinner", "rich"), ("quiet", "silent")])
def test_display_is_the_older_name_of_console(display: str, console: str) -> None:
    assert resolve_compute_args(display=display)[1].console == console


def test_an_unknown_display_lists_both_vocabularies() -> None:
    with pytest.raises(ConfigurationError, match="'log', 'spinner', 'quiet'; or use console="):
        resolve_compute_args(display="fancy")


def test_an_old_and_new_name_together_keep_only_the_new_one() -> None:
    with pytest.raises(ConfigurationError, match="both timeout= and ttl=; timeout= is the older name"):
        resolve_compute_args(timeout=60, ttl=60)


def test_older_names_are_spec_keywords_beside_specs_too() -> None:
    assert resolve_compute_args(Spec(), timeout=60)[0][0].ttl == 60


def test_the_older_always_spot_allocation_still_works() -> None:
    assert resolve_compute_args(allocation="always-spot")[0][0].allocation == "spot"


# --- typos and misuse


def test_an_unknown_keyword_suggests_close_matches() -> None:
    with pytest.raises(ConfigurationError, match="unexpected keyword acelerator=; did you mean accelerator="):
        resolve_compute_args(acelerator="A100")


def test_an_unknown_keyword_without_close_match_points_to_the_docs() -> None:
    with pytest.raises(ConfigurationError, match="see sky.Spec and sky.Options"):
        resolve_compute_args(zzz=1)


def test_on_event_must_be_taken_by_the_caller_first() -> None:
    with pytest.raises(ConfigurationError, match="on_event= belongs to the pool"):
        resolve_compute_args(on_event=print)


def test_nodes_range_through_flat_keywords() -> None:
    assert resolve_compute_args(nodes=(2, 8))[0][0].nodes == Nodes(desired=2, max=8)
