"""An interrupted burn-in run must not strand its nodes.

A real burn-in run in its own process (tests/unit/burnin/slow_run.py) is stopped mid-check,
once with SIGINT (Ctrl-C) and once with kill -9; a clean re-run then passes and `burnin golden`
must let the node qualify. Before the fix the stopped runs stayed ``running`` for ever and
golden excluded the node: "burn-in run 1 has not finished (still running or interrupted)".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bringup.core.errors import UserError
from bringup.fleet import runs
from bringup.fleet.lifecycle import State
from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput
from burnin.result import Result
from burnin.run.session import LocalRunRequest, run_local
from burnin.stages import runner as runner_mod
from tests.unit.burnin.golden.test_rules import RACK, FleetRack

REPO = Path(__file__).resolve().parents[4]
STAGES = "preflight,gpu,pcie"


class Ok(Check):
    description = "passes at once"

    def __init__(self, stage: str):
        self.name, self.stage = f"ok_{stage}", stage

    def command(self, profile: Profile) -> str:
        return "echo ok"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        return Result.judged(self.name)


def start_slow_run(fleet: FleetRack, node: str, marker: Path) -> subprocess.Popen:
    """A burn-in of ``node`` in its own process, returned once its first check is running."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.unit.burnin.slow_run",
            str(fleet.db),
            str(fleet.dir / "profiles"),
            node,
            str(marker),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            out, err = child.communicate()
            pytest.fail(f"the slow run did not start (rc={child.returncode}): {out}{err}")
        time.sleep(0.05)
    return child


def clean_rerun(fleet: FleetRack, node: str, monkeypatch) -> None:
    monkeypatch.setattr(runner_mod, "stage_checks", lambda stage, profile: [Ok(stage)])
    (outcome,) = run_local(fleet.store, fleet.dir / "profiles", LocalRunRequest(STAGES.split(","), node=node))
    assert outcome.verdict.value == "PASS", outcome


def test_a_run_stopped_by_ctrl_c_or_kill_9_then_a_clean_rerun_qualifies(tmp_path, monkeypatch):
    fleet = FleetRack(tmp_path)
    node = "gpu001"
    # From repair, so the stopped run is the one that moves the node into burn-in (as from configured).
    fleet.store.transition(node, State.FAILED, "test setup")
    fleet.store.transition(node, State.REPAIR, "test setup")

    interrupted = start_slow_run(fleet, node, tmp_path / "started-1")
    interrupted.send_signal(signal.SIGINT)
    interrupted.communicate(timeout=60)
    killed = start_slow_run(fleet, node, tmp_path / "started-2")
    os.kill(killed.pid, signal.SIGKILL)
    killed.communicate(timeout=60)

    clean_rerun(fleet, node, monkeypatch)
    res = fleet.run("golden", "--rack", RACK, "--stages", STAGES)
    assert res.exit_code == 0, res.output
    assert fleet.store.get_node(node).state == State.GOLDEN.value, res.stderr

    # How each run ended is on record, and each stopped run left an event on the node.
    first, second, rerun = (fleet.store.get_run(i) for i in (1, 2, 3))
    assert (first.status, first.end_reason) == ("interrupted", "SIGINT")
    assert first.controller_pid == interrupted.pid and first.finished_at is not None
    assert second.status == "abandoned" and f"pid {killed.pid}" in second.end_reason
    assert "is gone" in second.end_reason
    assert rerun.status == "done"
    events = {e.kind: e for e in fleet.store.history(node) if e.run_id == 2}
    assert "run-abandoned" in events and "is gone" in events["run-abandoned"].reason
    assert runs.holders(fleet.store) == []  # no claim outlives its run


def test_a_second_run_on_nodes_a_live_run_holds_refuses_naming_that_run(tmp_path, monkeypatch):
    fleet = FleetRack(tmp_path)
    node = "gpu001"
    first = start_slow_run(fleet, node, tmp_path / "started")
    try:
        monkeypatch.setattr(runner_mod, "stage_checks", lambda stage, profile: [Ok(stage)])
        with pytest.raises(UserError) as refused:
            run_local(fleet.store, fleet.dir / "profiles", LocalRunRequest(["preflight"], node=node))
        message = str(refused.value)
        assert "burnin run 1" in message and f"pid {first.pid}" in message, message
        assert node in message and "started" in message and "ago" in message, message
        assert fleet.store.latest_results(node) == []  # the refused run ran nothing
    finally:
        first.kill()
        first.communicate(timeout=60)


def test_golden_marks_a_killed_run_abandoned_says_so_and_does_not_wait_on_it(tmp_path):
    fleet = FleetRack(tmp_path)
    fleet.results("gpu002", stages=STAGES.split(","))  # passed before the killed re-test started
    killed = start_slow_run(fleet, "gpu002", tmp_path / "started")
    os.kill(killed.pid, signal.SIGKILL)
    killed.communicate(timeout=60)
    (held,) = runs.holders(fleet.store)
    res = fleet.run("golden", "--rack", RACK, "--stages", STAGES)
    assert res.exit_code == 0, res.output
    assert f"burnin run {held.run_id} abandoned: its controller (pid {killed.pid} on " in res.stderr
    assert "in burn-in now" not in res.stderr
    assert fleet.store.get_node("gpu002").state == State.GOLDEN.value, res.stderr
