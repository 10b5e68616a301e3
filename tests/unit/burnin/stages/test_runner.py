"""The runner end to end on this machine: real bash batches, a real fleet store."""

from __future__ import annotations

from typing import ClassVar

import pytest

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from bringup.profiles import Profile
from burnin.checks.base import Check, CommandOutput
from burnin.parsers import ParseError
from burnin.result import Action, Result, Verdict, critical
from burnin.stages import runner as runner_mod
from burnin.stages.jobs import NodeJob
from burnin.stages.runner import BurninRun
from tests.fleet import walk_to
from tests.profiles import minimal


class Echo(Check):
    """Passes when the command prints 'ok', fails on 'bad', cannot parse anything else."""

    description = "test"
    calls: ClassVar[list[str]] = []

    def __init__(self, name: str, stage: str, script: str):
        self.name, self.stage, self.script = name, stage, script

    def command(self, profile: Profile) -> str:
        return self.script

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        text = output.stdout.strip()
        if text == "ok":
            return Result.judged(self.name)
        if text == "bad":
            return Result.judged(self.name, [critical("it is bad", Action.RESEAT, text, "GPU 0")])
        raise ParseError(f"cannot read {text!r}")


PROFILE = minimal({"gpu": {"count": 8}}, name="p")


@pytest.fixture
def store(tmp_path) -> FleetStore:
    s = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    for name in ("n1", "n2"):
        s.enroll(name, rack="r", profile="p")
        walk_to(s, name, State.BURNIN)
    return s


def use_checks(monkeypatch, checks: list[Check]) -> None:
    monkeypatch.setattr(
        runner_mod, "stage_checks", lambda stage, profile: [c for c in checks if c.stage == stage]
    )


def test_failing_stage_fails_the_node_and_stops_it(monkeypatch, store) -> None:
    use_checks(
        monkeypatch, [Echo("a", "s1", "echo ok"), Echo("b", "s1", "echo bad"), Echo("c", "s2", "echo ok")]
    )
    run = store.start_run("burnin", "r")
    outcomes = BurninRun(store, run.id, ["s1", "s2"]).run([NodeJob("n1", PROFILE, None)])
    (o,) = outcomes
    assert [s.stage for s in o.stages] == ["s1"]  # stopped at its first failing stage
    assert o.verdict is Verdict.FAIL and o.final_state == "failed"
    node = store.get_node("n1")
    assert node.state == "failed"
    last = store.history("n1")[-1]
    assert last.to_state == "failed" and "it is bad" in last.reason and last.run_id == run.id
    results = {r.check: r for r in store.latest_results("n1")}
    assert results["a"].verdict == "PASS" and results["b"].verdict == "FAIL"
    assert results["b"].findings[0]["action"] == "RESEAT" and store.evidence(results["b"]).strip() == "bad"
    assert "c" not in results


def test_keep_going_runs_later_stages(monkeypatch, store) -> None:
    use_checks(monkeypatch, [Echo("b", "s1", "echo bad"), Echo("c", "s2", "echo ok")])
    (o,) = BurninRun(store, None, ["s1", "s2"], stop_on_fail=False).run([NodeJob("n1", PROFILE, None)])
    assert [s.stage for s in o.stages] == ["s1", "s2"] and o.final_state == "failed"


def test_unparseable_timed_out_and_missing_tools_are_unknown_and_never_pass(monkeypatch, store) -> None:
    checks = [
        Echo("garbage", "s1", "echo '<html>'"),
        Echo("missing", "s1", "no-such-tool-here --flag"),
        Echo("ok", "s1", "echo ok"),
    ]
    use_checks(monkeypatch, checks)
    (o,) = BurninRun(store, None, ["s1"]).run([NodeJob("n2", PROFILE, None)])
    by = {r.check: r for r in o.stages[0].results}
    assert by["garbage"].verdict is Verdict.UNKNOWN and "could not parse" in by["garbage"].reason
    assert by["missing"].verdict is Verdict.UNKNOWN and "not installed" in by["missing"].reason
    assert by["ok"].verdict is Verdict.PASS
    assert o.verdict is Verdict.UNKNOWN
    assert store.get_node("n2").state == "burnin"  # not failed, not passed: stays for a re-run
    assert {r.check: r.verdict for r in store.latest_results("n2")}["garbage"] == "UNKNOWN"


def test_a_slow_check_times_out_as_unknown(monkeypatch, store) -> None:
    slow = Echo("slow", "s1", "sleep 20; echo ok")
    slow.timeout_s = 1
    use_checks(monkeypatch, [slow, Echo("fast", "s1", "echo ok")])
    (o,) = BurninRun(store, None, ["s1"]).run([NodeJob("n1", PROFILE, None)])
    by = {r.check: r for r in o.stages[0].results}
    assert by["slow"].verdict is Verdict.UNKNOWN and "timed out" in by["slow"].reason
    assert by["fast"].verdict is Verdict.PASS


def test_results_are_saved_as_each_node_answers(monkeypatch, store) -> None:
    """A crash after the first node's answer keeps that node's results."""
    use_checks(monkeypatch, [Echo("a", "s1", "echo ok")])
    seen = []

    def boom(outcome) -> None:
        seen.append(outcome.node)
        raise KeyboardInterrupt

    run = BurninRun(store, None, ["s1"], on_node_done=boom)
    with pytest.raises(KeyboardInterrupt):
        run.run([NodeJob("n1", PROFILE, None), NodeJob("n2", PROFILE, None)])
    assert [r.check for r in store.latest_results(seen[0])] == ["a"]
