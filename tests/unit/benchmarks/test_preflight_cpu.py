"""benchmarks/preflight_cpu.py runs and accounts for every preflight check that runs a command on
the node (no timing asserted)."""

from __future__ import annotations

import subprocess
import sys

from bringup.profiles.load import find_profile
from burnin.stages import stage_checks
from tests.paths import REPO


def test_it_prints_a_line_per_check_and_the_store(tmp_path):
    done = subprocess.run(
        [sys.executable, "benchmarks/preflight_cpu.py", "--nodes", "3", "--batch", "2"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    profile = find_profile("h100-sxm-8x400g", REPO / "inventories" / "profiles")
    for check in (c for c in stage_checks("preflight", profile) if c.command(profile) is not None):
        assert any(line.split()[:2] == ["judging", check.name] for line in lines), (check.name, lines)
    assert any(line.startswith("saving (batches of 2)") for line in lines), lines
    assert lines[0].startswith("preflight of 3 simulated healthy 8x H100 nodes")
