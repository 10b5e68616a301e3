"""The AMD checks' fallback: the command runs amd-smi when it is installed and answers, else
rocm-smi, and the output says which answered; each tool's counts give the same findings. The
commands run under bash with stand-in tools on a PATH of their own (nothing else is found)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from bringup.profiles.load import apply_overrides, load_profile
from burnin.checks.base import CommandOutput, judge
from burnin.checks.gpu_amd import AmdGpuEcc, AmdGpuInventory
from burnin.result import Action, Result, Verdict
from tests.profiles import SHIPPED_DIR
from tests.unit.burnin.parsers._samples import load


def _mi300x(*overrides: str):
    profile, problems = load_profile("mi300x-8x400g", SHIPPED_DIR)
    assert profile is not None, problems
    return apply_overrides(profile, overrides)


HEADER = "=" * 28 + " ROCm System Management Interface " + "=" * 28
END = ["=" * 90, "=" * 34 + " End of ROCm SMI Log " + "=" * 35]


def _rocm_product(models: list[str]) -> str:
    lines = ["", "", HEADER, "=" * 38 + " Product Info " + "=" * 38]
    lines += [f"GPU[{i}]\t\t: Card Series: \t\t{m}" for i, m in enumerate(models)]
    lines += ["=" * 90, "=" * 39 + " PCI Bus ID " + "=" * 39]
    lines += [f"GPU[{i}]\t\t: PCI Bus: 0000:{0x0C + i:02X}:00.0" for i in range(len(models))]
    return "\n".join([*lines, *END]) + "\n"


def _rocm_ras(counts: dict[int, tuple[int, int]], gpus: int = 8) -> str:
    lines = ["", "", HEADER, "=" * 40 + " RAS Info " + "=" * 40]
    for i in range(gpus):
        ce, ue = counts.get(i, (0, 0))
        lines += [
            "",
            f"GPU[{i}]: \tRAS INFO",
            "         Block       Status    Correctable Error  Uncorrectable Error  ",
        ]
        lines += [
            f"           UMC        ENABLED  {ce:>17}  {ue:>19}  ",
            "         ATHUB        ENABLED  ",
            "_" * 90,
        ]
    return "\n".join([*lines, "=" * 90, END[1]]) + "\n"


def _amd_static(models: list[str]) -> str:
    return "".join(
        f"GPU: {i}\n    ASIC:\n        MARKET_NAME: {m}\n    BUS:\n        BDF: 0000:{i:02x}:00.0\n"
        for i, m in enumerate(models)
    )


def _tool(bin_dir: Path, name: str, stdout: str, rc: int = 0, stderr: str = "") -> None:
    """A stand-in printing with bash builtins only: the command's PATH holds nothing else."""
    script = bin_dir / name
    script.write_text(
        f"#!/bin/bash\nprintf '%s' {shlex.quote(stdout)}\nprintf '%s' {shlex.quote(stderr)} >&2\nexit {rc}\n"
    )
    script.chmod(0o755)


def _run(check, bin_dir: Path, profile) -> tuple[CommandOutput, Result]:
    done = subprocess.run(
        ["/bin/bash", "-c", check.command(profile)],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": str(bin_dir)},
    )
    output = CommandOutput(done.stdout, done.stderr, done.returncode)
    return output, judge(check, output, profile)


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    d = tmp_path / "bin"
    d.mkdir()
    return d


def test_amd_smi_answering_is_read_and_rocm_smi_never_run(bin_dir: Path) -> None:
    _tool(bin_dir, "amd-smi", _amd_static(["MI300X"] * 8))
    _tool(bin_dir, "rocm-smi", "", rc=99)  # would fail the command were it run
    output, result = _run(AmdGpuInventory(), bin_dir, _mi300x())
    assert output.rc == 0 and output.stdout == _amd_static(["MI300X"] * 8) + "@@burnin-section end\n"
    assert result.verdict is Verdict.PASS


def test_without_amd_smi_rocm_smi_answers_and_is_judged_alike(bin_dir: Path) -> None:
    _tool(
        bin_dir,
        "rocm-smi",
        _rocm_product(["AMD Instinct MI300X"] * 5 + ["AMD Instinct MI308X"] + ["AMD Instinct MI300X"] * 2),
    )
    output, result = _run(AmdGpuInventory(), bin_dir, _mi300x())
    assert (
        "@@burnin-section no-amd-smi\namd-smi is not installed\n@@burnin-section rocm-smi\n" in output.stdout
    )
    assert result.verdict is Verdict.FAIL
    (finding,) = result.findings
    assert (finding.subject, finding.action) == ("GPU 5", Action.RMA)
    assert "GPU 5 (0000:11:00.0)" in finding.message and "MI308X" in finding.message


def test_a_broken_amd_smi_falls_back_to_rocm_smi(bin_dir: Path) -> None:
    """amd-smi installed but failing (its library missing): rocm-smi is read instead."""
    _tool(bin_dir, "amd-smi", "", rc=1, stderr="ModuleNotFoundError: No module named 'amdsmi'\n")
    _tool(bin_dir, "rocm-smi", _rocm_product(["AMD Instinct MI300X"] * 8))
    output, result = _run(AmdGpuInventory(), bin_dir, _mi300x())
    assert "amd-smi exited 1 and printed nothing\n" in output.stdout
    assert result.verdict is Verdict.PASS


def test_a_gpu_missing_from_rocm_smis_whole_log_is_a_reseat(bin_dir: Path) -> None:
    _tool(bin_dir, "rocm-smi", _rocm_product(["AMD Instinct MI300X"] * 7))
    _, result = _run(AmdGpuInventory(), bin_dir, _mi300x())
    assert result.verdict is Verdict.FAIL and [f.action for f in result.findings] == [Action.RESEAT]


@pytest.mark.parametrize("check", [AmdGpuInventory(), AmdGpuEcc()])
def test_neither_tool_is_unknown_naming_both(check, bin_dir: Path) -> None:
    output, result = _run(check, bin_dir, _mi300x())
    assert output.rc == 127 and result.verdict is Verdict.UNKNOWN
    assert "amd-smi is not installed" in result.reason and "rocm-smi is not installed" in result.reason


@pytest.mark.parametrize("check", [AmdGpuInventory(), AmdGpuEcc()])
def test_rocm_smi_failing_too_is_unknown_naming_both(check, bin_dir: Path) -> None:
    """rocm-smi's own refusal ('No DRM devices') prints no log: nothing is judged."""
    _tool(bin_dir, "amd-smi", "", rc=2)
    _tool(bin_dir, "rocm-smi", "\n\nERROR: No DRM devices available. Exiting\n", rc=1)
    output, result = _run(check, bin_dir, _mi300x())
    assert output.rc == 1 and result.verdict is Verdict.UNKNOWN
    assert "amd-smi exited 2" in result.reason and "rocm-smi" in result.reason


def test_rocm_smi_cut_before_its_end_line_is_unknown(bin_dir: Path) -> None:
    text = _rocm_ras({})
    _tool(bin_dir, "rocm-smi", text[: text.index("GPU[7]")], rc=0)
    _, result = _run(AmdGpuEcc(), bin_dir, _mi300x())
    assert result.verdict is Verdict.UNKNOWN and "End of ROCm SMI Log" in result.reason


@pytest.mark.parametrize(
    ("counts", "verdict", "actions"),
    [
        ({}, Verdict.PASS, []),
        ({3: (7, 0)}, Verdict.WARN, []),
        ({3: (0, 2)}, Verdict.FAIL, [Action.RMA]),
    ],
)
def test_rocm_smis_ras_counts_give_amd_smis_findings(bin_dir: Path, counts, verdict, actions) -> None:
    _tool(bin_dir, "rocm-smi", _rocm_ras(counts))
    _, result = _run(AmdGpuEcc(), bin_dir, _mi300x())
    assert result.verdict is verdict
    assert [f.action for f in result.findings if f.severity.value == "critical"] == actions
    amd = (
        "GPU: 3\n    ECC_BLOCKS:\n        UMC:\n"
        f"            CORRECTABLE_COUNT: {counts.get(3, (0, 0))[0]}\n"
        f"            UNCORRECTABLE_COUNT: {counts.get(3, (0, 0))[1]}\n            DEFERRED_COUNT: 0\n"
    )
    if counts:  # the same count read from amd-smi: the same message
        same = judge(AmdGpuEcc(), CommandOutput(amd + "@@burnin-section end\n"), _mi300x("gpu.count=1"))
        assert [f.message for f in same.findings] == [f.message for f in result.findings]


def test_a_gpu_rocm_smi_read_no_count_of_is_no_pass(bin_dir: Path) -> None:
    text = _rocm_ras({}).replace(
        "           UMC        ENABLED                  0                    0  \n", "", 1
    )
    _tool(bin_dir, "rocm-smi", text)
    _, result = _run(AmdGpuEcc(), bin_dir, _mi300x())
    assert result.verdict is Verdict.UNKNOWN and "GPU(s) [0]" in result.reason


def test_a_bare_rocm_smi_output_is_read_as_rocm_smis() -> None:
    """`burnin evaluate` hands a saved file over without the command's sections."""
    result = judge(
        AmdGpuInventory(),
        CommandOutput(load("rocm_smi_showproduct_4xmi300a.txt")),
        _mi300x("gpu.count=4", "gpu.model=MI300A"),
    )
    assert result.verdict is Verdict.PASS
    ras = judge(AmdGpuEcc(), CommandOutput(_rocm_ras({}, gpus=8)), _mi300x())
    assert ras.verdict is Verdict.PASS


def test_the_checks_stay_amd_only() -> None:
    from burnin.checks.vendor import check_vendor

    for check in (AmdGpuInventory(), AmdGpuEcc()):
        assert check_vendor(check) == "amd" and check_vendor(check, _mi300x()) == "amd"
