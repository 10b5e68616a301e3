"""`burnin remediate`'s flow with stand-in edges: the plan, the action recorded as an event, the
move to repair (never to golden), escalation when the same check fails again, the budget, an
operator's drain, a busy node and a tripped breaker (burnin/service/remediate.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from bringup.configure.runner import NotInstalled
from bringup.fleet import breaker as breakers
from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from burnin.history import signals
from burnin.parsers.slurm import SlurmNode
from burnin.service.remediate import ACTOR, EVENT, Edges, NotOptedIn, Outcome, remediate_rack
from tests.inventories import write_rack

RACK = "r09"
GOLDEN_PATH = (
    State.DISCOVERED,
    State.PROVISIONING,
    State.PROVISIONED,
    State.CONFIGURED,
    State.BURNIN,
    State.GOLDEN,
)
XID79 = {
    "message": "GPU 3 (0000:9b:00.0): Xid 79, fallen off the bus",
    "severity": "critical",
    "action": "REBOOT",
    "subject": "GPU 3 (0000:9b:00.0)",
}
REASON = "bringup: kernel_log: GPU 3 (0000:9b:00.0): Xid 79, fallen off the bus"


class StandIns:
    """Edges that record what they were asked and answer as told."""

    def __init__(self, ok: bool = True):
        self.ok, self.calls = ok, []

    def edge(self, rung: str):
        def act(node: str) -> Outcome:
            self.calls.append((rung, node))
            return Outcome(self.ok, f"stand-in {rung}")

        return act

    def edges(self) -> Edges:
        return Edges(self.edge("reset_gpu"), self.edge("reconfigure"), self.edge("power_cycle"))


@pytest.fixture
def setup(tmp_path, store_url):
    inv = write_rack(
        tmp_path / "inv", RACK, {f"node0{i}": {"bmc_address": f"10.9.1.{i}", "rack_unit": i} for i in (1, 2)}
    )
    store = FleetStore(store_url)
    for name in ("node01", "node02"):
        store.enroll(name, RACK, "h100-sxm-8x400g")
        for target in GOLDEN_PATH:
            store.transition(name, target, "test")
    yield store, inv
    store.close()


def fail(store: FleetStore, node: str, finding=XID79, check="kernel_log") -> None:
    """A health check's FAIL kept by sync: the golden node leaves golden."""
    store.add_result(node, "health", check, "FAIL", findings=[finding])
    if store.get_node(node).state == "golden":
        store.transition(node, State.FAILED, "health check drained it")


def drained(node: str, state: str = "drained", reason: str = REASON) -> SlurmNode:
    return SlurmNode(node, state, True, reason=reason)


def nightly_passes(store: FleetStore, node: str) -> None:
    store.transition(node, State.BURNIN, "nightly")
    store.transition(node, State.GOLDEN, "nightly")


def events(store: FleetStore, node: str) -> list:
    return [e for e in store.history(node) if e.kind == EVENT]


def test_dry_run_plans_and_touches_nothing(setup):
    store, inv = setup
    fail(store, "node01")
    fakes = StandIns()
    res = remediate_rack(store, RACK, inv, dry_run=True, edges=fakes.edges(), view=[drained("node01")])
    (row,) = res.rows
    assert (row.node, row.decision, row.rung) == ("node01", "act", "power_cycle")
    assert fakes.calls == [] and events(store, "node01") == []
    assert store.get_node("node01").state == "failed"


def test_a_power_cycle_is_recorded_and_the_node_goes_to_repair_never_golden(setup):
    store, inv = setup
    fail(store, "node01")
    fakes = StandIns()
    res = remediate_rack(
        store, RACK, inv, dry_run=False, enabled=True, edges=fakes.edges(), view=[drained("node01")]
    )
    assert fakes.calls == [("power_cycle", "node01")]
    assert res.rows[0].state_after == "repair" and store.get_node("node01").state == "repair"
    (event,) = events(store, "node01")
    assert event.actor == "burnin remediate"
    assert event.details["rung"] == "power_cycle" and event.details["ok"] and event.details["acted"]
    move = [e for e in store.history("node01") if e.kind == "transition"][-1]
    assert (move.from_state, move.to_state) == ("failed", "repair")


def test_the_same_xid_after_two_power_cycles_goes_to_a_person(setup):
    store, inv = setup
    fakes = StandIns()
    t0 = datetime.now(timezone.utc)
    for day in range(2):
        fail(store, "node01")
        remediate_rack(
            store,
            RACK,
            inv,
            dry_run=False,
            enabled=True,
            edges=fakes.edges(),
            view=[drained("node01")],
            now=t0 + timedelta(days=day),
        )
        nightly_passes(store, "node01")
    fail(store, "node01")
    res = remediate_rack(
        store,
        RACK,
        inv,
        dry_run=False,
        enabled=True,
        edges=fakes.edges(),
        view=[drained("node01")],
        now=t0 + timedelta(days=2),
    )
    assert fakes.calls == [("power_cycle", "node01")] * 2
    assert res.rows[0].decision == "person" and "power_cycle x2" in res.rows[0].why
    assert store.get_node("node01").state == "failed"
    # the stop is said once, not at every run
    remediate_rack(
        store,
        RACK,
        inv,
        dry_run=False,
        enabled=True,
        edges=fakes.edges(),
        view=[drained("node01")],
        now=t0 + timedelta(days=2),
    )
    assert [e.details["rung"] for e in events(store, "node01")] == ["power_cycle", "power_cycle", "person"]


def test_a_failed_command_is_recorded_and_the_next_run_escalates(setup):
    store, inv = setup
    fail(store, "node01", {**XID79, "action": "RESET_GPU"}, check="gpu_inventory")
    broken = StandIns(ok=False)
    res = remediate_rack(
        store, RACK, inv, dry_run=False, enabled=True, edges=broken.edges(), view=[drained("node01")]
    )
    assert res.rows[0].done.startswith("reset_gpu failed") and store.get_node("node01").state == "failed"
    res = remediate_rack(store, RACK, inv, dry_run=True, edges=broken.edges(), view=[drained("node01")])
    assert res.rows[0].rung == "reconfigure"


def test_the_node_budget_holds_within_a_day(setup):
    store, inv = setup
    fakes = StandIns()
    now = datetime.now(timezone.utc)
    reset = {**XID79, "action": "RESET_GPU"}
    for _ in range(3):
        fail(store, "node01", reset, check="gpu_inventory")
        res = remediate_rack(
            store,
            RACK,
            inv,
            dry_run=False,
            enabled=True,
            edges=fakes.edges(),
            view=[drained("node01")],
            now=now,
        )
        if store.get_node("node01").state == "repair":
            nightly_passes(store, "node01")
    assert fakes.calls == [("reset_gpu", "node01"), ("reconfigure", "node01")]
    assert (res.rows[0].decision, res.rows[0].rung) == ("wait", "power_cycle")
    assert "node budget spent (2 of 2 within 24 h)" in res.rows[0].why
    # a day later the power cycle goes ahead
    res = remediate_rack(
        store,
        RACK,
        inv,
        dry_run=False,
        enabled=True,
        edges=fakes.edges(),
        view=[drained("node01")],
        now=now + timedelta(days=1, minutes=1),
    )
    assert fakes.calls[-1] == ("power_cycle", "node01") and store.get_node("node01").state == "repair"


def test_operator_drain_busy_node_and_tripped_breaker_are_not_touched(setup):
    store, inv = setup
    fail(store, "node01")
    fail(store, "node02")
    fakes = StandIns()
    view = [drained("node01", reason="PSU swap, ticket 4711"), drained("node02", state="draining")]
    res = remediate_rack(store, RACK, inv, dry_run=False, enabled=True, edges=fakes.edges(), view=view)
    rows = {r.node: r for r in res.rows}
    assert rows["node01"].decision == "skip" and "operator" in rows["node01"].why
    assert rows["node02"].decision == "wait" and "a job runs on it" in rows["node02"].why
    # the breaker of kernel_log trips: its failures are suspect, nothing is remediated
    for i in range(3):
        breakers.pass_drain(store, "gpu", "kernel_log", f"n{i}", window_s=600, allow=lambda n: n < 1)
    res = remediate_rack(
        store,
        RACK,
        inv,
        dry_run=False,
        enabled=True,
        edges=fakes.edges(),
        view=[drained("node01"), drained("node02")],
    )
    assert {r.decision for r in res.rows} == {"held"}
    assert fakes.calls == []


def test_it_refuses_to_act_unless_opted_in(setup, tmp_path):
    store, inv = setup
    fail(store, "node01")
    fakes = StandIns()
    with pytest.raises(NotOptedIn, match="remediation is opt-in"):
        remediate_rack(store, RACK, inv, dry_run=False, edges=fakes.edges(), view=[drained("node01")])
    assert fakes.calls == [] and events(store, "node01") == []
    # the rack's inventory opts in
    hosts = {f"node0{i}": {"bmc_address": f"10.9.1.{i}", "rack_unit": i} for i in (1, 2)}
    opted = write_rack(tmp_path / "inv2", RACK, hosts, burnin_remediate=True)
    remediate_rack(store, RACK, opted, dry_run=False, edges=fakes.edges(), view=[drained("node01")])
    assert fakes.calls == [("power_cycle", "node01")]


def test_the_history_counts_the_events_remediate_writes():
    assert (signals.REMEDIATION_EVENT, signals.REMEDIATION_ACTOR) == (EVENT, ACTOR)


def test_the_real_power_edge_cycles_through_the_bmc_and_says_when_it_cannot(tmp_path):
    """default_edges' power cycle: `bringup power cycle` for that node, against a fake BMC over
    HTTP; a BMC that does not answer is a failed outcome, not an exception."""
    import socket

    from bringup.inventory.rack import load_rack
    from burnin.service.remediate import default_edges
    from tests.doubles.redfish_server import FakeBmc, FakeBmcServer

    bmc = FakeBmc.from_fixture("dell-idrac9", password="pw")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    with FakeBmcServer([bmc]):
        hosts = {
            "node01": {"bmc_address": bmc.url, "rack_unit": 1},
            "node02": {"bmc_address": dead, "rack_unit": 2},
        }
        inv = write_rack(tmp_path / "inv", RACK, hosts, bmc_vendor="generic", bmc_allow_http=True)
        store = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
        for name in hosts:
            store.enroll(name, RACK, "h100-sxm-8x400g")
            for target in GOLDEN_PATH:
                store.transition(name, target, "test")
            store.transition(name, State.FAILED, "health check drained it")
        loaded, problems = load_rack(RACK, inv)
        assert loaded is not None, problems
        edges = default_edges(store, loaded)
        ok = edges.power_cycle("node01")
        bad = edges.power_cycle("node02")
    assert ok.ok and ok.message == "power cycle: On -> On", ok
    assert not bad.ok and bad.message.startswith("power cycle: unreachable: "), bad


def test_it_acts_on_nothing_while_a_nightly_holds_the_rack(setup):
    """A node the nightly holds may be failed mid-night and still be its partner or under test:
    remediation takes the rack's nightly lock, so it never power-cycles a node under test."""
    from burnin.service.nightly_lock import NightlyBusy, nightly_lock

    store, inv = setup
    fail(store, "node01")
    fakes = StandIns()
    with nightly_lock(store, RACK), pytest.raises(NightlyBusy):
        remediate_rack(
            store, RACK, inv, dry_run=False, enabled=True, edges=fakes.edges(), view=[drained("node01")]
        )
    assert fakes.calls == [] and store.get_node("node01").state == "failed"


def test_a_remediated_node_is_the_nightlys_to_retest_and_resumed_only_once_golden(setup):
    """What remediation leaves (the node in repair, still drained with the health check's
    reason) is what the nightly re-tests (burnin/service/nightly_plan.py); not proven it stays
    drained, golden again it is resumed."""
    from burnin.service.nightly_plan import NodeView, Return, Why, plan_night, return_action

    store, inv = setup
    fail(store, "node01")
    slurm_now = drained("node01")
    remediate_rack(store, RACK, inv, dry_run=False, enabled=True, edges=StandIns().edges(), view=[slurm_now])
    views = [
        NodeView("node01", store.get_node("node01").state, slurm_now, profile="h100"),
        NodeView("node02", "golden", SlurmNode("node02", "idle", False), profile="h100"),
    ]
    night = plan_night(views, live_runs=())
    assert [(p.node, p.why) for p in night.tested] == [("node01", Why.REPAIRED)]
    assert return_action("repair", slurm_now, 7).action is Return.KEEP
    assert return_action("golden", slurm_now, 7).action is Return.RESUME


def test_an_edge_that_raises_is_a_failed_rung_and_the_other_nodes_still_get_theirs(setup):
    store, inv = setup
    fail(store, "node01")
    fail(store, "node02")
    fakes = StandIns()

    def no_ansible(node: str) -> Outcome:
        raise NotInstalled("no site.yml in /nowhere (set BRINGUP_PLAYBOOKS_DIR)")

    reconf = {**XID79, "action": "RECONFIGURE"}
    store.add_result("node01", "health", "fabric_manager", "FAIL", findings=[reconf])
    edges = Edges(fakes.edge("reset_gpu"), no_ansible, fakes.edge("power_cycle"))
    res = remediate_rack(
        store,
        RACK,
        inv,
        dry_run=False,
        enabled=True,
        edges=edges,
        view=[drained("node01"), drained("node02")],
    )
    rows = {r.node: r for r in res.rows}
    assert rows["node01"].done.startswith("reconfigure failed: no site.yml"), rows["node01"]
    assert store.get_node("node01").state == "failed"
    assert [e.details["ok"] for e in events(store, "node01")] == [False]
    assert fakes.calls == [("power_cycle", "node02")] and store.get_node("node02").state == "repair"
