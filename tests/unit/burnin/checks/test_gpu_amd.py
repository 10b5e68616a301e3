"""The amd-smi checks: the edges the samples (index.tsv rows of amd_gpu_inventory, amd_gpu_ecc)
do not show."""

from __future__ import annotations

from bringup.profiles.load import apply_overrides, load_profile
from burnin.checks.base import CommandOutput, judge
from burnin.checks.gpu_amd import AmdGpuEcc, AmdGpuInventory, model_name
from burnin.result import Action, Verdict
from tests.profiles import SHIPPED_DIR
from tests.unit.burnin.parsers._samples import load


def _mi300x(*overrides: str):
    profile, problems = load_profile("mi300x-8x400g", SHIPPED_DIR)
    assert profile is not None, problems
    return apply_overrides(profile, overrides)


def _gpu_block(index: int, market: str) -> str:
    return f"GPU: {index}\n    ASIC:\n        MARKET_NAME: {market}\n    BUS:\n        BDF: 0000:{index:02x}:00.0\n"


def test_the_model_is_compared_without_amds_brand() -> None:
    assert model_name("AMD Instinct MI300X") == model_name("MI300X") == "MI300X"
    # rocm-smi's Card series names the form factor too (ROCm's fine-tuning guide, an MI300X OAM)
    assert model_name("AMD Instinct MI300X OAM") == "MI300X"
    # amd-smi's MARKET_NAME on an 8x MI300X in AMD's amd-smi blog: 'MI300X-O' (device id 0x74a1, OAM)
    assert model_name("MI300X-O") == "MI300X"
    text = "".join(_gpu_block(i, "AMD Instinct MI300X") for i in range(8))
    assert judge(AmdGpuInventory(), CommandOutput(text), _mi300x()).verdict is Verdict.PASS


def test_one_gpu_of_another_model_is_named_and_returned() -> None:
    text = "".join(_gpu_block(i, "MI300X" if i != 5 else "MI308X") for i in range(8))
    result = judge(AmdGpuInventory(), CommandOutput(text), _mi300x())
    assert result.verdict is Verdict.FAIL
    (finding,) = result.findings
    assert finding.subject == "GPU 5" and finding.action is Action.RMA and "MI308X" in finding.message


def test_a_missing_gpu_is_a_reseat() -> None:
    text = "".join(_gpu_block(i, "MI300X") for i in range(7)) + "@@burnin-section end\n"
    result = judge(AmdGpuInventory(), CommandOutput(text), _mi300x())
    assert result.verdict is Verdict.FAIL and [f.action for f in result.findings] == [Action.RESEAT]


def test_static_without_the_asic_section_is_unknown() -> None:
    text = "".join(f"GPU: {i}\n    BOARD:\n        PRODUCT_NAME: Instinct MI300X\n" for i in range(8))
    assert judge(AmdGpuInventory(), CommandOutput(text), _mi300x()).verdict is Verdict.UNKNOWN


def _ecc(counts: dict[int, tuple[int, int, int]], gpus: int = 8, ended: bool = True) -> str:
    out = []
    for i in range(gpus):
        ce, ue, de = counts.get(i, (0, 0, 0))
        out.append(
            f"GPU: {i}\n    ECC_BLOCKS:\n        UMC:\n            CORRECTABLE_COUNT: {ce}\n"
            f"            UNCORRECTABLE_COUNT: {ue}\n            DEFERRED_COUNT: {de}\n"
        )
    return "".join(out) + ("@@burnin-section end\n" if ended else "")


def test_a_deferred_error_is_a_reset_and_an_uncorrectable_one_an_rma() -> None:
    result = judge(AmdGpuEcc(), CommandOutput(_ecc({2: (0, 0, 1), 6: (0, 2, 0)})), _mi300x())
    assert result.verdict is Verdict.FAIL
    assert {(f.subject, f.action) for f in result.findings} == {
        ("GPU 2", Action.RESET_GPU),
        ("GPU 6", Action.RMA),
    }


def test_correctable_errors_warn() -> None:
    result = judge(AmdGpuEcc(), CommandOutput(_ecc({3: (7, 0, 0)})), _mi300x())
    assert result.verdict is Verdict.WARN and result.findings[0].action is Action.MONITOR


def test_fewer_gpus_than_the_profile_pass_nothing_but_fail_what_they_show() -> None:
    clean = judge(AmdGpuEcc(), CommandOutput(_ecc({}, gpus=7)), _mi300x())
    assert clean.verdict is Verdict.UNKNOWN and "profile has 8" in clean.reason
    bad = judge(AmdGpuEcc(), CommandOutput(_ecc({0: (0, 1, 0)}, gpus=7)), _mi300x())
    assert bad.verdict is Verdict.FAIL


def test_a_bare_output_fails_what_it_shows_and_passes_nothing() -> None:
    """A file handed in without the command's end mark may be cut between two blocks."""
    assert judge(AmdGpuEcc(), CommandOutput(_ecc({}, ended=False)), _mi300x()).verdict is Verdict.UNKNOWN
    assert (
        judge(AmdGpuEcc(), CommandOutput(_ecc({1: (3, 0, 0)}, ended=False)), _mi300x()).verdict
        is Verdict.UNKNOWN
    )
    assert (
        judge(AmdGpuEcc(), CommandOutput(_ecc({1: (0, 1, 0)}, ended=False)), _mi300x()).verdict
        is Verdict.FAIL
    )


def test_fewer_gpus_count_only_in_an_ended_output() -> None:
    short = "".join(_gpu_block(i, "MI300X") for i in range(7))
    assert judge(AmdGpuInventory(), CommandOutput(short), _mi300x()).verdict is Verdict.UNKNOWN
    ended = judge(AmdGpuInventory(), CommandOutput(short + "@@burnin-section end\n"), _mi300x())
    assert ended.verdict is Verdict.FAIL and [f.action for f in ended.findings] == [Action.RESEAT]


def test_the_real_static_is_not_ecc_output() -> None:
    text = load("amd_smi_static_4xmi300a.txt")
    assert judge(AmdGpuEcc(), CommandOutput(text), _mi300x("gpu.count=4")).verdict is Verdict.UNKNOWN


def test_burnin_health_on_amd_runs_the_amd_smi_checks_and_no_nvidia_smi() -> None:
    from burnin.service.health import commands_of, health_checks

    checks = health_checks(_mi300x())
    names = [c.name for c in checks]
    assert {"amd_gpu_inventory", "amd_gpu_ecc", "amd_xgmi_links", "kernel_log"} <= set(names)
    commands = "\n".join(commands_of(checks, _mi300x()))
    assert "amd-smi static" in commands and "amd-smi metric --ecc" in commands
    assert "nvidia-smi" not in commands and "dcgmi" not in commands
