"""The order comparison (burnin/accept/conformance.py) as the decisions and reports read it:
each mismatch a Reason, each part a row of the ordered-against-found table.

A part nobody reported (a mismatch without an action) is a reason too: it could not be
compared, and what could not be judged never passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bringup.fleet.models import CheckResult
from bringup.inventory.delivery import Delivery
from burnin.accept.conformance import NodeRecord, compare, compare_node
from burnin.accept.decide import Reason
from burnin.accept.outcome import ConformanceRow

# The check whose raw output shows what the node itself reported for a part (the RMA bundle
# carries it beside what the BMC said).
PART_CHECKS = {"memory": "memory_dimms", "cpu": "cpu_inventory", "gpu": "gpu_versions", "nvme": "nvme_health"}


def _check_of(part: str) -> str | None:
    return "ib_ports" if part.startswith("nic") else PART_CHECKS.get(part)


def _discovered_at(node: NodeRecord) -> datetime | None:
    try:
        return datetime.fromisoformat(str((node.hardware or {}).get("discovered_at")))
    except ValueError:
        return None


def conformance_of(
    delivery: Delivery, node: NodeRecord, latest: Sequence[CheckResult]
) -> tuple[list[Reason], list[ConformanceRow]]:
    """(the node's mismatches against the order, its rows of ordered against found)."""
    found = compare_node(delivery, node, latest)
    newest: dict[str, CheckResult] = {}
    for r in sorted(latest, key=lambda r: r.id):
        newest[r.check] = r
    reasons = []
    for m in found.mismatches:
        check = _check_of(m.part)
        result = newest.get(check) if check else None
        reasons.append(
            Reason(
                "order",
                m.part,
                m.finding,
                m.action.value if m.action is not None else "",
                slot=m.slot,
                serial=m.serial,
                ordered=m.ordered,
                found=m.found,
                stage=result.stage if result else "",
                check=result.check if result else "",
                result_id=result.id if result else None,
                seen_at=result.time if result else _discovered_at(node),
            )
        )
    rows = [ConformanceRow(node.name, r.part, r.ordered, r.found, r.ok) for r in found.rows]
    return reasons, rows


def delivery_problems(delivery: Delivery, nodes: Sequence[NodeRecord]) -> list[str]:
    """What is wrong with the delivery as a whole: nodes missing or extra, packing-list serials
    no node has."""
    return [m.finding for m in compare(delivery, nodes, {}).mismatches]
