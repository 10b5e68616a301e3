"""The IB port planner: every active port loaded in every round, rail-aligned, new partners each
round, odd counts and missing ports handled (burnin.plan.ib_pairs)."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.plan.ib_pairs import DEFAULT_TCP_PORT, PortKey, plan_retest, plan_rounds, rails_of

RAILS8 = [f"mlx5_{i}/1" for i in range(8)]


def full(n: int, rails: list[str] = RAILS8) -> dict[str, list[str]]:
    return {f"node{i:02d}": list(rails) for i in range(1, n + 1)}


def flows(round_) -> list[tuple[PortKey, PortKey]]:
    """(sender port, receiver port) of every stream in a round."""
    out = []
    for s in round_.sessions:
        server, client = s.ends
        out.append((client, server))
        if s.bidirectional:
            out.append((server, client))
    return out


def assert_round_invariants(ports: dict[str, list[str]], round_) -> None:
    rails = rails_of(ports)
    sends, receives = Counter(), Counter()
    for sender, receiver in flows(round_):
        sends[sender] += 1
        receives[receiver] += 1
    for s in round_.sessions:
        assert s.server != s.client
        assert s.rail in ports[s.server] and s.rail in ports[s.client]  # rail-aligned, both have it
    pairable = {PortKey(n, r) for r, nodes in rails.items() if len(nodes) >= 2 for n in nodes}
    alone = {PortKey(n, r) for r, nodes in rails.items() if len(nodes) == 1 for n in nodes}
    assert round_.loaded == pairable  # every port that has a partner on its rail is loaded
    assert set(round_.unpaired) == alone
    # full load: each port sends to exactly one partner and receives from exactly one
    assert all(sends[p] == 1 and receives[p] == 1 for p in pairable), (sends, receives)
    tcp = [(s.server, s.tcp_port) for s in round_.sessions]
    assert len(set(tcp)) == len(tcp) and all(p >= DEFAULT_TCP_PORT for _, p in tcp)


def distinct_limit(n: int) -> int:
    """Rounds over which every port's send and receive partners are all different."""
    return n - 1 if n % 2 == 0 else max(2, (n - 1) // 2)


def partners_by_round(rounds) -> tuple[dict[PortKey, list[str]], dict[PortKey, list[str]]]:
    to, frm = defaultdict(list), defaultdict(list)
    for r in rounds:
        for sender, receiver in flows(r):
            to[sender].append(receiver.node)
            frm[receiver].append(sender.node)
    return to, frm


def test_four_nodes_two_rounds_bidirectional_pairs_with_new_partners():
    ports = full(4)
    rounds = plan_rounds(ports, 2)
    assert [r.index for r in rounds] == [1, 2]
    for r in rounds:
        assert_round_invariants(ports, r)
        assert all(s.bidirectional for s in r.sessions) and len(r.sessions) == 2 * 8
    pairs = [{frozenset((s.server, s.client)) for s in r.sessions} for r in rounds]
    assert len(pairs[0]) == len(pairs[1]) == 2 and not pairs[0] & pairs[1]
    # rail-aligned: on each rail the same node pairing (the whole node meets one node per round)
    assert len({frozenset((s.server, s.client)) for s in rounds[0].sessions if s.rail == "mlx5_0/1"}) == 2
    # distinct TCP ports for the 8 sessions a node serves in a round
    node_ports = [s.tcp_port for s in rounds[0].sessions if s.server == rounds[0].sessions[0].server]
    assert sorted(node_ports) == list(range(DEFAULT_TCP_PORT, DEFAULT_TCP_PORT + 8))


def test_three_nodes_are_a_cycle_whose_direction_changes():
    ports = full(3, ["mlx5_0/1"])
    r1, r2 = plan_rounds(ports, 2)
    for r in (r1, r2):
        assert_round_invariants(ports, r)
        assert len(r.sessions) == 3 and not any(s.bidirectional for s in r.sessions)
    to, frm = partners_by_round([r1, r2])
    assert all(len(set(v)) == 2 for v in to.values()) and all(len(set(v)) == 2 for v in frm.values())


def test_five_nodes_one_cycle_and_one_pair_per_rail():
    ports = full(5, ["mlx5_0/1", "mlx5_1/1"])
    for r in plan_rounds(ports, 3):
        assert_round_invariants(ports, r)
        for rail in ("mlx5_0/1", "mlx5_1/1"):
            kinds = Counter(s.bidirectional for s in r.sessions if s.rail == rail)
            assert kinds == Counter({True: 1, False: 3})


def test_missing_ports_and_short_nodes():
    ports = full(4)
    ports["node02"] = RAILS8[:6]  # fewer ports than the profile
    ports["node03"] = [r for r in RAILS8 if r != "mlx5_3/1"]  # one port down/missing
    ports["node05"] = ["mlx5_9/1"]  # a rail nobody else has
    rounds = plan_rounds(ports, 2)
    for r in rounds:
        assert_round_invariants(ports, r)
        assert not [s for s in r.sessions if "node02" in (s.server, s.client) and s.rail in RAILS8[6:]]
        assert PortKey("node05", "mlx5_9/1") in r.unpaired
        assert Counter(s.rail for s in r.sessions)["mlx5_3/1"] == 3  # node01, node02, node04: a 3-cycle


def test_two_nodes_meet_again_and_one_node_is_unpaired():
    r1, r2 = plan_rounds(full(2, ["mlx5_0/1"]), 2)
    assert [(s.server, s.client, s.bidirectional) for s in r1.sessions] == [
        (s.server, s.client, s.bidirectional) for s in r2.sessions
    ]
    (alone,) = plan_rounds(full(1, ["mlx5_0/1"]), 1)
    assert alone.sessions == () and alone.unpaired == (PortKey("node01", "mlx5_0/1"),)
    assert plan_rounds({}, 2)[0].sessions == ()


def test_rounds_must_be_positive():
    with pytest.raises(ValueError):
        plan_rounds(full(4), 0)


@settings(max_examples=120, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=14),
    rounds=st.integers(min_value=1, max_value=4),
    data=st.data(),
)
def test_every_active_port_is_loaded_in_every_round(n, rounds, data):
    ports = {}
    for i in range(n):  # each node has some of the 4 rails (missing ports, short nodes)
        ports[f"n{i:02d}"] = data.draw(st.lists(st.sampled_from(RAILS8[:4]), unique=True, max_size=4))
    planned = plan_rounds(ports, rounds)
    assert len(planned) == rounds
    for r in planned:
        assert_round_invariants(ports, r)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(min_value=3, max_value=24), rounds=st.integers(min_value=2, max_value=6))
def test_partners_differ_across_rounds(n, rounds):
    rounds = min(rounds, distinct_limit(n))
    to, frm = partners_by_round(plan_rounds(full(n, ["mlx5_0/1"]), rounds))
    for port in to:
        assert len(set(to[port])) == len(to[port]) == rounds, (port, to[port])
        assert len(set(frm[port])) == len(frm[port]) == rounds, (port, frm[port])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(min_value=3, max_value=30))
def test_two_rounds_give_every_port_two_partners(n):
    """The default (2 rounds) is enough to tell a bad port from a bad partner at any size >= 3."""
    to, frm = partners_by_round(plan_rounds(full(n, ["mlx5_0/1"]), 2))
    assert all(len(set(to[p]) | set(frm[p])) >= 2 for p in to)


def test_retest_pairs_suspects_with_proven_ports():
    suspects = [PortKey("a", "r"), PortKey("b", "r"), PortKey("x", "q")]
    partners = {"r": ["c", "d", "b"], "q": []}
    must_avoid = {PortKey("a", "r"): {"b"}, PortKey("b", "r"): {"a"}}
    met = {PortKey("a", "r"): {"b", "c"}, PortKey("b", "r"): {"a", "d"}}
    round_, untested = plan_retest(suspects, partners, must_avoid, met, 3)
    assert round_.retest and round_.index == 3
    got = {s.client: s.server for s in round_.sessions}
    assert got == {"a": "d", "b": "c"}  # fresh partners first; never the partner it failed with
    assert all(s.bidirectional and s.rail == "r" for s in round_.sessions)
    assert untested == [PortKey("x", "q")]


def test_retest_falls_back_to_a_met_partner_and_uses_each_port_once():
    suspects = [PortKey("a", "r"), PortKey("b", "r"), PortKey("e", "r")]
    round_, untested = plan_retest(suspects, {"r": ["c"]}, {}, {PortKey("a", "r"): {"c"}}, 4)
    assert [(s.client, s.server) for s in round_.sessions] == [("a", "c")]
    assert untested == [PortKey("b", "r"), PortKey("e", "r")]
    # a suspect already busy as someone's partner is not planned twice
    round_, untested = plan_retest([PortKey("a", "r"), PortKey("c", "r")], {"r": ["c", "d"]}, {}, {}, 4)
    assert [(s.client, s.server) for s in round_.sessions] == [("a", "c")] and untested == []
