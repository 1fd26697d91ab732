"""`sky.accelerators`: catalog factories, `Custom`, and `resolve()` turning strings into objects."""

from __future__ import annotations

import inspect
import pickle

import attrs
import pytest

import skyward.accelerators as acc
from skyward.accelerators import Accelerator
from skyward.accelerators._stub import STUB_PATH, render_stub
from skyward.errors import ConfigurationError
from skyward.task.instance import AcceleratorInfo

# --- the value object -------------------------------------------------------------------------


def test_accelerator_is_frozen() -> None:
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        acc.A100().count = 2  # type: ignore[misc]


def test_accelerators_with_the_same_fields_are_equal_and_hash_alike() -> None:
    assert acc.A100(count=8) == acc.A100(count=8)
    assert len({acc.A100(count=8), acc.A100(count=8)}) == 1


def test_accelerator_survives_pickling() -> None:
    a100 = acc.A100(memory="40GB", count=4, form_factor="SXM")
    assert pickle.loads(pickle.dumps(a100)) == a100


def test_memory_gb_reads_the_memory_string() -> None:
    assert acc.A100(memory="40GB").memory_gb == 40.0


def test_memory_gb_is_none_without_memory() -> None:
    assert acc.Custom("Mystery").memory_gb is None


def test_memory_is_spelled_one_way_whatever_the_input() -> None:
    assert Accelerator("X", memory="48 gb").memory == "48GB"
    assert Accelerator("X", memory="48G").memory == "48GB"
    assert Accelerator("X", memory=48).memory == "48GB"


def test_garbage_memory_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="size like '80GB'"):
        Accelerator("X", memory="lots")


def test_str_shows_name_memory_and_count() -> None:
    assert str(acc.A100(count=8)) == "A100-80GB x8"


def test_str_leaves_out_a_count_of_one() -> None:
    assert str(acc.T4()) == "T4-16GB"


def test_str_includes_the_form_factor() -> None:
    assert str(acc.H100(form_factor="SXM", count=8)) == "H100-SXM-80GB x8"


def test_str_shows_fractional_counts() -> None:
    assert str(acc.A100(count=0.5)) == "A100-80GB x0.5"


def test_to_info_carries_name_count_and_memory() -> None:
    assert acc.A100(memory="40GB", count=8).to_info() == AcceleratorInfo(
        type="A100", count=8, memory_gb=40.0, is_trainium=False
    )


def test_to_info_flags_trainium() -> None:
    assert acc.Trainium2(count=16).to_info().is_trainium is True


def test_inferentia_is_not_trainium() -> None:
    assert acc.Inferentia2().is_trainium is False


def test_custom_card_named_trainium_is_not_trainium() -> None:
    assert acc.Custom("Trainium9").is_trainium is False


# --- factories ----------------------------------------------------------------------------------


def test_factory_defaults_to_one_card_of_the_usual_memory() -> None:
    assert acc.A100() == Accelerator(name="A100", memory="80GB", count=1, manufacturer="NVIDIA")


def test_factory_accepts_a_count() -> None:
    assert acc.H100(count=8).count == 8


def test_factory_accepts_a_fractional_count() -> None:
    assert acc.A100(count=0.25).count == 0.25


def test_factory_accepts_a_known_memory_variant() -> None:
    assert acc.A100(memory="40GB").memory == "40GB"


def test_factory_memory_is_case_insensitive() -> None:
    assert acc.A100(memory="40gb").memory == "40GB"  # type: ignore[arg-type]


def test_factory_rejects_an_unknown_memory_variant_naming_the_valid_ones() -> None:
    message = r"A100 has no '48GB' variant; choose memory from: 80GB, 40GB"
    with pytest.raises(ConfigurationError, match=message):
        acc.A100(memory="48GB")  # type: ignore[arg-type]


def test_factory_accepts_a_form_factor() -> None:
    assert acc.H100(form_factor="PCIe").form_factor == "PCIe"


def test_factory_form_factor_is_case_insensitive() -> None:
    assert acc.H100(form_factor="sxm").form_factor == "SXM"  # type: ignore[arg-type]


def test_factory_rejects_a_form_factor_the_card_does_not_come_in() -> None:
    with pytest.raises(ConfigurationError, match="SXM, PCIe, NVL"):
        acc.H100(form_factor="OAM")  # type: ignore[arg-type]


def test_h100_nvl_defaults_to_its_94gb() -> None:
    assert acc.H100(form_factor="NVL").memory == "94GB"


def test_factory_without_variants_has_no_memory_parameter() -> None:
    with pytest.raises(TypeError, match=r"T4\(\) got an unexpected keyword argument 'memory'"):
        acc.T4(memory="16GB")  # type: ignore[call-arg]


def test_factory_is_keyword_only() -> None:
    with pytest.raises(TypeError, match=r"A100\(\) takes 0 positional arguments"):
        acc.A100(8)  # type: ignore[call-arg]


@pytest.mark.parametrize("count", [0, -1, float("nan"), float("inf")])
def test_factory_rejects_a_count_that_is_not_positive_and_finite(count: float) -> None:
    with pytest.raises(ConfigurationError, match="count"):
        acc.A100(count=count)


def test_factory_rejects_a_boolean_count() -> None:
    with pytest.raises(ConfigurationError, match="count"):
        acc.A100(count=True)


def test_factory_signature_shows_the_memory_literal_and_default() -> None:
    memory = inspect.signature(acc.A100).parameters["memory"]
    assert (memory.default, str(memory.annotation)) == ("80GB", "typing.Literal['80GB', '40GB']")


def test_factory_signature_is_keyword_only() -> None:
    params = inspect.signature(acc.H100).parameters.values()
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)


def test_factory_docstring_names_the_card_and_its_variants() -> None:
    doc = acc.A100.__doc__ or ""
    assert "A100 (NVIDIA)" in doc and "80GB by default; also 40GB" in doc


@pytest.mark.parametrize("name", acc.names())
def test_every_catalog_name_is_a_module_factory(name: str) -> None:
    factory = getattr(acc, name)
    assert (factory.__name__, factory.__module__, factory().name) == (name, "skyward.accelerators", name)


def test_factories_are_listed_by_dir_and_all() -> None:
    assert {"A100", "H100", "MI300X", "TPUv5e", "Trainium2"} <= set(dir(acc)) & set(acc.__all__)


@pytest.mark.parametrize(
    ("factory", "memory", "manufacturer"),
    [
        (acc.B200, "180GB", "NVIDIA"),
        (acc.H200, "141GB", "NVIDIA"),
        (acc.L40S, "48GB", "NVIDIA"),
        (acc.RTX_4090, "24GB", "NVIDIA"),
        (acc.RTX_PRO_6000, "96GB", "NVIDIA"),
        (acc.MI300X, "192GB", "AMD"),
        (acc.MI355X, "288GB", "AMD"),
        (acc.TPUv5p, "95GB", "Google"),
        (acc.Trainium2, "96GB", "AWS"),
    ],
)
def test_catalog_cards_carry_their_real_memory_and_maker(factory, memory: str, manufacturer: str) -> None:
    assert (factory().memory, factory().manufacturer) == (memory, manufacturer)


def test_catalog_covers_each_family() -> None:
    required = {
        "B300", "B200", "B100", "GB200", "H200", "H100", "H800", "GH200", "A100", "A800", "A40", "A30",
        "A16", "A10", "A10G", "A2", "L40S", "L40", "L4", "T4", "T4G", "V100", "P100", "P40", "P4", "K80",
        "M60", "RTX_PRO_6000", "RTX_6000_Ada", "RTX_A6000", "RTX_A5000", "RTX_A4000", "RTX_5090",
        "RTX_5080", "RTX_4090", "RTX_4080", "RTX_4070_Ti", "RTX_3090", "RTX_3080", "GTX_1080_Ti",
        "MI355X", "MI325X", "MI300X", "MI250X", "MI250", "MI210", "MI100", "Radeon_Pro_V520",
        "Radeon_Pro_V710", "TPUv2", "TPUv3", "TPUv4", "TPUv5e", "TPUv5p", "TPUv6e", "Trainium1",
        "Trainium2", "Inferentia1", "Inferentia2",
    }  # fmt: skip
    assert required <= set(acc.names())


def test_every_card_default_memory_is_one_of_its_variants() -> None:
    for card in acc.catalog().values():
        assert card.memory_for(None) in card.memory
        for form, memory in card.form_factor_memory:
            assert form in card.form_factors and memory in card.memory


def test_catalog_is_read_only() -> None:
    with pytest.raises(TypeError):
        acc.catalog()["A100"] = acc.catalog()["T4"]  # type: ignore[index]


# --- Custom -------------------------------------------------------------------------------------


def test_custom_keeps_the_name_verbatim() -> None:
    assert acc.Custom("My-GPU", memory="48GB", count=2) == Accelerator(
        name="My-GPU", memory="48GB", count=2, manufacturer="custom"
    )


def test_custom_rejects_an_empty_name() -> None:
    with pytest.raises(ConfigurationError, match="needs a name"):
        acc.Custom("  ")


def test_custom_rejects_a_non_positive_count() -> None:
    with pytest.raises(ConfigurationError, match="count"):
        acc.Custom("X", count=0)


# --- resolve ------------------------------------------------------------------------------------


def test_resolve_passes_none_through_for_cpu_only() -> None:
    assert acc.resolve(None) is None


def test_resolve_returns_an_accelerator_unchanged() -> None:
    custom = acc.Custom("Mystery", count=3)
    assert acc.resolve(custom) is custom


def test_plain_name_resolves_to_the_factory_default() -> None:
    assert acc.resolve("A100") == acc.A100()


@pytest.mark.parametrize("text", ["a100", "A100 ", "nvidia-a100", "NVIDIA A100", "Nvidia_A100"])
def test_name_resolves_whatever_the_case_separators_or_vendor_prefix(text: str) -> None:
    assert acc.resolve(text) == acc.A100()


@pytest.mark.parametrize("text", ["RTX 4090", "rtx-4090", "RTX_4090", "rtx4090", "NVIDIA GeForce RTX 4090"])
def test_spaced_and_dashed_names_resolve_to_the_canonical_card(text: str) -> None:
    assert acc.resolve(text) == acc.RTX_4090()


def test_string_with_memory_suffix_resolves_to_that_variant() -> None:
    assert acc.resolve("A100-40GB") == acc.A100(memory="40GB")


def test_string_memory_suffix_may_be_lowercase_or_short() -> None:
    assert acc.resolve("a100 40g") == acc.A100(memory="40GB")


def test_string_with_count_suffix_resolves_to_that_count() -> None:
    assert acc.resolve("A100:8") == acc.A100(count=8)


def test_string_with_times_suffix_resolves_to_that_count() -> None:
    assert acc.resolve("H100 x8") == acc.H100(count=8)


def test_string_count_may_be_fractional() -> None:
    assert acc.resolve("A100:0.5") == acc.A100(count=0.5)


def test_string_with_form_factor_resolves_to_that_form_factor() -> None:
    assert acc.resolve("H100-SXM") == acc.H100(form_factor="SXM")


def test_string_with_memory_form_factor_and_count_resolves_all_three() -> None:
    assert acc.resolve("a100-pcie-40gb:4") == acc.A100(memory="40GB", form_factor="PCIe", count=4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NVIDIA A100-SXM4-80GB", acc.A100(form_factor="SXM")),
        ("NVIDIA A100-PCIE-40GB", acc.A100(memory="40GB", form_factor="PCIe")),
        ("NVIDIA H100 80GB HBM3", acc.H100()),
        ("NVIDIA H100 NVL", acc.H100(form_factor="NVL")),
        ("Tesla T4", acc.T4()),
        ("Tesla V100-SXM2-16GB", acc.V100(memory="16GB", form_factor="SXM")),
        ("NVIDIA RTX 6000 Ada Generation", acc.RTX_6000_Ada()),
        ("NVIDIA RTX A6000", acc.RTX_A6000()),
        ("AMD Instinct MI300X", acc.MI300X()),
    ],
)
def test_names_as_device_tools_report_them_resolve(text: str, expected: Accelerator) -> None:
    assert acc.resolve(text) == expected


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("A6000", "RTX_A6000"),
        ("v5e", "TPUv5e"),
        ("trn1", "Trainium1"),
        ("inf2", "Inferentia2"),
        ("V520", "Radeon_Pro_V520"),
    ],
)
def test_common_aliases_resolve_to_the_canonical_card(alias: str, name: str) -> None:
    resolved = acc.resolve(alias)
    assert resolved is not None and resolved.name == name


def test_xtx_in_a_name_is_not_read_as_a_count() -> None:
    assert acc.resolve("rx 7900 xtx") == acc.RX_7900_XTX()


@pytest.mark.parametrize("accelerator", [getattr(acc, name)(count=4) for name in acc.names()], ids=str)
def test_str_of_every_catalog_accelerator_resolves_back_to_it(accelerator: Accelerator) -> None:
    assert acc.resolve(str(accelerator)) == accelerator


def test_unknown_name_suggests_close_catalog_names() -> None:
    with pytest.raises(ConfigurationError, match=r"Unknown accelerator 'A1000'\. Did you mean: A100, A10, "):
        acc.resolve("A1000")


def test_unknown_name_suggests_cards_through_their_aliases() -> None:
    with pytest.raises(ConfigurationError, match="Did you mean: .*Trainium2"):
        acc.resolve("trn-2x")


def test_unknown_name_points_to_custom() -> None:
    with pytest.raises(ConfigurationError, match=r'Use sky\.accelerators\.Custom\("A1000"\)'):
        acc.resolve("A1000:2")


def test_unknown_name_without_close_matches_points_to_names() -> None:
    message = r"Unknown accelerator 'zzzz'\. See sky\.accelerators\.names\(\)"
    with pytest.raises(ConfigurationError, match=message):
        acc.resolve("zzzz")


def test_string_with_an_invalid_memory_variant_names_the_valid_ones() -> None:
    with pytest.raises(ConfigurationError, match="choose memory from: 80GB, 40GB"):
        acc.resolve("A100-48GB")


def test_string_with_a_form_factor_on_a_single_form_card_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="T4 comes in a single form factor"):
        acc.resolve("T4-SXM")


@pytest.mark.parametrize("text", ["A100:0", "A100:-2"])
def test_string_with_a_non_positive_count_is_rejected(text: str) -> None:
    with pytest.raises(ConfigurationError, match="count"):
        acc.resolve(text)


def test_string_with_a_non_numeric_count_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match=r"count 'eight'"):
        acc.resolve("A100:eight")


def test_empty_string_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="empty"):
        acc.resolve("  ")


def test_non_string_value_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="got int"):
        acc.resolve(8)  # type: ignore[arg-type]


def test_configuration_errors_are_value_errors() -> None:
    with pytest.raises(ValueError):
        acc.resolve("A1000")


# --- the type stub ------------------------------------------------------------------------------


def test_type_stub_matches_the_catalog() -> None:
    # Regenerate with `python -m skyward.accelerators._stub` after editing catalog.py.
    assert STUB_PATH.read_text() == render_stub()


def test_type_stub_declares_the_runtime_signature_of_every_factory() -> None:
    stub = STUB_PATH.read_text()
    for name in acc.names():
        params = inspect.signature(getattr(acc, name)).parameters
        declared = stub.split(f"def {name}(", 1)[1].split(") -> Accelerator", 1)[0]
        assert [p for p in params if f"{p}:" in declared] == list(params)
