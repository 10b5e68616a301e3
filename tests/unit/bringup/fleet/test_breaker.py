"""The circuit breaker's records (bringup/fleet/breaker.py): drains counted per (partition, check)
in the window, decided under the breaker's lock, held once tripped, counted afresh after a reset;
and a thousand nodes asking at once from threads (SQLite and PostgreSQL)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest

from bringup.fleet import breaker as records
from bringup.fleet.store import FleetStore, StoreError

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=timezone.utc)


def under(n: int):
    return lambda drained: drained < n


@pytest.fixture
def store(store_url):
    s = FleetStore(store_url)
    yield s
    s.close()


def test_drains_pass_until_the_rule_says_no_then_every_later_one_is_held(store):
    got = [
        records.pass_drain(store, "gpu", "gpu_ecc", f"n{i}", window_s=600, allow=under(2), now=T0)
        for i in range(4)
    ]
    assert [p.allowed for p in got] == [True, True, False, False]
    assert [p.drained_in_window for p in got] == [0, 1, 2, 2]
    assert got[2].tripped_now and not got[3].tripped_now and got[3].tripped_at == T0
    (state,) = records.states(store)
    assert (state.partition, state.check, state.tripped, state.drained, state.held) == (
        "gpu",
        "gpu_ecc",
        True,
        2,
        2,
    )


def test_another_check_or_partition_has_its_own_breaker(store):
    for i in range(3):
        records.pass_drain(store, "gpu", "gpu_ecc", f"n{i}", window_s=600, allow=under(2), now=T0)
    assert records.pass_drain(store, "gpu", "ib_ports", "n9", window_s=600, allow=under(2), now=T0).allowed
    assert records.pass_drain(store, "debug", "gpu_ecc", "n9", window_s=600, allow=under(2), now=T0).allowed
    assert [s.check for s in records.states(store, tripped_only=True)] == ["gpu_ecc"]


def test_drains_older_than_the_window_do_not_count_and_a_repeat_node_counts_once(store):
    records.pass_drain(store, "gpu", "gpu_ecc", "n1", window_s=600, allow=under(1), now=T0)
    later = T0 + timedelta(seconds=601)
    p = records.pass_drain(store, "gpu", "gpu_ecc", "n2", window_s=600, allow=under(1), now=later)
    assert p.allowed and p.drained_in_window == 0
    again = records.pass_drain(store, "gpu", "gpu_ecc", "n2", window_s=600, allow=under(1), now=later)
    assert again.allowed and again.drained_in_window == 1  # n2 itself: no new share taken


def test_a_reset_closes_the_breaker_and_counts_afresh(store):
    for i in range(3):
        records.pass_drain(store, "gpu", "gpu_ecc", f"n{i}", window_s=600, allow=under(2), now=T0)
    state = records.reset(store, "gpu", "gpu_ecc", actor="ops@ctl")
    assert state.tripped_at == T0 and state.reset_by == "ops@ctl"
    now = state.reset_at + timedelta(seconds=1)
    p = records.pass_drain(store, "gpu", "gpu_ecc", "n7", window_s=600, allow=under(2), now=now)
    assert p.allowed and p.drained_in_window == 0
    (after,) = records.states(store)
    assert not after.tripped and after.drained == 1 and after.held == 0
    with pytest.raises(StoreError, match="no circuit breaker"):
        records.reset(store, "gpu", "nope")


def test_a_thousand_nodes_failing_at_once_drain_no_more_than_the_cap(store):
    """1,000 nodes of one partition fail the same check at the same moment and ask from 32
    threads at once: the count and the insert share one locked transaction, so exactly the cap
    drains and every other node is held (PostgreSQL: the breaker's row lock; SQLite: BEGIN
    IMMEDIATE)."""
    nodes = [f"gpu{i:04d}" for i in range(1000)]

    def ask(node: str) -> bool:
        return records.pass_drain(store, "gpu", "gpu_ecc", node, window_s=600, allow=under(100)).allowed

    with ThreadPoolExecutor(max_workers=32) as pool:
        allowed = list(pool.map(ask, nodes))
    assert sum(allowed) == 100
    (state,) = records.states(store)
    assert state.tripped and state.drained == 100 and state.held == 900
