"""A failing GPU is named by its serial, so a vendor's RMA desk can find the part: the GPU checks
put nvidia-smi's 'Serial Number' in the message and the metrics."""

from __future__ import annotations

from bringup.profiles.load import apply_overrides
from burnin.checks.base import CommandOutput, judge
from burnin.checks.gpu import GpuInventory, GpuMemoryHealth, GpuVersions
from burnin.parsers.nvidia_smi import parse_query
from burnin.result import Severity, Verdict
from tests.paths import REPO
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

PROFILE = shipped()


def test_a_failing_gpu_is_named_by_its_serial() -> None:
    text = load("nvidia_smi_q_a10_remapped_rows_pending.txt")
    serials = [g.serial for g in parse_query(text).gpus]
    assert serials and all(serials)
    result = judge(GpuMemoryHealth(), CommandOutput(stdout=text), PROFILE)
    assert result.verdict is not Verdict.PASS
    critical = [f for f in result.findings if f.severity is Severity.CRITICAL]
    assert critical and all(f"serial {serials[0]}" in f.message for f in critical)


def test_gpu_inventory_records_every_serial() -> None:
    text = load("nvidia_smi_q_8xh100_535_183.txt")
    result = judge(GpuInventory(), CommandOutput(stdout=text), PROFILE)
    assert result.metrics["serials"] == [g.serial for g in parse_query(text).gpus]
    assert len(result.metrics["serials"]) == 8


def test_a_gpu_on_another_vbios_than_its_siblings_is_named_by_its_serial() -> None:
    # The lab's gpu-vbios-old recording: GPU 3 (00000000:86:00.0) on 96.00.30.00.01, the rest on
    # 96.00.74.00.01. Without a VBIOS pin the odd one out is the part to look at.
    text = (
        REPO / "bringup/lab/standins/samples/nvidia_smi_q_8xh100_535_183_gpu3_vbios_old_DERIVED.txt"
    ).read_text()
    text = text.split("\n", 1)[1]
    result = judge(GpuVersions(), CommandOutput(stdout=text), PROFILE)
    assert result.verdict is Verdict.WARN
    (f,) = result.findings
    assert f.subject == "GPU 3" and "serial 1654522012479" in f.message and "96.00.30.00.01" in f.message
    assert f.evidence == "VBIOS Version : 96.00.30.00.01"
    pinned = judge(
        GpuVersions(), CommandOutput(stdout=text), apply_overrides(PROFILE, ["pins.vbios=96.00.74.00.01"])
    )
    (f,) = pinned.findings
    assert pinned.verdict is Verdict.FAIL and f.subject == "GPU 3" and "serial 1654522012479" in f.message
