"""The ib stage's rounds in waves (burnin.plan.ib_pairs.plan_waves): a round over more
nodes than the controller's bound runs as waves of at most that many nodes; a session's two
ends are in one wave, and nodes that load each other stay together."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.plan.ib_pairs import Round, Session, plan_rounds, plan_waves

RAILS8 = [f"mlx5_{i}/1" for i in range(8)]


def full(n: int, rails: list[str] = RAILS8) -> dict[str, list[str]]:
    return {f"node{i:04d}": list(rails) for i in range(1, n + 1)}


def groups(round_: Round) -> list[set[str]]:
    """Nodes linked by sessions (pairs, 3-cycles, ...)."""
    out: list[set[str]] = []
    for s in round_.sessions:
        ends = {s.server, s.client}
        linked = [g for g in out if g & ends]
        merged = ends.union(*linked)
        out = [g for g in out if not g & ends] + [merged]
    return out


def test_a_round_within_the_bound_is_one_wave_itself():
    (round_,) = plan_rounds(full(8), 1)
    assert plan_waves(round_, 8) == [round_]


def test_a_thousand_nodes_at_a_bound_of_200_are_five_full_waves():
    (round_,) = plan_rounds(full(1000), 1)
    waves = plan_waves(round_, 200)
    assert [len(w.nodes) for w in waves] == [200] * 5
    assert Counter(s for w in waves for s in w.sessions) == Counter(round_.sessions)
    node_waves = {}
    for i, w in enumerate(waves):
        for n in w.nodes:
            assert node_waves.setdefault(n, i) == i  # each node in one wave: one SSH session
    assert all(w.index == round_.index for w in waves)


def test_an_odd_count_keeps_its_three_cycle_together():
    (round_,) = plan_rounds(full(7), 1)
    waves = plan_waves(round_, 3)
    cycle = next(g for g in groups(round_) if len(g) == 3)
    assert any(cycle <= set(w.nodes) for w in waves)
    assert all(len(w.nodes) <= 3 for w in waves)


def test_the_unpaired_ports_stay_with_the_first_wave_only():
    ports = full(6)
    ports["node0001"] = [*RAILS8, "mlx5_8/1"]  # a rail nobody else has
    (round_,) = plan_rounds(ports, 1)
    waves = plan_waves(round_, 2)
    assert waves[0].unpaired == round_.unpaired != () and all(w.unpaired == () for w in waves[1:])


def test_a_group_larger_than_a_wave_is_split_by_session():
    """Three nodes that load each other in a cycle, a bound of two: one session per wave, and
    each session's two ends together."""
    cycle = (
        Session("r", "b", "a", False, 18515),
        Session("r", "c", "b", False, 18515),
        Session("r", "a", "c", False, 18515),
    )
    waves = plan_waves(Round(1, cycle), 2)
    assert [w.sessions for w in waves] == [(s,) for s in cycle]


def test_a_bound_below_two_is_refused():
    (round_,) = plan_rounds(full(4), 1)
    with pytest.raises(ValueError, match="room for a session's two ends"):
        plan_waves(round_, 1)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 60), rails=st.integers(1, 8), rounds=st.integers(1, 3), bound=st.integers(2, 40))
def test_every_session_once_each_wave_within_the_bound_and_groups_kept(n, rails, rounds, bound):
    for round_ in plan_rounds(full(n, RAILS8[:rails]), rounds):
        waves = plan_waves(round_, bound)
        assert Counter(s for w in waves for s in w.sessions) == Counter(round_.sessions)
        assert all(len(w.nodes) <= bound for w in waves)
        for group in groups(round_):
            if len(group) <= bound:
                assert sum(1 for w in waves if group & set(w.nodes)) == 1  # together, in one wave
