"""The remediation ladder: rungs, escalation, budgets, the breaker (burnin/service/remediate_ladder.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.result import Action
from burnin.service.remediate_ladder import (
    LADDER,
    Attempt,
    Decision,
    Failure,
    Policy,
    Rung,
    decide,
    plan,
)

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=timezone.utc)
XID = Failure("kernel_log", (Action.REBOOT,))


def ago(hours: float) -> datetime:
    return NOW - timedelta(hours=hours)


def test_the_finding_picks_the_first_rung():
    assert decide("n1", Failure("gpu_inventory", (Action.RESET_GPU,)), [], NOW).rung is Rung.RESET_GPU
    assert decide("n1", Failure("fabric_manager", (Action.RECONFIGURE,)), [], NOW).rung is Rung.RECONFIGURE
    step = decide("n1", XID, [], NOW)
    assert (step.decision, step.rung) == (Decision.ACT, Rung.POWER_CYCLE)


def test_a_finding_that_needs_hands_stops_at_once():
    step = decide("n1", Failure("gpu_memory", (Action.RESET_GPU, Action.RMA)), [], NOW)
    assert step.decision is Decision.PERSON
    assert "RMA" in step.why


def test_the_same_failure_after_a_rung_escalates():
    tried = [Attempt("n1", ago(30), "gpu_inventory", Rung.RESET_GPU)]
    step = decide("n1", Failure("gpu_inventory", (Action.RESET_GPU,)), tried, NOW)
    assert (step.decision, step.rung) == (Decision.ACT, Rung.RECONFIGURE)
    assert "failed again after reset_gpu x1" in step.why


def test_another_check_does_not_escalate():
    tried = [Attempt("n1", ago(30), "disk_usage", Rung.RESET_GPU)]
    assert decide("n1", Failure("gpu_inventory", (Action.RESET_GPU,)), tried, NOW).rung is Rung.RESET_GPU


def test_two_power_cycles_for_the_same_check_then_a_person():
    one = [Attempt("n1", ago(30), "kernel_log", Rung.POWER_CYCLE)]
    assert decide("n1", XID, one, NOW).rung is Rung.POWER_CYCLE
    two = one + [Attempt("n1", ago(26), "kernel_log", Rung.POWER_CYCLE)]
    step = decide("n1", XID, two, NOW)
    assert step.decision is Decision.PERSON
    assert "power_cycle x2" in step.why


def test_node_budget_waits():
    tried = [
        Attempt("n1", ago(1), "disk_usage", Rung.RECONFIGURE),
        Attempt("n1", ago(2), "x", Rung.RESET_GPU),
    ]
    step = decide("n1", XID, tried, NOW)
    assert step.decision is Decision.WAIT
    assert "node budget" in step.why
    # a day later the budget is back
    assert decide("n1", XID, tried, NOW + timedelta(hours=23)).decision is Decision.ACT


def test_fleet_budget_waits_but_not_for_a_node_already_counted():
    policy = Policy(fleet_max=2)
    tried = [Attempt("a", ago(0.1), "x", Rung.RESET_GPU), Attempt("b", ago(0.2), "x", Rung.RESET_GPU)]
    assert decide("c", XID, tried, NOW, policy=policy).decision is Decision.WAIT
    assert decide("a", XID, tried, NOW, policy=policy).decision is Decision.ACT


def test_a_tripped_breaker_holds_and_a_busy_node_waits():
    assert decide("n1", XID, [], NOW, tripped=frozenset({"kernel_log"})).decision is Decision.HELD
    step = decide("n1", XID, [], NOW, busy="a job runs on it")
    assert (step.decision, step.rung) == (Decision.WAIT, Rung.POWER_CYCLE)


actions = st.lists(st.sampled_from(list(Action)), max_size=3).map(tuple)
checks = st.sampled_from(["kernel_log", "gpu_inventory", "gpu_ecc"])
nodes = st.sampled_from([f"n{i}" for i in range(8)])
attempts = st.lists(
    st.builds(
        Attempt,
        nodes,
        st.floats(0, 72).map(ago),
        checks,
        st.sampled_from(LADDER[:-1]),
    ),
    max_size=12,
)
failed = st.lists(
    st.tuples(nodes, st.builds(Failure, checks, actions), st.sampled_from(["", "busy"])),
    max_size=12,
    unique_by=lambda t: t[0],
)
policies = st.builds(Policy, st.integers(0, 3), st.just(86400.0), st.integers(0, 4), st.just(3600.0))


@settings(max_examples=300, deadline=None)
@given(failed, attempts, policies, st.frozensets(checks))
def test_a_plan_never_passes_a_budget_nor_the_breaker(failed, tried, policy, tripped):
    steps = plan(failed, tried, NOW, tripped=tripped, policy=policy)
    acts = [s for s in steps if s.decision is Decision.ACT]
    busy = {n for n, _, b in failed if b}
    for s in acts:
        assert s.check not in tripped
        assert s.node not in busy
        assert s.rung is not None and s.rung is not Rung.PERSON
        in_day = sum(1 for a in tried if a.node == s.node and a.time >= NOW - timedelta(days=1))
        assert in_day + 1 <= policy.node_max
    recent = {a.node for a in tried if a.time >= NOW - timedelta(hours=1)}
    assert len(recent | {s.node for s in acts}) <= max(policy.fleet_max, len(recent))


@settings(max_examples=300, deadline=None)
@given(nodes, st.builds(Failure, checks, actions), attempts)
def test_the_ladder_never_steps_down_to_a_spent_rung(node, failure, tried):
    step = decide(node, failure, tried, NOW, policy=Policy(node_max=99, fleet_max=99))
    policy = Policy()
    same = [a for a in tried if a.node == node and a.check == failure.check]
    spent = {r for r in LADDER[:-1] if sum(1 for a in same if a.rung is r) >= policy.tries[r]}
    assert step.rung not in spent
    # and never below the rung the finding starts at
    start = max(
        (
            LADDER.index(
                {
                    Action.RESET_GPU: Rung.RESET_GPU,
                    Action.RECONFIGURE: Rung.RECONFIGURE,
                    Action.REBOOT: Rung.POWER_CYCLE,
                }.get(a, Rung.PERSON)
            )
            for a in failure.actions
        ),
        default=LADDER.index(Rung.PERSON),
    )
    assert step.rung is not None and LADDER.index(step.rung) >= start
