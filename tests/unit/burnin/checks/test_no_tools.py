"""Every check's own command, run by a real bash on a node that has none of the tools: UNKNOWN.

A node missing a tool is a node that could not be judged, never a pass and never a hardware
fault: a command whose loop or pipeline hides the missing tool's exit status prints an output
that reads as "nothing found" (0 drives, 0 GPUs) and would send a technician to reseat parts.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bringup.profiles.load import apply_overrides
from burnin.checks import ALL_CHECKS
from burnin.checks.base import Check, CommandOutput, judge
from burnin.result import Result, Verdict
from tests.profiles import shipped

PROFILE = shipped()
# What any Linux node has; none of the tools a check exists to run.
_BASE_TOOLS = ("awk", "sed", "grep", "cat", "head", "tail", "tr", "cut", "sort", "wc", "timeout", "sleep")
_COMMANDS = sorted(
    name
    for name, check in ALL_CHECKS.items()
    if check.applies(PROFILE) and check.command(PROFILE) is not None
)


def _judged_without_tools(check: Check, profile, tmp_path: Path) -> Result:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in _BASE_TOOLS:
        if found := shutil.which(tool):
            (bin_dir / tool).symlink_to(found)
    proc = subprocess.run(
        [shutil.which("bash") or "/bin/bash", "-c", check.command(profile)],
        capture_output=True,
        text=True,
        env={"PATH": str(bin_dir)},
        timeout=60,
        check=False,
    )
    return judge(check, CommandOutput(stdout=proc.stdout, stderr=proc.stderr, rc=proc.returncode), profile)


def test_the_shipped_profile_runs_commands() -> None:
    assert len(_COMMANDS) >= 15  # a profile that ran nothing would make the test below vacuous


@pytest.mark.parametrize("name", _COMMANDS)
def test_a_check_on_a_node_without_its_tool_is_unknown(name: str, tmp_path: Path) -> None:
    r = _judged_without_tools(ALL_CHECKS[name], PROFILE, tmp_path)
    assert r.verdict is Verdict.UNKNOWN, (r.reason, r.findings)


def test_nvme_health_without_smartctl_is_not_missing_drives(tmp_path: Path) -> None:
    # Its scan printed nothing and its loop ran no drive, with exit status 0: judged as
    # "0 NVMe drive(s) found, the profile has 2: reseat the missing drive" (FAIL, RESEAT).
    profile = apply_overrides(PROFILE, ["hardware.nvme_count=2"])
    r = _judged_without_tools(ALL_CHECKS["nvme_health"], profile, tmp_path)
    assert r.verdict is Verdict.UNKNOWN and not r.findings
    assert "smartctl" in r.reason and "not installed" in r.reason
