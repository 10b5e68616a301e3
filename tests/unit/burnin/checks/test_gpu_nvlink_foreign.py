"""The nvlink check named on another tool's GPU list: UNKNOWN, not "0 of 18 NVLinks active".

`nvidia-smi -L` and gpu-burn's log name their GPUs in the same "GPU i: NAME (UUID: ...)" lines as
`nvidia-smi nvlink -s`, but carry no link line: judged as NVLink status they read as GPUs with
every NVLink down (FAIL), a false alarm sending a node to the NVSwitch tray.
"""

from __future__ import annotations

import pytest

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

PROFILE = shipped()


@pytest.mark.parametrize("sample", ["nvidia_smi_L_4xh100_with_mig.txt", "gpu_burn_8xa100_ok.txt"])
def test_a_gpu_list_without_link_lines_is_not_nvlink_status(sample: str) -> None:
    r = judge(ALL_CHECKS["nvlink"], CommandOutput(stdout=load(sample), rc=0), PROFILE)
    assert r.verdict is Verdict.UNKNOWN, r.findings
    assert "NVLink" in r.reason


@pytest.mark.parametrize(
    ("sample", "verdict"),
    [
        ("nvidia_smi_nvlink_s_all_links_inactive.txt", Verdict.FAIL),
        ("nvidia_smi_nvlink_s_h200_degraded_links.txt", Verdict.FAIL),
    ],
)
def test_real_nvlink_status_is_still_judged(sample: str, verdict: Verdict) -> None:
    r = judge(ALL_CHECKS["nvlink"], CommandOutput(stdout=load(sample), rc=0), PROFILE)
    assert r.verdict is verdict, (r.reason, r.findings)
