"""Garbage and cut-short outputs never pass and never raise, for every check."""

from __future__ import annotations

import json
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Verdict
from tests import sample_index
from tests.paths import REPO
from tests.profiles import shipped
from tests.unit.burnin.checks.test_no_foreign_pass import judged_part

PROFILE = shipped()
CHECKS = sorted(ALL_CHECKS)


def _judged_part(row: sample_index.Row) -> str:
    """The part of the output its check reads (after it, a cut leaves that part whole)."""
    lines = row.output().splitlines(keepends=True)
    return "".join(lines[: judged_part(row.name, lines)])


# The outputs the sample index says a stage's check passes (on their own: the times of a run
# make a pass of clock_offset's, which a cut output is not given). An output with no end (a kernel
# log, df) is whole at every line end, so a cut mid-line may pass as the lines before it do:
# tests/unit/burnin/checks/test_base_truncation.py holds those.
HEALTHY = [
    (row.check, _judged_part(row))
    for row in sample_index.check_rows()
    if row.verdict == "PASS"
    and row.check in ALL_CHECKS
    and not row.run
    and not ALL_CHECKS[row.check].whole_at_line_ends
]

robust = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@robust
@given(check=st.sampled_from(CHECKS), text=st.text(max_size=400), rc=st.sampled_from([0, 1, 255]))
def test_garbage_is_never_a_pass(check, text, rc) -> None:
    result = judge(ALL_CHECKS[check], CommandOutput(stdout=text, rc=rc), PROFILE)
    assert result.verdict is not Verdict.PASS, (check, text)


@robust
@given(case=st.sampled_from(HEALTHY), cut=st.floats(min_value=0.0, max_value=0.999))
def test_cut_short_healthy_outputs_never_pass(case, cut) -> None:
    check, text = case
    end = int(len(text.rstrip("\n")) * cut)
    if text[:end].endswith("\n"):
        end -= 1  # a cut at a line end is indistinguishable from a shorter healthy output
    result = judge(ALL_CHECKS[check], CommandOutput(stdout=text[:end], rc=0), PROFILE)
    assert result.verdict is not Verdict.PASS, (check, end)


def test_stress_without_a_gpu_library_is_unknown_not_pass() -> None:
    """The real burnin-stress on this machine (no torch/CuPy GPU): an error report, exit 2."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "burnin" / "onnode" / "stress.py"), "--seconds", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 2 and report["error"] and report["gpus"] == []
    out = CommandOutput(stdout=f"@@burnin-section stress\n{proc.stdout}", rc=2)
    result = judge(ALL_CHECKS["gpu_stress"], out, PROFILE)
    assert result.verdict is Verdict.UNKNOWN and "did not run" in result.reason


def test_pcie_collector_reads_this_machines_sysfs() -> None:
    """The collector really runs on a Linux host; with no GPU on it the check cannot pass."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "burnin" / "onnode" / "pcie_collect.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)
    assert isinstance(doc["devices"], list)
    out = CommandOutput(stdout=f"@@burnin-section idle\n{proc.stdout}", rc=0)
    assert judge(ALL_CHECKS["pcie_links"], out, PROFILE).verdict is not Verdict.PASS


def test_bmc_event_log_new_entries_since_last_run() -> None:
    check = ALL_CHECKS["bmc_event_log"]
    log = [
        {
            "id": "1",
            "created": "2026-11-01T10:00:00Z",
            "severity": "Critical",
            "message": "PSU 1 lost input",
            "message_id": "PSU0001",
        },
        {
            "id": "2",
            "created": "2026-11-20T10:00:00Z",
            "severity": "Warning",
            "message": "Fan 3 slow",
            "message_id": "FAN0001",
        },
    ]
    record = {"hardware": {"event_log": log, "event_log_read_at": "2026-11-21T00:00:00Z"}}
    first = judge(check, CommandOutput(check.from_record({**record, "previous_check_at": None})), PROFILE)
    assert first.verdict is Verdict.FAIL and first.metrics["new_entries"] == 2
    later = judge(
        check,
        CommandOutput(check.from_record({**record, "previous_check_at": "2026-11-10T00:00:00"})),
        PROFILE,
    )
    assert later.verdict is Verdict.WARN and later.metrics["new_entries"] == 1
    never = judge(check, CommandOutput(check.from_record({"hardware": {}})), PROFILE)
    assert never.verdict is Verdict.UNKNOWN and "bringup discover" in never.reason
