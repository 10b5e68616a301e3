"""Soak groups and bad-node localisation, driven by simulated outcomes: a bad node makes every
trial it is in fail (or hang, or run slow: the localiser only sees 'not passed')."""

from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.plan.nccl_groups import Localizer, plan_anchored_groups, plan_groups


def names(n: int) -> list[str]:
    return [f"node{i:04d}" for i in range(n)]


class Rack:
    """Simulated outcomes; checks the planner's promises on every round it hands out."""

    def __init__(self, bad, flaky=None):
        self.bad = set(bad)
        self.flaky = flaky or (lambda test, count: None)  # -> forced outcome for the nth run of a test
        self.runs: dict[frozenset[str], int] = {}
        self.rounds: list[list[frozenset[str]]] = []

    def drive(self, loc: Localizer) -> Localizer:
        while tests := loc.next_tests():
            assert loc.next_tests() == tests  # the same round until every trial is recorded
            seen: set[str] = set()
            for test in tests:
                assert len(test) >= loc.min_nodes, "a trial too small for a collective"
                assert not test & seen, "trials of one round share a node"
                seen |= test
            self.rounds.append(tests)
            for test in tests:
                count = self.runs[test] = self.runs.get(test, 0) + 1
                forced = self.flaky(test, count)
                loc.record(test, (not test & self.bad) if forced is None else forced)
        return loc


def test_plan_groups_balanced_and_never_a_lonely_node():
    assert plan_groups(names(10), 4) == [names(10)[0:4], names(10)[4:7], names(10)[7:10]]
    assert [len(g) for g in plan_groups(names(9), 8)] == [5, 4]  # not 8 + 1
    assert [len(g) for g in plan_groups(names(1024), 32)] == [32] * 32
    assert plan_groups(names(5), 0) == [names(5)] and plan_groups(names(5), 99) == [names(5)]
    assert [len(g) for g in plan_groups(names(7), 1)] == [3, 2, 2]  # groups of 1 cannot run NCCL
    assert plan_groups([], 4) == []
    with pytest.raises(ValueError):
        plan_groups(["a", "a"], 2)


def test_first_round_is_the_soak_groups_and_all_pass():
    loc = Localizer(names(12), 4)
    assert loc.next_tests() == [frozenset(g) for g in plan_groups(names(12), 4)]
    Rack(set()).drive(loc)
    assert loc.done and loc.round == 1 and loc.culprits == () and loc.unresolved == {}
    assert loc.cleared == frozenset(names(12))


def test_groups_given_by_the_runner():
    groups = [names(10)[0:3], names(10)[3:10]]
    loc = Localizer(names(10), 0, groups=groups)
    assert loc.next_tests() == [frozenset(g) for g in groups]
    assert Rack({"node0004"}).drive(loc).culprits == ("node0004",)
    with pytest.raises(ValueError, match="exactly one group"):
        Localizer(names(4), groups=[names(4)[:2], names(4)[1:]])


def test_record_refuses_a_trial_it_did_not_hand_out():
    loc = Localizer(names(4), 2)
    loc.next_tests()
    with pytest.raises(ValueError, match="not a pending trial"):
        loc.record({"node0000", "node0003"}, True)
    with pytest.raises(ValueError):
        Localizer(["a", "a"])


def test_one_bad_node_is_isolated_with_its_evidence():
    nodes = names(64)
    loc = Rack({"node0021"}).drive(Localizer(nodes, 8))
    assert loc.culprits == ("node0021",) and loc.unresolved == {}
    assert loc.cleared == frozenset(nodes) - {"node0021"}
    (blame,) = loc.blames()
    assert blame.confirmed and len(blame.direct) >= 2
    for trial in blame.direct:  # each isolating trial: the culprit and nodes that passed elsewhere
        assert not trial.passed and "node0021" in trial.nodes
        assert all(any(t.passed and n in t.nodes for t in loc.history) for n in trial.nodes - {"node0021"})
    assert blame.implicating[0].purpose == "group" and blame.passed == ()
    assert [t.index for t in loc.evidence("node0021")] == [t.index for t in blame.implicating]
    # two trials aimed at it alone, the second (the confirmation) with other anchors
    aimed = [t for t in blame.direct if t.subjects == {"node0021"}]
    assert [t.purpose for t in aimed] == ["split", "confirm"]
    assert not (aimed[0].nodes - aimed[0].subjects) & (aimed[1].nodes - aimed[1].subjects)
    summary = json.loads(json.dumps(loc.summary()))
    assert summary["culprits"][0]["node"] == "node0021" and summary["unresolved"] == {}
    assert summary["culprits"][0]["direct"][-1]["anchors"] == sorted(aimed[1].nodes - {"node0021"})
    assert summary["rounds"] == loc.round == 3 and summary["trials"] == len(loc.history)


@pytest.mark.parametrize("n, group", [(64, 8), (40, 5), (23, 5), (30, 7)])
def test_a_bad_node_in_every_group(n, group):
    groups = plan_groups(names(n), group)
    bad = {g[len(g) // 2] for g in groups}
    loc = Rack(bad).drive(Localizer(names(n), group))
    assert set(loc.culprits) == bad and loc.unresolved == {}
    assert loc.cleared == frozenset(names(n)) - bad


@pytest.mark.parametrize("n", [3, 4, 5, 8, 16, 33])
def test_one_group_no_anchors_still_splits_down(n):
    for bad in ({names(n)[0]}, {names(n)[-1]}, {names(n)[n // 2]}):
        loc = Rack(bad).drive(Localizer(names(n), 0))
        assert set(loc.culprits) == bad and loc.unresolved == {}, (n, bad, loc.summary())


def test_two_nodes_one_bad_cannot_be_told_apart():
    loc = Rack({"b"}).drive(Localizer(["a", "b"], 0))
    assert loc.culprits == () and set(loc.unresolved) == {"a", "b"}
    assert loc.stop_reason == "no informative trial left"


def test_three_nodes_two_bad_blames_nobody_wrongly():
    # every pair holds a bad node: no trial can pass, so nothing can be proven
    loc = Rack({"a", "c"}).drive(Localizer(["a", "b", "c"], 0))
    assert set(loc.culprits) <= {"a", "c"} and not loc.cleared & {"a", "c"}
    assert set(loc.unresolved) | set(loc.culprits) == {"a", "b", "c"}


def test_single_node_rack_is_tested_alone():
    loc = Rack({"solo"}).drive(Localizer(["solo"], 0))
    assert loc.culprits == ("solo",) and loc.min_nodes == 1


def test_binary_fanout_halves_pools():
    rack = Rack({"node0005"})
    loc = rack.drive(Localizer(names(16), 0, fanout=2, confirm=False))
    assert loc.culprits == ("node0005",)
    # 16 -> halves -> quarters -> the failing pair -> each of the pair with an anchor
    assert [sorted(len(t) for t in r) for r in rack.rounds] == [[16], [8, 8], [4, 4], [2, 2], [2, 2]]


def test_parallel_budget_is_respected():
    rack = Rack({"node0003", "node0040", "node0077"})
    loc = rack.drive(Localizer(names(96), 0, max_parallel=5))
    assert all(len(r) <= 5 for r in rack.rounds[1:])
    assert set(loc.culprits) == rack.bad and loc.unresolved == {}


def test_a_flaky_failure_blames_nobody():
    first = frozenset(names(32)[8:16])

    def flaky(test, count):  # a healthy group fails once, then never again
        return False if test == first and count == 1 else None

    loc = Rack(set(), flaky).drive(Localizer(names(32), 8))
    assert loc.culprits == () and loc.unresolved == {}
    assert loc.cleared == frozenset(names(32))
    assert any(t.purpose == "retest" and t.passed for t in loc.history)


def test_an_intermittent_node_is_never_cleared_and_no_healthy_node_blamed():
    bad = "node0010"
    state = {"runs": 0}

    def flaky(test, count):  # the bad node passes its 3rd trial, fails all others
        if bad in test:
            state["runs"] += 1
            return state["runs"] == 3
        return None

    loc = Rack({bad}, flaky).drive(Localizer(names(24), 8))
    assert set(loc.culprits) <= {bad}
    assert bad in set(loc.culprits) | set(loc.unresolved)
    assert loc.done


# --- anchors given beforehand (a nightly's golden partners) -----------------------------


def test_anchored_groups_one_per_node_under_test():
    nodes = ["s1", "s2", "g1", "g2", "g3"]
    assert plan_anchored_groups(nodes, {"g1", "g2", "g3"}, 0) == [["s1", "g1", "g3"], ["s2", "g2"]]
    # fewer anchors than nodes under test: one group per anchor, the nodes under test shared out
    assert plan_anchored_groups(["a", "b", "c", "g"], {"g"}, 0) == [["a", "b", "c", "g"]]
    # a group size caps the anchors a group takes; the spare ones soak together
    assert plan_anchored_groups(["a", "g1", "g2", "g3"], {"g1", "g2", "g3"}, 2) == [["a", "g1"], ["g2", "g3"]]
    assert plan_anchored_groups(["a", "g1", "g2"], {"g1", "g2"}, 2) == [["a", "g1", "g2"]]  # not one alone
    # no anchors, only anchors, or groups over the size anyway: as without anchors
    assert plan_anchored_groups(names(6), set(), 4) == plan_groups(names(6), 4)
    assert plan_anchored_groups(["a", "b"], {"a", "b"}, 0) == [["a", "b"]]
    assert plan_anchored_groups(["a", "b", "c", "d", "g"], {"g"}, 2) == plan_groups(
        ["a", "b", "c", "d", "g"], 2
    )


def test_two_nodes_under_test_beside_two_anchors_blame_the_bad_one_only():
    """Without anchors the four soak as one group and node s2 is judged from a group s1
    failed; with them each soaks beside an anchor, s1's group blames s1 alone, the anchors are
    never a trial's subject except to give the one beside s1 a run of its own."""
    nodes = ["s1", "s2", "g1", "g2"]
    assert Localizer(nodes, 0).next_tests() == [frozenset(nodes)]
    loc = Rack({"s1"}).drive(Localizer(nodes, 0, anchors=["g1", "g2"]))
    first = [t for t in loc.history if t.round == 1]
    assert {t.nodes: t.subjects for t in first} == {
        frozenset({"s1", "g1"}): frozenset({"s1"}),
        frozenset({"s2", "g2"}): frozenset({"s2"}),
    }
    assert loc.culprits == ("s1",) and loc.cleared == {"s2", "g1", "g2"} and loc.unresolved == {}
    assert all(b.confirmed for b in loc.blames())
    assert not [t for t in loc.history if {"s1", "s2"} <= t.nodes]
    assert [t.subjects for t in loc.history if t.subjects & {"g1", "g2"}] == [frozenset({"g1"})]
    assert loc.summary()["anchors"] == ["g1", "g2"] and "anchors" not in Localizer(nodes).summary()


def test_a_lone_anchor_is_trusted_and_the_node_beside_it_blamed():
    loc = Rack({"s"}).drive(Localizer(["s", "g"], 0, anchors=["g"]))
    assert loc.culprits == ("s",) and "g" in loc.cleared
    assert [(t.purpose, t.passed) for t in loc.history] == [("group", False), ("confirm", False)]
    with pytest.raises(ValueError):
        Localizer(["s", "g"], anchors=["x"])


@settings(max_examples=200, deadline=None)
@given(
    tested=st.integers(1, 12),
    anchors=st.integers(1, 12),
    group=st.integers(0, 6),
    seed=st.integers(0, 10**6),
)
def test_anchors_never_blamed_and_every_bad_node_under_test_found(tested, anchors, group, seed):
    rng = random.Random(seed)
    suspects, pads = [f"s{i:02d}" for i in range(tested)], [f"g{i:02d}" for i in range(anchors)]
    nodes = suspects + pads
    rng.shuffle(nodes)
    bad = {s for s in suspects if rng.random() < 0.3}
    loc = Rack(bad).drive(Localizer(nodes, group, anchors=pads, max_rounds=10_000))
    assert set(loc.culprits) == bad and loc.unresolved == {}
    assert loc.cleared == set(nodes) - bad
    first = [t for t in loc.history if t.round == 1]
    assert all(not t.subjects & set(pads) for t in first)
    if anchors >= tested:  # enough anchors: no soak group holds two nodes under test
        assert all(len(t.subjects) <= 1 for t in first)  # 0: spare anchors over the group size


# --- simulation at scale ------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("group", [0, 8, 32])
def test_simulation_1024_nodes(k, group, record_property):
    n = 1024
    minimum = math.ceil(math.log2(math.comb(n, k)))  # information-theoretic minimum number of tests
    for seed in range(4):
        bad = set(random.Random(seed * 7919 + k).sample(names(n), k))
        loc = Rack(bad).drive(Localizer(names(n), group))
        assert set(loc.culprits) == bad, (seed, sorted(bad), loc.culprits)
        assert loc.unresolved == {} and loc.cleared == frozenset(names(n)) - bad
        assert all(b.confirmed for b in loc.blames())
        # parallel rounds stay far under the sequential minimum (a count, not a time)
        assert loc.round <= minimum, loc.stats
        record_property(f"seed{seed}", loc.stats)


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 40),
    group=st.integers(0, 12),
    k=st.integers(0, 6),
    seed=st.integers(0, 10**6),
    fanout=st.sampled_from([None, 2, 3]),
    max_parallel=st.sampled_from([None, 1, 2, 64]),
)
def test_never_blames_a_healthy_node_never_clears_a_bad_one(n, group, k, seed, fanout, max_parallel):
    nodes = names(n)
    bad = set(random.Random(seed).sample(nodes, min(k, n)))
    # The round budget is taken out of the way here (with one test per round, 6 bad nodes in 30
    # need more than the default 40 rounds); what a budget stop leaves is tested below.
    loc = Rack(bad).drive(
        Localizer(nodes, group, fanout=fanout, max_parallel=max_parallel, max_rounds=10_000)
    )
    assert loc.done
    assert set(loc.culprits) <= bad
    assert not loc.cleared & bad
    assert set(loc.culprits) | set(loc.unresolved) | loc.cleared == set(nodes)
    if n - len(bad) >= 2:  # two good nodes exist: a trial can pass, and then anchors exist
        assert set(loc.culprits) == bad and loc.unresolved == {}, loc.summary()


def test_a_round_budget_stop_blames_nobody_and_says_why():
    nodes = names(30)
    bad = set(random.Random(0).sample(nodes, 6))
    loc = Rack(bad).drive(Localizer(nodes, 0, max_parallel=1, max_rounds=40))
    assert loc.done and loc.stop_reason == "stopped after 40 rounds"
    assert set(loc.culprits) <= bad and not loc.cleared & bad
    assert loc.unresolved and all(reason for reason in loc.unresolved.values())
    assert set(loc.culprits) | set(loc.unresolved) | loc.cleared == set(nodes)
