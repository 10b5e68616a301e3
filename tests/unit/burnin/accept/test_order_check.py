"""The order comparison as decisions read it: each mismatch a reason (a part nobody reported
too, without an action), each part a row of the ordered-against-found table."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from bringup.inventory.delivery import parse_delivery
from burnin.accept.order_check import conformance_of, delivery_problems


@dataclass
class NodeRow:
    name: str
    serial: str | None
    profile: str = "h100-sxm-8x400g"
    hardware: dict[str, Any] = field(default_factory=dict)


def order():
    data = {
        "name": "po42",
        "nodes": {"count": 2, "serials": ["SN1", "SN2"]},
        "profiles": {"h100-sxm-8x400g": {"psu": {"count": 2}}},
    }
    delivery, problems = parse_delivery(data, "po42.yml")
    assert delivery is not None, problems
    return delivery


def test_a_serial_off_the_packing_list_is_a_reason_with_its_serial_and_action():
    node = NodeRow("n3", "SN9", hardware={"discovered_at": "2026-05-01T07:50:00+00:00"})
    reasons, rows = conformance_of(order(), node, [])
    chassis = next(r for r in reasons if r.part == "chassis")
    assert (chassis.serial, chassis.action, chassis.source) == ("SN9", "RMA", "order")
    assert chassis.seen_at == datetime(2026, 5, 1, 7, 50, tzinfo=timezone.utc)
    assert any(r.node == "n3" and r.part == "chassis" and r.ok is False for r in rows)
    # no PSU data from this BMC: a reason without an action, never zero PSUs
    psu = next(r for r in reasons if r.part == "psu")
    assert psu.action == "" and "could not be compared" in psu.finding
    assert any(r.part == "psu" and r.ok is None for r in rows)


def test_the_delivery_as_a_whole_names_missing_nodes_and_serials():
    problems = delivery_problems(order(), [NodeRow("n1", "SN1")])
    assert any("1 node(s) delivered, the order has 2" in p for p in problems)
    assert any("SN2" in p for p in problems)
