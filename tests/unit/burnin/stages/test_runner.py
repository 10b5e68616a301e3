"""The runner end to end on this machine: real bash batches, a real fleet store."""

from __future__ import annotations

from typing import ClassVar

import pytest
from sqlalchemy import event

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from bringup.fleet.transitions import states_of
from bringup.profiles.load import Profile
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


class FailsOnProfile(Echo):
    """Prints 'bad' on nodes of the profile named ``bad``, 'ok' elsewhere."""

    def command(self, profile: Profile) -> str:
        return "echo bad" if profile.name == "bad" else "echo ok"


def test_the_closing_moves_are_one_transaction_and_a_refused_one_loses_no_other(monkeypatch, store) -> None:
    """Each node's closing write (its move to failed, or its `burnin` event) was a
    transaction of its own; now they are one. An operator who retires a node during the run
    after the runner read the states makes that node's move to failed refused under the lock: it
    stays retired, and the other nodes are still closed."""
    store.enroll("n3", rack="r", profile="p")
    walk_to(store, "n3", State.BURNIN)
    use_checks(monkeypatch, [FailsOnProfile("a", "s1", "")])
    bad = minimal({"gpu": {"count": 8}}, name="bad")

    def states_then_operator(store_, names):  # another process acts between the read and the write
        states = states_of(store_, names)
        store.transition("n2", State.RETIRED, "decommissioned", actor="operator")
        return states

    monkeypatch.setattr(runner_mod, "states_of", states_then_operator)
    run = store.start_run("burnin", "r")
    runner = BurninRun(store, run.id, ["s1"])
    writes: list[int] = []  # write transactions committed while the run closes its nodes
    conclude = runner._conclude_all

    def counted(outcomes) -> None:
        wrote: set[int] = set()

        def on_statement(conn, cursor, statement, *args) -> None:
            if statement.lstrip().upper().startswith(("INSERT", "UPDATE")):
                wrote.add(id(conn))

        def on_commit(conn) -> None:
            if id(conn) in wrote:
                writes.append(1)
                wrote.discard(id(conn))

        event.listen(store.engine, "after_cursor_execute", on_statement)
        event.listen(store.engine, "commit", on_commit)
        try:
            conclude(outcomes)
        finally:
            event.remove(store.engine, "after_cursor_execute", on_statement)
            event.remove(store.engine, "commit", on_commit)

    runner._conclude_all = counted
    jobs = [NodeJob("n1", bad, None), NodeJob("n2", bad, None), NodeJob("n3", PROFILE, None)]
    outcomes = {o.node: o for o in runner.run(jobs)}
    assert len(writes) == 2  # the operator's move, and every node's closing write in one
    assert outcomes["n1"].final_state == "failed" and store.get_node("n1").state == "failed"
    last = store.history("n1")[-1]
    assert last.run_id == run.id and "it is bad" in last.reason and last.from_state == "burnin"
    assert outcomes["n2"].final_state == "retired" and store.get_node("n2").state == "retired"
    assert store.history("n2")[-1].to_state == "retired"  # nothing recorded after the operator's move
    assert outcomes["n3"].final_state == "burnin" and outcomes["n3"].verdict is Verdict.PASS
    note = store.history("n3")[-1]
    assert (note.kind, note.reason, note.run_id, note.details) == (
        "burnin",
        "stages s1: PASS",
        run.id,
        {"s1": "PASS"},
    )


def test_a_group_stage_is_told_the_partners_and_a_plain_run_has_none(monkeypatch, store) -> None:
    """The nightly's golden partners reach the group stages (the ib pairs, the nccl
    anchors) through their context; a run without partners hands them none, as before."""
    seen = []

    def stage(ctx):
        seen.append((sorted(j.name for j in ctx.jobs), ctx.partners))
        return {j.name: [(Result.judged("g"), "")] for j in ctx.jobs}

    monkeypatch.setattr(runner_mod, "group_stages", lambda: {"nccl": stage})
    jobs = [NodeJob("n1", PROFILE, None), NodeJob("n2", PROFILE, None)]
    BurninRun(store, None, ["nccl"], partners=frozenset({"n2"})).run(jobs)
    BurninRun(store, None, ["nccl"]).run(jobs)
    assert seen == [(["n1", "n2"], frozenset({"n2"})), (["n1", "n2"], frozenset())]
