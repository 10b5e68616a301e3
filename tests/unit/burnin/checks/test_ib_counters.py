"""An HCA port's error counters around a load: each counter's change and the ports whose own
link counters rose (burnin/checks/ib_counters.py)."""

from __future__ import annotations

from burnin.checks.ib_counters import counter_bad_ports, counter_changes
from burnin.parsers.perfquery import ERROR_COUNTERS
from burnin.plan.ib_pairs import PortKey


def counters(**changes: int) -> dict[str, int]:
    return {**dict.fromkeys(ERROR_COUNTERS, 0), **changes}


def test_counter_changes_rise_saturation_and_reset():
    changes = {c.name: c for c in counter_changes(counters(), counters(SymbolErrorCounter=24))}
    assert changes["SymbolErrorCounter"].delta == 24 and changes["PortRcvErrors"].delta == 0
    sat = {
        c.name: c for c in counter_changes(counters(LinkDownedCounter=255), counters(LinkDownedCounter=255))
    }
    assert sat["LinkDownedCounter"].saturated and sat["LinkDownedCounter"].delta is None
    down = {c.name: c for c in counter_changes(counters(PortRcvErrors=9), counters())}
    assert down["PortRcvErrors"].went_down and down["PortRcvErrors"].delta is None
    missing = {c.name: c for c in counter_changes(None, counters())}
    assert missing["SymbolErrorCounter"].delta is None
    key = PortKey("a", "mlx5_2/1")
    assert counter_bad_ports({key: [counter_changes(counters(), counters(SymbolErrorCounter=24))]}) == {key}
    assert counter_bad_ports({key: [counter_changes(counters(), counters(PortXmitDiscards=5))]}) == set()
