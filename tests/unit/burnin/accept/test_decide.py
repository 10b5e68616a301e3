"""Decisions: a node is accepted only when it matches the order and every result of the
acceptance passed; each reason names part, slot, serial, finding and action."""

from __future__ import annotations

from datetime import datetime, timezone

from burnin.accept.decide import (
    ACCEPTED,
    REJECTED,
    NodeEvidence,
    Reason,
    ResultRow,
    decide_delivery,
    decide_node,
    serial_in,
)

T0 = datetime(2026, 5, 1, 8, 0, tzinfo=timezone.utc)
STAGES = ("preflight", "gpu")
ITER = {1: 0, 2: 1, 3: 2}  # run id -> iteration


def row(rid, stage, check, verdict, run_id=1, findings=(), metrics=None) -> ResultRow:
    return ResultRow(rid, "n1", run_id, stage, check, verdict, tuple(findings), metrics or {}, T0, True)


def passing() -> list[ResultRow]:
    return [row(1, "preflight", "memory_dimms", "PASS"), row(2, "gpu", "gpu_stress", "PASS")]


DIMM = {
    "message": "DIMM P0 CHANNEL B DIMM 1 (serial 80CE01234567) not populated: 31 of 32 DIMMs",
    "severity": "critical",
    "action": "RESEAT",
    "subject": "P0 CHANNEL B DIMM 1",
    "evidence": "Locator: DIMM_B1 Size: No Module Installed",
}


def test_a_node_that_passed_everything_and_matches_the_order_is_accepted():
    d = decide_node(NodeEvidence("n1", "SN1", (), "", passing(), STAGES), ITER)
    assert d.decision == ACCEPTED and d.accepted and not d.reasons


def test_a_critical_finding_rejects_with_part_slot_serial_and_action():
    rows = [row(1, "preflight", "memory_dimms", "FAIL", findings=[DIMM]), row(2, "gpu", "gpu_stress", "PASS")]
    d = decide_node(NodeEvidence("n1", "SN1", (), "", rows, STAGES), ITER)
    assert d.decision == REJECTED
    (r,) = d.reasons
    assert (r.part, r.slot, r.serial, r.action) == (
        "memory_dimms",
        "P0 CHANNEL B DIMM 1",
        "80CE01234567",
        "RESEAT",
    )
    assert r.result_id == 1 and r.iteration == 0 and r.seen_at == T0
    assert "serial 80CE01234567" in r.line() and r.line().endswith("-> RESEAT")


def test_unknown_rejects_a_warning_is_noted_and_a_soak_failure_counts_once_from_where_it_began():
    warn = {
        "message": "GPU 2 temperature 84 C",
        "severity": "warning",
        "action": "MONITOR",
        "subject": "GPU 2",
    }
    slow = {"message": "GPU 3 HW slowdown", "severity": "critical", "action": "RESEAT", "subject": "GPU 3"}
    rows = [
        *passing(),
        row(3, "gpu", "gpu_stress", "WARN", run_id=2, findings=[warn]),
        row(4, "gpu", "gpu_stress", "FAIL", run_id=3, findings=[slow]),
        row(5, "gpu", "gpu_stress", "FAIL", run_id=3, findings=[slow]),
        row(6, "ib", "ib_bandwidth", "UNKNOWN", run_id=3, metrics={"reason": "timed out after 300 s"}),
    ]
    d = decide_node(NodeEvidence("n1", "SN1", (), "", rows, STAGES), ITER)
    assert d.decision == REJECTED
    assert [(r.check, r.iteration, r.finding) for r in d.reasons] == [
        ("gpu_stress", 2, "GPU 3 HW slowdown"),
        ("ib_bandwidth", 2, "could not be judged: timed out after 300 s"),
    ]
    assert [n.finding for n in d.notes] == ["GPU 2 temperature 84 C"]
    assert d.reasons[1].action == ""


def test_a_warning_alone_is_accepted():
    warn = {
        "message": "GPU 2 temperature 84 C",
        "severity": "warning",
        "action": "MONITOR",
        "subject": "GPU 2",
    }
    rows = [row(1, "preflight", "memory_dimms", "PASS"), row(2, "gpu", "gpu_stress", "WARN", findings=[warn])]
    assert decide_node(NodeEvidence("n1", "SN1", (), "", rows, STAGES), ITER).accepted


def test_order_mismatches_skips_and_missing_stages_reject():
    psu = Reason(
        "order",
        "psu",
        "PSU 2 failed (Critical, UnavailableOffline)",
        "RMA",
        slot="PSU.Slot.2",
        serial="PSU99",
    )
    d = decide_node(NodeEvidence("n1", "SN1", (psu,), "", passing(), STAGES), ITER)
    assert d.reasons == (psu,)
    skipped = decide_node(NodeEvidence("n1", "SN1", (), "failed: fix it", [], STAGES), ITER)
    assert [r.finding for r in skipped.reasons] == ["not burnt in: failed: fix it"]
    partial = decide_node(NodeEvidence("n1", "SN1", (), "", passing()[:1], STAGES), ITER)
    assert [r.finding for r in partial.reasons] == ["no result for stage(s) gpu"]


def test_serials_are_read_from_subject_message_or_evidence():
    assert serial_in("GPU 3 (0000:9b:00.0, serial 1654922001234)") == "1654922001234"
    assert serial_in("", "nothing", "Part: M321 Serial: 80CE0123.") == "80CE0123"
    assert serial_in("GPU 3", "no serial here") == ""


def test_the_delivery_passes_on_the_share_of_ordered_nodes_accepted():
    latest = {"n1": ACCEPTED, "n2": ACCEPTED, "n3": REJECTED, "n4": ACCEPTED}
    ok = decide_delivery(latest, 4, 0.75)
    assert ok.accepted and ok.why == "3 of 4 ordered node(s) accepted; the order requires 75%"
    short = decide_delivery(latest, 4, 1.0)
    assert not short.accepted and short.why.endswith(": 1 more needed")
    missing = decide_delivery({"n1": ACCEPTED}, 4, 0.25, ["1 node(s) ... it lists 4"])
    assert missing.accepted and missing.problems == ("1 node(s) ... it lists 4",)
    assert not decide_delivery({}, 0, 0.0).accepted


def test_the_burn_in_count_of_gpus_takes_the_slot_the_pci_tree_named():
    """gpu_inventory's '7 GPU(s) found' names no GPU: its line in the RMA bundle said 'Slot: -'
    while the order's comparison had named the lost card from the PCI tree."""
    count = {
        "message": "7 GPU(s) found, the profile has 8 (nvidia-smi says 7 attached)",
        "severity": "critical",
        "action": "RESEAT",
        "subject": "",
        "evidence": "Attached GPUs : 7",
    }
    lost = Reason("order", "gpu", "7 GPUs, the order has 8: ...", "RESEAT", slot="PCI 0000:97:00.0, slot 5")
    rows = [
        row(1, "preflight", "gpu_inventory", "FAIL", findings=[count]),
        row(2, "gpu", "gpu_stress", "PASS"),
    ]
    d = decide_node(NodeEvidence("n1", "SN1", (lost,), "", rows, STAGES), ITER)
    assert [(r.part, r.slot) for r in d.reasons] == [
        ("gpu", "PCI 0000:97:00.0, slot 5"),
        ("gpu_inventory", "PCI 0000:97:00.0, slot 5"),
    ]
