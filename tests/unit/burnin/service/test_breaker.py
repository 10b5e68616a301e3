"""The circuit breaker's rule (burnin/service/breaker.py): how many nodes of a partition may drain
for one check in a window, and the word a held node says."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnin.service.breaker import BreakerSettings, Gate, cap, decide, held_message, reset_command

settings_st = st.builds(
    BreakerSettings,
    share=st.floats(min_value=0.001, max_value=1.0),
    min_nodes=st.integers(min_value=1, max_value=50),
    window_s=st.floats(min_value=1, max_value=86_400),
)


def test_a_thousand_node_partition_drains_a_tenth_by_default():
    s = BreakerSettings()
    assert cap(1000, s) == 100
    assert decide(99, 1000, s) is Gate.ALLOW
    assert decide(100, 1000, s) is Gate.TRIP


def test_a_small_partition_still_drains_its_floor_and_never_more_than_it_has():
    s = BreakerSettings()
    assert cap(8, s) == 2  # 10 % of 8 rounds to 0: the floor lets two through
    assert cap(1, s) == 1
    assert cap(0, s) == 0 and decide(0, 0, s) is Gate.TRIP


@pytest.mark.parametrize("bad", [dict(share=0), dict(share=1.5), dict(min_nodes=0), dict(window_s=0)])
def test_settings_out_of_range_are_refused(bad):
    with pytest.raises(ValueError):
        BreakerSettings(**bad)


@given(settings=settings_st, size=st.integers(min_value=0, max_value=20_000))
def test_draining_one_by_one_stops_exactly_at_the_cap(settings, size):
    """Nodes asking one after another, each allowed drain counted: the number drained is the cap,
    which is within the partition, at least the floor (or the partition), at most the share
    (or the floor)."""
    drained = 0
    for _ in range(size):
        if decide(drained, size, settings) is Gate.ALLOW:
            drained += 1
    c = cap(size, settings)
    assert drained == c
    assert c <= size
    assert c >= min(settings.min_nodes, size)
    assert c <= max(settings.min_nodes, size * settings.share + 1e-6)


@given(settings=settings_st, size=st.integers(min_value=1, max_value=20_000), n=st.integers(0, 20_000))
def test_the_rule_is_monotone(settings, size, n):
    """Once a count trips, every larger count trips too (no count lets a drain back in)."""
    if decide(n, size, settings) is Gate.TRIP:
        assert decide(n + 1, size, settings) is Gate.TRIP


def test_a_held_node_says_why_and_how_to_resume():
    msg = held_message("gpu_ecc", "gpu", 100, 1000, BreakerSettings())
    assert msg.startswith("held by the circuit breaker: check gpu_ecc is suspect in partition gpu")
    assert "100 of 1000" in msg and "cap 100" in msg
    assert msg.endswith(reset_command("gpu_ecc", "gpu"))
    assert reset_command("gpu_ecc", "gpu") == "burnin breaker reset gpu_ecc --partition gpu"
