"""Configure outcomes onto node records (a real fleet store; outcomes folded from captured runs)."""

from __future__ import annotations

import json

import pytest

from bringup.configure.outcome import EventFolder
from bringup.configure.record import record_outcome, record_outcomes
from bringup.fleet.lifecycle import State, Step, gate_refusal
from bringup.fleet.store import FleetStore
from tests.paths import TESTS
from tests.writes import write_transactions

FIXTURES = TESTS / "fixtures" / "configure"


def refusal(state: str, force: bool) -> str | None:
    """Configure's gate (was ``bringup.configure.record.refusal``, now the lifecycle's data)."""
    return gate_refusal(Step.CONFIGURE, State(state), force)


def outcomes(name: str, hosts: list[str]) -> dict:
    folder = EventFolder(hosts)
    for event in json.loads((FIXTURES / name).read_text()):
        folder.feed(event)
    return folder.finish()


@pytest.fixture
def store(store_url):
    s = FleetStore(store_url)
    for i, name in enumerate(["node01", "node02", "node03", "node04"], start=1):
        s.enroll(name, "lab", "h100-sxm-8x400g", rack_unit=i)
        for state in (State.DISCOVERED, State.PROVISIONING):
            s.transition(name, state, "test")
        s.update_node(name, ip=f"10.0.0.{i}", hardware={"gpus": ["GPU-1"]})
        s.transition(name, State.PROVISIONED, "test")
    yield s
    s.close()


@pytest.fixture(scope="module")
def first():
    return outcomes("events_first_run.json", ["node01", "node02", "node03", "node04"])


def test_first_run_moves_each_node_where_its_outcome_says(store, first):
    run = store.start_run("configure", "lab")
    results = {
        n: record_outcome(store, store.get_node(n), first[n], run.id, check=False, full=True) for n in first
    }
    assert {n: r.result for n, r in results.items()} == {
        "node01": "configured",
        "node02": "configured",
        "node03": "failed",
        "node04": "unreachable",
    }
    ok = store.get_node("node01")
    assert ok.state == "configured"
    software = ok.hardware["software"]
    assert software["packages"]["nvidia-driver-535"] == "535.183.01-0ubuntu1"
    assert software["reboot_required"] is True and software["run"] == run.id
    assert ok.hardware["gpus"] == ["GPU-1"]  # discovery's inventory is kept

    failed = store.get_node("node03")
    assert failed.state == "failed"
    ev = store.history("node03")[-1]
    assert (ev.kind, ev.from_state, ev.to_state, ev.run_id) == ("transition", "provisioned", "failed", run.id)
    assert ev.details["role"] == "nvidia_driver" and ev.details["task"] == "Install the pinned driver"
    assert "nvidia_driver" in ev.reason and "post-installation script" in ev.reason
    assert any(
        line.startswith("dpkg: error processing package nvidia-driver-535") for line in ev.details["errors"]
    )
    assert "software" not in failed.hardware

    gone = store.get_node("node04")
    assert gone.state == "provisioned"
    ev = store.history("node04")[-1]
    assert ev.kind == "unreachable" and "port 22" in ev.reason and ev.run_id == run.id


def test_check_mode_moves_nothing_and_says_what_would_change(store, first):
    run = store.start_run("configure", "lab", {"check": True})
    before = {n: store.get_node(n) for n in first}
    for n in first:
        record_outcome(store, before[n], first[n], run.id, check=True, full=True)
    for n in first:
        node = store.get_node(n)
        assert node.state == "provisioned" and node.hardware == before[n].hardware
        ev = store.history(n)[-1]
        assert ev.kind == "configure-check"
    changed = first["node01"].changed
    assert changed > 0 and f"would change {changed} task(s)" in store.history("node01")[-1].reason


def test_rerun_on_a_configured_node_keeps_it_configured_and_updates_versions(store, first):
    run = store.start_run("configure", "lab")
    record_outcome(store, store.get_node("node01"), first["node01"], run.id, check=False, full=True)
    pin = outcomes("events_pin_changed.json", ["node01"])["node01"]
    run2 = store.start_run("configure", "lab")
    result = record_outcome(store, store.get_node("node01"), pin, run2.id, check=False, full=True)
    node = store.get_node("node01")
    assert result.result == "configured" and node.state == "configured"
    assert node.hardware["software"]["packages"]["nvidia-driver-535"] == "535.216.01-0ubuntu1"
    ev = store.history("node01")[-1]
    assert ev.kind == "configure" and "fabric_manager, nvidia_driver" in ev.reason


def test_partial_run_leaves_a_provisioned_node_provisioned(store, first):
    run = store.start_run("configure", "lab", {"tags": ["base"]})
    result = record_outcome(store, store.get_node("node01"), first["node01"], run.id, check=False, full=False)
    assert result.result == "applied"
    assert store.get_node("node01").state == "provisioned"
    assert "partial run" in store.history("node01")[-1].reason


def test_golden_node_drops_to_configured_only_when_something_changed(store, first):
    for state in (State.CONFIGURED, State.BURNIN, State.GOLDEN):
        store.transition("node01", state, "test")
    unchanged = outcomes("events_second_run.json", ["node01"])["node01"]
    run = store.start_run("configure", "lab")
    record_outcome(store, store.get_node("node01"), unchanged, run.id, check=False, full=True)
    assert store.get_node("node01").state == "golden"
    record_outcome(store, store.get_node("node01"), first["node01"], run.id, check=False, full=True)
    assert store.get_node("node01").state == "configured"
    assert "needs a new burn-in" in store.history("node01")[-1].reason


def test_a_node_that_failed_configure_comes_back_through_repair(store, first):
    run = store.start_run("configure", "lab")
    record_outcome(store, store.get_node("node03"), first["node03"], run.id, check=False, full=True)
    assert store.get_node("node03").state == "failed"
    assert "mark-repaired" in refusal("failed", False)  # not until someone says the cause is fixed
    store.transition("node03", State.REPAIR, "mirror fixed")
    assert refusal("repair", False) is None
    good = outcomes("events_first_run.json", ["node03", "node01"])["node01"]  # a clean run's outcome
    partial = record_outcome(store, store.get_node("node03"), good, run.id, check=False, full=False)
    assert partial.result == "applied" and store.get_node("node03").state == "repair"
    result = record_outcome(store, store.get_node("node03"), good, run.id, check=False, full=True)
    assert (result.result, result.state) == ("configured", "configured")
    ev = store.history("node03")[-1]
    assert (ev.from_state, ev.to_state) == ("repair", "configured")


def test_refusal_by_state():
    assert refusal("provisioned", False) is None
    assert refusal("configured", False) is None
    assert refusal("repair", False) is None
    assert "--force" in refusal("golden", False)
    assert refusal("golden", True) is None
    assert "run `bringup provision` first" in refusal("discovered", True)
    assert refusal("burnin", True) is not None
    assert refusal("failed", True) is not None


def _cut_short(name: str, *, changed: bool):
    """A host the overall time limit stopped in the driver role (after a change, or not)."""
    folder = EventFolder([name])
    data = {"host": name, "role": "nvidia_driver", "task": "Install the driver", "res": {"changed": True}}
    if changed:
        folder.feed({"event": "runner_on_ok", "event_data": data})
    folder.feed({"event": "runner_on_start", "event_data": data})
    return folder.finish(stopped="the overall time limit of 60 s ran out")[name]


def test_a_host_cut_short_by_the_time_limit_keeps_its_state_and_says_where(store):
    run = store.start_run("configure", "lab")
    result = record_outcome(
        store, store.get_node("node01"), _cut_short("node01", changed=True), run.id, check=False, full=True
    )
    assert (result.result, result.state) == ("timed-out", "provisioned")
    assert store.get_node("node01").state == "provisioned"
    last = store.history("node01")[-1]
    assert "time limit of 60 s ran out during nvidia_driver: Install the driver" in last.reason


def test_a_golden_node_cut_short_after_a_change_needs_a_new_burn_in(store):
    for state in (State.CONFIGURED, State.BURNIN, State.GOLDEN):
        store.transition("node02", state, "test")
    run = store.start_run("configure", "lab")
    changed = record_outcome(
        store, store.get_node("node02"), _cut_short("node02", changed=True), run.id, check=False, full=True
    )
    assert changed.state == store.get_node("node02").state == "configured"
    for state in (State.BURNIN, State.GOLDEN):
        store.transition("node02", state, "test")
    untouched = record_outcome(
        store, store.get_node("node02"), _cut_short("node02", changed=False), run.id, check=False, full=True
    )
    assert (untouched.result, store.get_node("node02").state) == ("timed-out", "golden")


def test_the_record_step_is_one_transaction_and_a_refused_move_loses_no_other(store, first):
    """Each host's outcome was up to two transactions (its software versions, then its
    move or event). Now the run's outcomes are one. node02 retired by an operator after the run
    read it: its move to configured is refused, it stays retired, said in its result; the other
    three are recorded as before."""
    run = store.start_run("configure", "lab")
    nodes = [store.get_node(n) for n in first]
    store.transition("node02", State.RETIRED, "decommissioned", actor="operator")
    with write_transactions(store) as writes:
        results = {
            r.node: r
            for r in record_outcomes(
                store, [(n, first[n.name]) for n in nodes], run.id, check=False, full=True
            )
        }
    assert len(writes) == 1, writes
    assert {n: (r.result, r.state) for n, r in results.items()} == {
        "node01": ("configured", "configured"),
        "node02": ("configured", "retired"),
        "node03": ("failed", "failed"),
        "node04": ("unreachable", "provisioned"),
    }
    assert "state not changed: " in results["node02"].message and "retired" in results["node02"].message
    assert [store.get_node(n).state for n in first] == ["configured", "retired", "failed", "provisioned"]
    assert store.get_node("node01").hardware["software"]["run"] == run.id
    assert store.get_node("node02").hardware["software"]["run"] == run.id  # what the play installed
    assert store.history("node04")[-1].kind == "unreachable"
