"""`burnin sync`'s store half on Slurm's real output (tests/fixtures/slurm-capture.md): drains
recorded once, a golden node a health check drained fails, an operator's drain is only recorded."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import func, select

from bringup.fleet.lifecycle import State
from bringup.fleet.models import CheckResult, utcnow
from bringup.fleet.store import FleetStore
from burnin.history.fleet import fleet_lemons
from burnin.parsers.slurm import parse_sinfo_nodes
from burnin.service.sync import DRAIN_EVENT, HEALTH_STAGE, apply_view
from tests.unit.burnin.parsers._samples import load
from tests.writes import write_transactions

RACK = "r07"
GOLDEN_PATH = (
    State.DISCOVERED,
    State.PROVISIONING,
    State.PROVISIONED,
    State.CONFIGURED,
    State.BURNIN,
    State.GOLDEN,
)


@pytest.fixture
def store(store_url):
    store = FleetStore(store_url)
    for name in ("node01", "node02", "node03", "node04"):
        store.enroll(name, RACK, "h100-sxm-8x400g")
        for target in GOLDEN_PATH:
            store.transition(name, target, "test")
    yield store
    store.close()


def drains(store: FleetStore, node: str) -> list:
    return [e for e in store.history(node) if e.kind == DRAIN_EVENT]


def test_health_drain_fails_the_golden_node_and_operator_drain_is_only_recorded(store):
    view = parse_sinfo_nodes(load("slurm_22_05_sinfo_N_state_user_time_reason.txt"))
    health = {
        "node01": {
            "verdict": "FAIL",
            "failed_check": "gpu_inventory",
            "finding": "7 GPU(s) found, the profile has 8 (nvidia-smi says 7 attached)",
            "reason": "bringup: gpu_inventory: 7 GPU(s) found, the profile has 8 (nvidia-smi says 7 attached)",
            "finished_at": "2026-11-24T06:41:03+00:00",
        }
    }
    result = apply_view(store, RACK, view, health, {"node03": "health result not read: timed out"})
    rows = {r.node: r for r in result.rows}
    # node01 and node03: drained by a health check -> failed, with the finding as the reason
    for node in ("node01", "node03"):
        assert store.get_node(node).state == "failed" and rows[node].state_after == "failed"
        assert rows[node].origin == "health" and rows[node].action == "recorded drain; golden -> failed"
    history = store.history("node01")
    last = [e for e in history if e.kind == "transition"][-1]
    assert last.to_state == "failed" and history[-1].kind == DRAIN_EVENT  # moved, then recorded
    assert (
        last.reason
        == "health check drained it in Slurm: gpu_inventory: 7 GPU(s) found, the profile has 8 (nvidia-smi says 7 attached)"
    )
    assert last.details["health"]["verdict"] == "FAIL"
    assert [e for e in store.history("node03") if e.kind == "transition"][-1].reason.endswith(
        "ib_ports: mlx5_6 port 1 is Down (Polling), the profile wants Active"
    )
    assert rows["node03"].note == "health result not read: timed out"
    # node02: an operator's drain, recorded as such; the node stays golden
    assert store.get_node("node02").state == "golden"
    (event,) = drains(store, "node02")
    assert event.reason == "drained in Slurm by an operator (root): disk replaced, waiting on vendor"
    assert event.details["origin"] == "operator" and event.details["since"] == "2026-11-24T06:40:40"
    assert rows["node02"].action == "recorded drain"
    # node04: not in Slurm's view
    assert rows["node04"].slurm == "not in Slurm" and rows["node04"].action == "-"
    assert result.recorded == 3 and sorted(result.failed) == ["node01", "node03"]


def test_a_drain_is_recorded_once(store):
    view = parse_sinfo_nodes(load("slurm_22_05_sinfo_N_state_user_time_reason.txt"))
    apply_view(store, RACK, view)
    again = apply_view(store, RACK, view)
    assert again.recorded == 0 and again.failed == []
    assert {r.node: r.action for r in again.rows if r.origin} == {
        "node01": "already recorded",
        "node02": "already recorded",
        "node03": "already recorded",
    }
    assert [len(drains(store, n)) for n in ("node01", "node02", "node03")] == [1, 1, 1]


def test_a_new_drain_of_the_same_node_is_recorded_again(store):
    apply_view(store, RACK, parse_sinfo_nodes("node02|drained|root(0)|2026-11-24T06:40:40|disk replaced\n"))
    apply_view(store, RACK, parse_sinfo_nodes("node02|drained|bob(1001)|2026-11-25T08:00:00|PSU swap\n"))
    assert [e.details["reason"] for e in drains(store, "node02")] == ["disk replaced", "PSU swap"]
    assert store.get_node("node02").state == "golden"


def test_nodes_not_drained_are_left_alone(store):
    result = apply_view(
        store, RACK, parse_sinfo_nodes(load("slurm_22_05_sinfo_N_state_user_time_reason_idle.txt"))
    )
    row = next(r for r in result.rows if r.node == "node01")
    assert (row.slurm, row.action, row.state_after) == ("idle", "-", "golden")
    assert drains(store, "node01") == []


def test_a_health_drain_of_a_node_not_golden_is_only_recorded(store):
    store.transition("node01", State.FAILED, "test")
    store.transition("node01", State.REPAIR, "repaired, waiting for the nightly")
    view = parse_sinfo_nodes(load("slurm_22_05_sinfo_N_state_user_time_reason.txt"))
    row = next(r for r in apply_view(store, RACK, view).rows if r.node == "node01")
    assert (row.state_before, row.state_after, row.action) == ("repair", "repair", "recorded drain")


def test_a_drain_seen_before_does_not_fail_a_node_made_golden_since(store):
    """The drain was carried into the store once (node01 -> failed); a person then repaired the
    node and took it back to golden without resuming it in Slurm. The same drain, seen again,
    is that person's business: sync does not fail the node a second time."""
    view = parse_sinfo_nodes(load("slurm_22_05_sinfo_N_state_user_time_reason.txt"))
    apply_view(store, RACK, view)
    assert store.get_node("node01").state == "failed"
    for target in (State.REPAIR, State.BURNIN, State.GOLDEN):
        store.transition("node01", target, "repaired and re-tested by hand")
    row = next(r for r in apply_view(store, RACK, view).rows if r.node == "node01")
    assert (row.state_after, row.action) == ("golden", "already recorded")
    assert store.get_node("node01").state == "golden"


def test_a_syncs_writes_are_one_transaction_and_a_refused_move_loses_no_other(store, monkeypatch):
    """Each drained node cost two transactions (its move to failed, its drain event).
    Now the sync's moves and events are one. An operator who retires node03 after sync read the
    states makes its move to failed refused under the lock: it stays retired, its drain is still
    recorded, and node01's move and every other drain are made (the refusal raised before)."""
    view = parse_sinfo_nodes(load("slurm_22_05_sinfo_N_state_user_time_reason.txt"))
    listed = store.list_nodes

    def list_then_operator(*args, **kwargs):  # another process acts between the read and the write
        nodes = listed(*args, **kwargs)
        store.transition("node03", State.RETIRED, "decommissioned", actor="operator")
        return nodes

    monkeypatch.setattr(store, "list_nodes", list_then_operator)
    with write_transactions(store) as writes:
        result = apply_view(store, RACK, view)
    assert len(writes) == 2, writes  # the operator's move, and the whole sync in one
    rows = {r.node: r for r in result.rows}
    assert store.get_node("node01").state == "failed" and rows["node01"].state_after == "failed"
    assert store.get_node("node03").state == "retired" and rows["node03"].state_after == "retired"
    assert rows["node03"].action.startswith("recorded drain; golden -> failed refused: ")
    assert "retired" in rows["node03"].action
    assert [len(drains(store, n)) for n in ("node01", "node02", "node03")] == [1, 1, 1]
    assert result.recorded == 3 and result.failed == ["node01"]


def _gpu_failed_report(serial: str, at: datetime) -> dict:
    """A node's last health result as `burnin health` writes it (HealthReport.to_dict): GPU 3 off
    the bus, named by its serial as the gpu checks name a GPU."""
    finding = f"GPU 3 (0000:9b:00.0, serial {serial}) reports a reset is required"
    reason = f"bringup: gpu_inventory: {finding}"
    return {
        "node": "node01",
        "verdict": "FAIL",
        "failed_check": "gpu_inventory",
        "finding": finding,
        "reason": reason,
        "finished_at": at.isoformat(timespec="seconds"),
        "finished_at_unix": at.timestamp(),
        "checks": [
            {
                "check": "gpu_inventory",
                "verdict": "FAIL",
                "metrics": {"gpus": 8, "serials": [f"s{i}" if i != 3 else serial for i in range(8)]},
                "findings": [
                    {
                        "message": finding,
                        "severity": "critical",
                        "action": "RESET_GPU",
                        "evidence": "GPU Reset Status: Reset Required : Yes",
                        "subject": "GPU 3",
                    }
                ],
                "reason": "",
                "wall_s": 0.04,
            },
            {
                "check": "kernel_log",
                "verdict": "FAIL",
                "metrics": {"xids": {"79": 1}, "events": 1},
                "findings": [
                    {
                        "message": "Xid 79 on GPU 0000:9b:00.0: fallen off the bus",
                        "severity": "critical",
                        "action": "RESEAT",
                        "evidence": "NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
                        "subject": "GPU 0000:9b:00.0",
                    }
                ],
                "reason": "",
                "wall_s": 0.01,
            },
            {
                "check": "disk_usage",
                "verdict": "PASS",
                "metrics": {},
                "findings": [],
                "reason": "",
                "wall_s": 0.01,
            },
        ],
    }


def _health_drain(report: dict, since: datetime) -> list:
    line = f"node01|drained|slurm(64030)|{since:%Y-%m-%dT%H:%M:%S}|{report['reason']}\n"
    return parse_sinfo_nodes(line)


def test_a_gpu_failing_in_service_again_after_its_repair_is_a_lemon(store, tmp_path):
    """A GPU fails the health check, the node is repaired, and the same GPU (same serial) fails
    again minutes later. Sync kept only a summary of the health result in an event, so the part
    was lost and `burnin lemons` named nobody. Sync now records the health result in full (each
    check's verdict, findings, metrics: serials and Xids), so lemons read it as a burn-in result."""
    serial = "1652823054722"
    first = utcnow() - timedelta(minutes=30)
    report = _gpu_failed_report(serial, first)
    apply_view(store, RACK, _health_drain(report, first), {"node01": report})
    assert store.get_node("node01").state == "failed"
    for target in (State.REPAIR, State.BURNIN, State.GOLDEN):
        store.transition("node01", target, "reseated GPU 3, re-tested")
    again = utcnow()  # after the repair
    report = _gpu_failed_report(serial, again)
    row = apply_view(store, RACK, _health_drain(report, again), {"node01": report}).rows[0]
    assert row.action == "recorded drain; golden -> failed; 3 health results kept"
    recorded = [r for r in store.latest_results("node01") if r.stage == HEALTH_STAGE]
    assert {r.check: r.verdict for r in recorded} == {
        "gpu_inventory": "FAIL",
        "kernel_log": "FAIL",
        "disk_usage": "PASS",
    }
    assert abs((recorded[0].time - again).total_seconds()) < 1  # when the check ran, not the sync
    lemons = fleet_lemons(store, RACK, timedelta(days=28), tmp_path).lemons
    assert [lemon.node for lemon in lemons] == ["node01"]
    (lemon,) = lemons
    assert "same part again" in lemon.rules
    assert any(f"GPU 3 (serial {serial}) failed again after a repair" in e for e in lemon.evidence)


def test_a_health_result_is_recorded_once_per_drain(store):
    """The same drain seen by the next sync does not record its health result a second time."""
    at = utcnow() - timedelta(minutes=5)
    report = _gpu_failed_report("1652823054722", at)
    for _ in range(2):
        apply_view(store, RACK, _health_drain(report, at), {"node01": report})
    recorded = [r for r in store.latest_results("node01") if r.stage == HEALTH_STAGE]
    assert len(recorded) == 3
    with store.reading() as s:
        count = s.execute(select(func.count()).select_from(CheckResult)).scalar_one()
    assert count == 3
