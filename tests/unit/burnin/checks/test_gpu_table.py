"""The default nvidia-smi table judged on what it shows (docs/burnin.md, "A PASS covers what the
output shows"): the GPUs it lists against gpu.count, their names against gpu.model (a name the
table shortens with '...' against the model's start), its Driver Version against pins.driver, a
volatile uncorrected ECC count, MIG mode, and the readings nvidia-smi could not take (ERR!). A
table that does not end with its closing border was cut; one that ends before its Processes box
may have been cut after the GPUs it shows: what it shows is judged, and it cannot pass."""

from __future__ import annotations

import pytest

from bringup.profiles.load import apply_overrides
from burnin.checks.base import CommandOutput, judge
from burnin.checks.evidence import EVIDENCE_CHECKS
from burnin.result import Action, Severity, Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

H100_550 = apply_overrides(shipped(), ("pins.driver=550.90.07",))
TABLE_550 = load("nvidia_smi_table_550.txt")


def _table(text: str, profile=H100_550):
    return judge(EVIDENCE_CHECKS["gpu_table"], CommandOutput(stdout=text, rc=0), profile)


def _critical(result) -> set[Action]:
    return {f.action for f in result.findings if f.severity is Severity.CRITICAL}


def test_eight_h100s_on_their_driver_pass() -> None:
    r = _table(TABLE_550)
    assert r.verdict is Verdict.PASS, r.findings
    assert r.not_covered == ()


def test_another_driver_fails_reconfigure() -> None:
    r = _table(TABLE_550, shipped())
    assert r.verdict is Verdict.FAIL and _critical(r) == {Action.RECONFIGURE}


def test_one_l40s_on_the_h100_profile_is_the_wrong_part_gpus_missing_and_the_wrong_driver() -> None:
    r = _table(load("nvidia_smi_table_l40s_595_80_load.txt"), shipped())
    assert r.verdict is Verdict.FAIL
    assert _critical(r) == {Action.RECONFIGURE, Action.RESEAT, Action.RMA}, r.findings


def test_a_shortened_name_is_judged_on_its_start() -> None:
    text = TABLE_550.replace("NVIDIA H100 80GB HBM3     ", "NVIDIA H100 80GB ...      ")
    assert text.count("NVIDIA H100 80GB ...") == 8
    assert _table(text).verdict is Verdict.PASS
    wrong = TABLE_550.replace("NVIDIA H100 80GB HBM3     ", "NVIDIA A100-SXM4-...      ")
    assert _critical(_table(wrong)) == {Action.RMA}


def test_a_fan_nvidia_smi_cannot_read_fails() -> None:
    r = _table(load("nvidia_smi_table_geforce_525_fan_err.txt"), apply_overrides(shipped(), ("gpu.count=1",)))
    fan = [f for f in r.findings if "fan" in f.message.lower()]
    assert [(f.severity, f.action) for f in fan] == [(Severity.CRITICAL, Action.RMA)], r.findings


def test_a_volatile_uncorrected_ecc_error_fails_and_mig_mode_warns() -> None:
    lines = TABLE_550.splitlines(keepends=True)
    gpu3 = next(i for i, ln in enumerate(lines) if ln.startswith("|   3  NVIDIA"))
    lines[gpu3] = lines[gpu3].replace("Off |                    0 |", "Off |                    2 |")
    lines[gpu3 + 2] = lines[gpu3 + 2].replace("Disabled |", " Enabled |")
    r = _table("".join(lines))
    assert r.verdict is Verdict.FAIL
    assert [(f.severity, f.action, f.subject) for f in r.findings] == [
        (Severity.CRITICAL, Action.RESET_GPU, "GPU 3"),
        (Severity.WARNING, Action.RECONFIGURE, "GPU 3"),
    ]


@pytest.mark.parametrize("gpu", [4, 8])
def test_a_table_without_its_processes_box_may_be_cut_and_never_passes(gpu: int) -> None:
    lines = TABLE_550.splitlines(keepends=True)
    end = next((i for i, ln in enumerate(lines) if ln.startswith(f"|   {gpu}  NVIDIA")), 41)
    r = _table("".join(lines[:end]))  # ends at the closing border of GPU 3, or of GPU 7
    assert r.verdict is Verdict.UNKNOWN, r.findings
    assert "Processes" in r.reason


@pytest.mark.parametrize("keep", [5, 12, 14, -1])
def test_a_table_cut_inside_is_unknown(keep: int) -> None:
    lines = TABLE_550.splitlines(keepends=True)
    assert _table("".join(lines[:keep])).verdict is Verdict.UNKNOWN


def test_a_pasted_command_line_with_i_shows_no_count() -> None:
    lines = TABLE_550.splitlines(keepends=True)
    gpu1 = next(i for i, ln in enumerate(lines) if ln.startswith("|   1  NVIDIA"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("|   7  NVIDIA")) + 4
    one = "$ nvidia-smi -i 0\n" + "".join(lines[:gpu1] + lines[end:])
    r = _table(one)
    assert r.verdict is Verdict.PASS, (r.reason, r.findings)
    assert "gpu.count" in r.not_covered
