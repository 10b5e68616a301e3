"""The order comparison (burnin/accept/conformance.py) as the decisions and reports read it:
each mismatch a Reason, each part a row of the ordered-against-found table."""

from __future__ import annotations

from collections.abc import Sequence

from bringup.delivery import Delivery
from bringup.fleet.models import CheckResult, Node
from burnin.accept.decide import Reason
from burnin.accept.outcome import ConformanceRow


def conformance_of(
    delivery: Delivery, node: Node, latest: Sequence[CheckResult]
) -> tuple[list[Reason], list[ConformanceRow]]:
    """(the node's mismatches against the order, its rows of ordered against found)."""
    return [], []
