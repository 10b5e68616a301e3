"""An acceptance's state in the fleet store (runs and events, no table of its own) and what the
same command does next: start, continue an unfinished acceptance, or re-test rejected nodes."""

from __future__ import annotations

import pytest

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from bringup.inventory.delivery import parse_delivery
from burnin.accept import ledger
from burnin.accept.run import AcceptanceRunning, AcceptRequest, NothingToTest, plan_acceptance
from tests.fleet import walk_to

RACK = "r07"
NODES = ["n1", "n2", "n3"]


def order():
    data = {
        "name": "po42",
        "nodes": {"count": 3},
        "profiles": {"h100-sxm-8x400g": {}},
        "acceptance": {"soak": "2h"},
    }
    delivery, problems = parse_delivery(data, "po42.yml")
    assert delivery is not None, problems
    return delivery


@pytest.fixture
def store(store_url) -> FleetStore:
    store = FleetStore(store_url)
    for i, name in enumerate(NODES, 1):
        store.enroll(name, RACK, "h100-sxm-8x400g", rack_unit=i)
        walk_to(store, name, State.BURNIN)
    return store


def accept_run(store, status, acceptance=None, delivery="po42", nodes=NODES, soak_s=7200.0) -> int:
    params = {"delivery": delivery, "acceptance": acceptance, "nodes": list(nodes), "soak_s": soak_s}
    run = store.start_run(ledger.ACCEPT_KIND, RACK, params)
    if status != "running":
        store.finish_run(run.id, status)
    return run.id


def burnin_run(store, acceptance, iteration, status, verdicts: dict[str, str]) -> int:
    run = store.start_run(
        "burnin", RACK, {"acceptance": acceptance, "iteration": iteration, "nodes": list(verdicts)}
    )
    for node, verdict in verdicts.items():
        store.add_result(node, "gpu", "gpu_stress", verdict, run_id=run.id, evidence=f"{node} output")
    store.finish_run(run.id, status)
    return run.id


def decide(store, acceptance, node, decision):
    details = {"delivery": "po42", "acceptance": acceptance, "decision": decision, "reasons": ["x: y"]}
    store.record_event(node, ledger.DECISION_EVENT, decision, details=details)


def request() -> AcceptRequest:
    return AcceptRequest(RACK, "po42")


def test_an_acceptance_is_a_chain_of_accept_runs_with_its_burnin_runs_tagged(store):
    first = accept_run(store, "interrupted")
    accept_run(store, "done", delivery="other")
    second = accept_run(store, "done", acceptance=first)
    (a,) = ledger.acceptances(store, RACK, "po42")
    assert (a.id, a.run_ids, a.complete, a.soak_s, a.nodes) == (
        first,
        (first, second),
        True,
        7200.0,
        tuple(NODES),
    )
    r0 = burnin_run(store, first, 0, "done", {"n1": "PASS", "n2": "FAIL"})
    r1 = burnin_run(store, first, 1, "interrupted", {"n1": "PASS"})
    burnin_run(store, 999, 1, "done", {"n3": "PASS"})  # another acceptance's
    its = ledger.iterations(store, RACK, first)
    assert [(i.iteration, i.run_id, i.finished) for i in its] == [(0, r0, True), (1, r1, False)]
    rows = ledger.results_of_runs(store, [r0, r1])
    assert [(r.node, r.run_id, r.verdict) for r in rows] == [
        ("n1", r0, "PASS"),
        ("n2", r0, "FAIL"),
        ("n1", r1, "PASS"),
    ]
    assert ledger.evidence_by_id(store, [rows[1].id]) == {rows[1].id: "n2 output"}
    assert [r.node for r in ledger.results_of_runs(store, [r0, r1], not_passing=True)] == ["n2"]
    assert ledger.stages_of_runs(store, [r0]) == {"n1": frozenset({"gpu"}), "n2": frozenset({"gpu"})}


def test_a_new_delivery_tests_every_node_and_an_unfinished_one_continues(store):
    plan = plan_acceptance(store, request(), order(), NODES)
    assert (plan.acceptance, plan.nodes, plan.soak_s, plan.redelivery_of) == (
        None,
        tuple(NODES),
        7200.0,
        None,
    )
    first = accept_run(store, "abandoned", nodes=["n1", "n2"], soak_s=60.0)  # the controller was killed
    plan = plan_acceptance(store, AcceptRequest(RACK, "po42", soak_s=3.0), order(), NODES)
    assert (plan.acceptance, plan.nodes, plan.soak_s) == (first, ("n1", "n2"), 60.0)  # as it began


def test_a_decided_delivery_re_tests_only_its_rejected_nodes_once_repaired(store):
    first = accept_run(store, "done")
    for node, decision in (("n1", "accepted"), ("n2", "rejected"), ("n3", "rejected")):
        decide(store, first, node, decision)
    store.transition("n2", State.FAILED, "acceptance: rejected")
    store.transition("n3", State.FAILED, "acceptance: rejected")
    with pytest.raises(NothingToTest, match="mark-repaired n2") as err:
        plan_acceptance(store, request(), order(), NODES)
    assert not err.value.accepted
    store.transition("n2", State.REPAIR, "vendor swapped the DIMM")
    plan = plan_acceptance(store, request(), order(), NODES)
    assert (plan.acceptance, plan.nodes, plan.redelivery_of) == (None, ("n2",), first)
    assert "mark-repaired n3" in plan.waiting["n3"]
    history = [(d.node, d.decision) for d in ledger.decisions(store, RACK, "po42")]
    assert history == [("n1", "accepted"), ("n2", "rejected"), ("n3", "rejected")]


def test_a_delivery_whose_nodes_were_all_accepted_has_nothing_to_test(store):
    first = accept_run(store, "done")
    for node in NODES:
        decide(store, first, node, "accepted")
    with pytest.raises(NothingToTest, match="every node was accepted") as err:
        plan_acceptance(store, request(), order(), NODES)
    assert err.value.accepted


def test_a_decision_made_twice_by_a_continued_acceptance_counts_once(store):
    first = accept_run(store, "error")  # crashed after deciding, before it ended
    decide(store, first, "n1", "rejected")
    decide(store, first, "n1", "accepted")  # continued: decided again
    decide(store, first, "n2", "accepted")
    assert [(d.node, d.decision) for d in ledger.decisions(store, RACK, "po42")] == [
        ("n1", "accepted"),
        ("n2", "accepted"),
    ]


def test_an_acceptance_a_live_controller_runs_is_not_run_twice(store):
    from bringup.fleet.runs import start_run

    live = start_run(
        store, ledger.ACCEPT_KIND, RACK, params={"delivery": "po42", "nodes": NODES}
    )  # this process
    with pytest.raises(AcceptanceRunning, match=f"run {live.id}"):
        plan_acceptance(store, request(), order(), NODES)
