"""The IB port planner: every active port loaded in every round, rail-aligned, new partners each
round, odd counts and missing ports handled (burnin.plan.ib_pairs)."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.plan.ib_pairs import DEFAULT_TCP_PORT, PortKey, plan_retest, plan_rounds, rails_of, unpartnered

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


def test_two_nodes_under_test_meet_golden_partners_never_each_other():
    """A nightly's two repaired nodes (node01, node04) beside two golden partners. Without
    partners the circle method pairs node01 with node04 in round 1; with them each port under
    test meets a partner's in every round, a different one each round."""
    ports = full(4)
    assert any({s.server, s.client} == {"node01", "node04"} for s in plan_rounds(ports, 2)[0].sessions)
    rounds = plan_rounds(ports, 2, partners={"node02", "node03"})
    for r in rounds:
        assert_round_invariants(ports, r)
        for s in r.sessions:
            assert {s.server, s.client} & {"node02", "node03"}, s
            assert s.server in {"node02", "node03"}  # the proven port serves
    to, _ = partners_by_round(rounds)
    assert {tuple(v) for p, v in to.items() if p.node in ("node01", "node04")} == {
        ("node02", "node03"),
        ("node03", "node02"),
    }
    assert unpartnered(rounds, {"node02", "node03"}) == {}


def test_one_node_under_test_and_two_partners_is_a_cycle_of_proven_ports():
    ports = full(3, ["mlx5_0/1"])
    for r in plan_rounds(ports, 2, partners={"node02", "node03"}):
        assert_round_invariants(ports, r)  # a 3-cycle: node01 sends to one partner, hears the other
        assert len(r.sessions) == 3 and not any(s.bidirectional for s in r.sessions)


def test_too_few_partners_pair_what_they_can_and_the_rest_meet_as_before():
    ports = full(4, ["mlx5_0/1"])
    rounds = plan_rounds(ports, 3, partners={"node04"})
    for r in rounds:
        assert_round_invariants(ports, r)
        assert any("node04" in (s.server, s.client) and s.bidirectional for s in r.sessions)
    with_partner = [
        next(s.partner("node04") for s in r.sessions if "node04" in (s.server, s.client)) for r in rounds
    ]
    assert with_partner == ["node01", "node02", "node03"]  # the one partner serves each in turn
    assert set(unpartnered(rounds, {"node04"})) == {"node01", "node02", "node03"}
    assert unpartnered(rounds, ()) == {}
    # a rail without any partner port is planned as without partners
    assert plan_rounds(ports, 2, partners={"elsewhere"}) == plan_rounds(ports, 2)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=12),
    rounds=st.integers(min_value=1, max_value=4),
    data=st.data(),
)
def test_a_port_under_test_never_meets_another_while_a_partner_is_free(n, rounds, data):
    """With partners: every port still loaded in every round (the invariants above); on a rail
    with partners, a session between two ports under test only when every partner port is busy
    with a port under test; with enough partners, a port under test meets a different partner in
    each round (as many as there are)."""
    ports = {}
    for i in range(n):
        ports[f"n{i:02d}"] = data.draw(st.lists(st.sampled_from(RAILS8[:3]), unique=True, max_size=3))
    partners = data.draw(st.sets(st.sampled_from(sorted(ports))))
    planned = plan_rounds(ports, rounds, partners=partners)
    assert len(planned) == rounds
    met: dict[PortKey, list[set[str]]] = defaultdict(list)
    for r in planned:
        assert_round_invariants(ports, r)
        for rail, nodes in rails_of(ports).items():
            proven, tested = set(nodes) & partners, set(nodes) - partners
            if not proven or not tested:
                continue
            sessions = [s for s in r.sessions if s.rail == rail]
            with_tested = {
                e for s in sessions for e in (s.server, s.client) if e in proven and s.partner(e) in tested
            }
            if any(s.server in tested and s.client in tested for s in sessions):
                assert with_tested == proven, (rail, r.index, sessions)
            if len(proven) >= len(tested):
                assert all(s.server in proven or s.client in proven for s in sessions)
            for node in tested:
                met[PortKey(node, rail)].append(
                    {s.partner(node) for s in sessions if node in (s.server, s.client)} & proven
                )
    for key, seen in met.items():
        proven = set(rails_of(ports)[key.rail]) & partners
        tested = set(rails_of(ports)[key.rail]) - partners
        if len(proven) >= len(tested):
            assert len(set().union(*seen)) >= min(rounds, len(proven)), (key, seen)


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
