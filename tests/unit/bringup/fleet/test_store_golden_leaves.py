"""A golden node that fails a check leaves golden at once, in the transaction
that saves the result, with the finding as the reason (before, it stayed golden, and in the
exported hostfile, until the next `burnin golden`)."""

from __future__ import annotations

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from tests.fleet import walk_to

XID = {"message": "Xid 79: GPU has fallen off the bus (GPU 3)", "severity": "critical", "action": "REBOOT"}


def fail_row(check: str = "kernel_log") -> dict:
    return {"stage": "preflight", "check": check, "verdict": "FAIL", "findings": [XID], "evidence": "xid"}


def test_a_failing_result_moves_a_golden_node_to_failed_at_once(store_url):
    store = FleetStore(store_url)
    store.enroll("gpu001", "r01", "p")
    walk_to(store, "gpu001", State.GOLDEN)
    run = store.start_run("burnin", "r01")
    pass_row = {"stage": "preflight", "check": "gpu_ecc", "verdict": "PASS"}
    store.add_results("gpu001", [pass_row, fail_row()], run_id=run.id)
    assert store.get_node("gpu001").state == State.FAILED.value
    last = store.history("gpu001")[-1]
    assert (last.kind, last.from_state, last.to_state, last.run_id) == (
        "transition",
        "golden",
        "failed",
        run.id,
    )
    assert (
        last.reason
        == "left golden: preflight kernel_log FAIL: Xid 79: GPU has fallen off the bus (GPU 3) -> REBOOT"
    )
    assert last.details["check"] == "kernel_log" and last.details["findings"] == [XID]


def test_passing_warn_or_unknown_results_leave_a_golden_node_golden(store_url):
    store = FleetStore(store_url)
    store.enroll("gpu001", "r01", "p")
    walk_to(store, "gpu001", State.GOLDEN)
    for verdict in ("PASS", "WARN", "UNKNOWN"):
        store.add_results("gpu001", [{"stage": "gpu", "check": "gpu_stress", "verdict": verdict}])
    assert store.get_node("gpu001").state == State.GOLDEN.value


def test_a_failing_result_of_a_node_in_burnin_is_left_to_the_run(store_url):
    """A node in burn-in is failed by its run (_conclude, with the stage's findings), not here."""
    store = FleetStore(store_url)
    store.enroll("gpu001", "r01", "p")
    walk_to(store, "gpu001", State.BURNIN)
    store.add_results("gpu001", [fail_row()])
    assert store.get_node("gpu001").state == State.BURNIN.value
