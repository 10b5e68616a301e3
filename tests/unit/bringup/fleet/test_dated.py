"""Back-filled history: the store's own writes, each event dated to when it happened."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from bringup.fleet.dated import DatedWriter, UndatedTime
from bringup.fleet.lifecycle import IllegalTransition, State
from bringup.fleet.store import FleetStore

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


@pytest.fixture
def w(store_url) -> DatedWriter:
    return DatedWriter(FleetStore(store_url))


def _golden(w: DatedWriter, name: str, when: datetime) -> None:
    w.enroll(name, "r01", "h100-sxm-8x400g", when)
    for state in (State.DISCOVERED, State.PROVISIONING, State.PROVISIONED, State.CONFIGURED, State.BURNIN):
        w.transition(name, state, "bring-up", when)
    w.transition(name, State.GOLDEN, "passed", when + timedelta(hours=1))


def test_each_write_is_dated_and_only_its_own_events_move(w):
    _golden(w, "gpu001", day(0))
    _golden(w, "gpu002", day(1))
    finding = {"message": "GPU 5: ECC", "severity": "critical", "action": "RMA", "subject": "GPU 5"}
    w.add_result("gpu001", "gpu", "gpu_health", "FAIL", day(10), findings=[finding])
    w.record_event("gpu002", "slurm_drain", "operator drain", day(12))
    w.transition("gpu001", State.REPAIR, "GPU 5 replaced", day(11))
    h1, h2 = w.store.history("gpu001"), w.store.history("gpu002")
    assert [(e.to_state, e.time) for e in h1] == [
        ("enrolled", day(0)),
        *[(s, day(0)) for s in ("discovered", "provisioning", "provisioned", "configured", "burnin")],
        ("golden", day(0) + timedelta(hours=1)),
        ("failed", day(10)),  # a golden node's FAIL result fails it: at the result's date
        ("repair", day(11)),
    ]
    assert h2[0].time == day(1) and h2[-1].kind == "slurm_drain" and h2[-1].time == day(12)
    assert w.store.get_node("gpu001").created_at == day(0)
    (result,) = w.store.latest_results("gpu001")
    assert result.time == day(10)


def test_the_store_rules_still_hold_and_a_naive_date_is_refused(w):
    _golden(w, "gpu001", day(0))
    with pytest.raises(IllegalTransition):
        w.transition("gpu001", State.REPAIR, "not failed", day(3))
    assert w.store.history("gpu001")[-1].to_state == "golden"
    with pytest.raises(UndatedTime, match="gpu001: 2026-01-04T00:00:00 has no time zone"):
        w.record_event("gpu001", "note", "x", datetime(2026, 1, 4))
