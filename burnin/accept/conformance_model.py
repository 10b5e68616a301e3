"""The records of an order comparison (burnin/accept/conformance.py): a table row per part, a
mismatch per difference, per node and for the delivery as a whole (pure data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from burnin.result import Action


class NodeRecord(Protocol):
    """What conformance reads of a node (bringup.fleet.models.Node has it)."""

    name: str
    serial: str | None
    profile: str
    hardware: dict[str, Any]


class ResultRecord(Protocol):
    """What conformance reads of a stored check result (bringup.fleet.models.CheckResult)."""

    check: str
    verdict: str
    metrics: dict[str, Any]


@dataclass(frozen=True)
class PartRow:
    """One line of the ordered-against-found table."""

    part: str  # cpu, memory, gpu, nic <model>, nvme, psu, fan, bmc, bios, bios <attribute>, chassis
    ordered: str
    found: str
    ok: bool | None  # None: nobody reported it, so it could not be compared


@dataclass(frozen=True)
class Mismatch:
    part: str
    finding: str  # one line a person (or a vendor's RMA desk) reads
    action: Action | None  # None: it could not be compared (not a pass either)
    slot: str = ""
    serial: str = ""
    ordered: str = ""
    found: str = ""


@dataclass(frozen=True)
class NodeConformance:
    node: str
    serial: str | None
    profile: str
    rows: tuple[PartRow, ...]
    mismatches: tuple[Mismatch, ...]

    @property
    def conforms(self) -> bool | None:
        """True: every ordered part found as ordered; False: something differs; None: nothing
        differs but some part could not be compared."""
        if any(m.action is not None for m in self.mismatches):
            return False
        return None if self.mismatches else True


@dataclass(frozen=True)
class DeliveryConformance:
    nodes: tuple[NodeConformance, ...]
    mismatches: tuple[Mismatch, ...] = ()  # the delivery as a whole: node count, packing list

    def node(self, name: str) -> NodeConformance:
        return next(n for n in self.nodes if n.node == name)


@dataclass
class Collected:
    """Rows and mismatches as the comparisons add them."""

    rows: list[PartRow] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)

    def row(self, part: str, ordered: Any, found: Any, ok: bool | None) -> None:
        self.rows.append(PartRow(part, str(ordered), str(found), ok))

    def unknown(self, part: str, ordered: Any, why: str) -> None:
        self.row(part, ordered, f"not reported ({why})", None)
        self.mismatches.append(
            Mismatch(part, f"{part}: could not be compared: {why}", None, ordered=str(ordered))
        )

    def add(self, part: str, finding: str, action: Action, **where: str) -> None:
        self.mismatches.append(Mismatch(part, finding, action, **where))
