"""nvlink_counters: one `nvidia-smi nvlink -e` reading judged offline: a count is a warning, never
a failure (a rate needs two readings: burnin watch)."""

from __future__ import annotations

from burnin.checks.base import CommandOutput, judge
from burnin.checks.nvlink_evidence import NvlinkCounters
from burnin.result import Severity, Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

CHECK = NvlinkCounters()
PROFILE = shipped()


def _judge(text: str):
    return judge(CHECK, CommandOutput(text), PROFILE)


def test_all_zero_passes():
    result = _judge(load("nvidia_smi_nvlink_e_8xh100_zero_DERIVED.txt"))
    assert result.verdict is Verdict.PASS and result.metrics == {"gpus": 8, "counters": 8 * 18 * 3}


def test_counts_are_warnings_naming_gpu_and_link_never_a_failure():
    result = _judge(load("nvidia_smi_nvlink_e_8xh100_gpu3_link7_replays_DERIVED.txt"))
    assert result.verdict is Verdict.WARN
    assert [(f.severity, f.subject, f.evidence) for f in result.findings] == [
        (Severity.WARNING, "NVLink GPU 3 link 7", "Link 7: CRC Errors: 4500"),
        (Severity.WARNING, "NVLink GPU 3 link 7", "Link 7: Replay Errors: 12"),
    ]


def test_only_counters_it_does_not_judge_is_unknown():
    result = _judge("GPU 0: NVIDIA GB200 (UUID: GPU-1)\n\t Link 0: Tx packets: 10\n\t Link 0: Rx Errors: 0\n")
    assert result.verdict is Verdict.UNKNOWN and "no replay, recovery or CRC counter" in result.reason


def test_other_output_is_unknown():
    assert (
        _judge("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n").verdict
        is Verdict.UNKNOWN
    )
