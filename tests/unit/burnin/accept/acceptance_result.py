"""One acceptance result, with rejected nodes, reasons and evidence, for the tests of what the
acceptance writes (its reports, its RMA bundles) and of `burnin accept`."""

from __future__ import annotations

from datetime import datetime, timezone

from burnin.accept.decide import ACCEPTED, REJECTED, DeliveryDecision, NodeDecision, Reason
from burnin.accept.outcome import AcceptanceResult, ConformanceRow, HistoryEntry, IterationSummary, NodeFacts

T0 = datetime(2026, 5, 1, 8, 0, tzinfo=timezone.utc)
T1 = datetime(2026, 5, 4, 8, 0, tzinfo=timezone.utc)
DMIDECODE = "Handle 0x1101\nMemory Device\n\tLocator: DIMM_B1\n\tSize: No Module Installed\n"
DIMM = Reason(
    "burn-in",
    "memory_dimms",
    "DIMM B1 not populated: 31 of 32 DIMMs",
    "RESEAT",
    slot="DIMM_B1",
    serial="80CE01234567",
    stage="preflight",
    check="memory_dimms",
    iteration=0,
    result_id=11,
    seen_at=T0,
)
PSU = Reason(
    "order",
    "psu",
    "PSU 2 failed (Critical)",
    "RMA",
    slot="PSU.Slot.2",
    serial="PSU-9",
    ordered="6",
    found="5 healthy",
)
PACKING = Reason("order", "chassis", "serial SN-X is not on the packing list", "RMA", serial="SN-X")


def hardware(serial: str) -> dict:
    return {
        "discovered_at": "2026-05-01T07:50:00+00:00",
        "system": {"manufacturer": "Dell Inc.", "model": "PowerEdge XE9680", "bios_version": "1.6.0"},
        "bmc": {"firmware_version": "7.10.30.00", "url": "https://10.0.0.1"},
        "firmware": [{"name": "BIOS", "version": "1.6.0"}],
        "event_log": [{"Id": "1", "Severity": "Critical", "Message": "PSU 2 lost input"}],
        "inventory": {"psus": [{"slot": "PSU.Slot.2", "serial": "PSU-9", "health": "Critical"}]},
    }


def result() -> AcceptanceResult:
    decisions = (
        NodeDecision("n1", "SN1", REJECTED, (DIMM, PSU)),
        NodeDecision("n2", "SN-X", REJECTED, (PACKING,)),
        NodeDecision("n3", "SN3", ACCEPTED),
    )
    return AcceptanceResult(
        delivery="po42",
        description="3 XE9680, PO 4711 <script>",
        rack="r07",
        acceptance_id=5,
        started_at=T0,
        finished_at=T1,
        soak_s=259200.0,
        stages=("preflight", "gpu"),
        soak_stages=("gpu", "ib", "nccl"),
        redelivery_of=None,
        tested=("n1", "n2", "n3"),
        decisions=decisions,
        delivery_decision=DeliveryDecision(False, 1, 3, 1.0, "1 of 3 ordered node(s) accepted"),
        conformance=(
            ConformanceRow("n1", "psu", "6 (N+N)", "5 healthy", False),
            ConformanceRow("n3", "memory", "32 x 64 GiB", "32 x 64 GiB", True),
        ),
        iterations=(IterationSummary(0, 20, "failed", T0, T0, ("n1", "n2", "n3"), ("n1",)),),
        history=(
            HistoryEntry("n1", 2, REJECTED, (PSU.line(),), datetime(2026, 4, 20, tzinfo=timezone.utc)),
            HistoryEntry("n1", 5, REJECTED, (DIMM.line(),), T1),
            HistoryEntry("n3", 5, ACCEPTED, (), T1),
        ),
        nodes={
            n: NodeFacts(n, s, "failed", "h100-sxm-8x400g", hardware(s))
            for n, s in (("n1", "SN1"), ("n2", "SN-X"), ("n3", "SN3"))
        },
        evidence={11: DMIDECODE},
    )
