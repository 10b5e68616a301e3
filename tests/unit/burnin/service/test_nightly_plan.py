"""The nightly's selection rules and how it gives each node back to Slurm (pure)."""

from __future__ import annotations

from datetime import datetime

from burnin.parsers.slurm import SlurmNode, parse_sinfo_nodes
from burnin.plan.partners import partner_count
from burnin.service.nightly_plan import (
    NodeView,
    Return,
    Why,
    nightly_reason,
    nightly_run_of,
    outside_reservation,
    plan_night,
    return_action,
    revalidation_count,
)

# sinfo -N -h -o '%N|%T|%U|%H|%E', as Slurm 22.05 prints it (the lab's)
SINFO = """\
n01|idle|Unknown|Unknown|none
n02|drained|root(0)|2026-11-24T03:01:02|bringup: gpu_inventory: 7 GPU(s) found, the profile has 8
n03|draining|alice(1001)|2026-11-24T03:05:00|PSU swap, ticket 4711
n04|allocated|Unknown|Unknown|none
n05|drained|root(0)|2026-11-24T02:00:00|bringup nightly run 7
n06|idle|Unknown|Unknown|none
n07|mixed|Unknown|Unknown|none
"""
SLURM = {n.name: n for n in parse_sinfo_nodes(SINFO)}


def view(name: str, state: str, proven: str | None = None) -> NodeView:
    return NodeView(name, state, SLURM.get(name), datetime.fromisoformat(proven) if proven else None)


def test_repaired_nodes_are_tested_with_idle_golden_partners():
    plan = plan_night(
        [view("n01", "golden"), view("n02", "repair"), view("n04", "golden"), view("n06", "golden")], set()
    )
    assert [(p.node, p.why) for p in plan.tested] == [("n02", Why.REPAIRED)]
    # n04 runs a job: never a partner; n01 and n06 are idle and in service
    assert [p.node for p in plan.partners] == ["n01", "n06"]
    assert plan.nodes == ["n02", "n01", "n06"]


def test_nodes_the_night_holds_outside_its_reservation_are_named():
    """Inside a reservation nothing is drained: a partner or a revalidated node the reservation
    does not cover could take a user's job mid-test."""
    views = [
        view("n01", "golden", "2026-11-20T00:00:00"),
        view("n02", "repair"),
        view("n06", "golden", "2026-11-23T00:00:00"),
        view("n07", "golden", "2026-11-01T00:00:00"),
    ]
    plan = plan_night(views, set(), revalidate_pct=25)
    assert plan.nodes == ["n02", "n07", "n01", "n06"]  # n07: revalidated (proven longest ago)
    assert outside_reservation(plan, ["n01", "n02", "n03"]) == ["n07", "n06"]
    assert outside_reservation(plan, ["n07", "n06", "n02", "n01"]) == []
    assert outside_reservation(plan, []) == plan.nodes
    assert outside_reservation(plan_night([view("n01", "golden")], set()), []) == []  # holds nothing


def test_nothing_repaired_nothing_tested_and_no_partner_taken():
    plan = plan_night([view("n01", "golden"), view("n06", "golden"), view("n02", "failed")], set())
    assert plan.tested == [] and plan.partners == [] and plan.give_back == []


def test_partners_are_bounded():
    views = [view("n02", "repair"), view("n01", "golden"), view("n06", "golden")]
    assert [p.node for p in plan_night(views, set(), partners=1).partners] == ["n01"]
    assert plan_night(views, set(), partners=0).partners == []


IDLE_RACK = (
    "\n".join(f"g{i:02d}|idle|Unknown|Unknown|none" for i in range(1, 7))
    + "\n"
    + "\n".join(
        f"r{i:02d}|drained|root(0)|2026-11-24T03:01:02|bringup: gpu_inventory: 7 GPU(s) found"
        for i in range(1, 5)
    )
)


def test_partners_scale_with_the_nodes_tested_at_least_two():
    """One golden partner per tested node (at least two) by default, so every repaired
    node gets its own partner in each ib round and its own nccl group; --partners N caps it."""
    slurm = {n.name: n for n in parse_sinfo_nodes(IDLE_RACK)}
    golden = [NodeView(f"g{i:02d}", "golden", slurm[f"g{i:02d}"]) for i in range(1, 7)]

    def partners(repaired: int, **kw) -> list[str]:
        views = [NodeView(f"r{i:02d}", "repair", slurm[f"r{i:02d}"]) for i in range(1, repaired + 1)]
        return [p.node for p in plan_night([*views, *golden], set(), **kw).partners]

    assert partners(1) == ["g01", "g02"]
    assert partners(3) == ["g01", "g02", "g03"]
    assert partners(4, partners=2) == ["g01", "g02"]  # the operator's cap
    assert partner_count(0) == 2 and partner_count(9) == 9 and partner_count(9, 0) == 0


def test_a_repaired_node_an_operator_drained_is_tested_and_said_never_resumed():
    plan = plan_night([view("n03", "repair")], set())
    assert plan.tested[0].node == "n03" and "never resumed" in plan.tested[0].note


def test_drains_of_a_dead_nightly_are_retested_or_given_back():
    mid_test = plan_night([view("n05", "burnin")], live_runs={3})
    assert [(p.node, p.why) for p in mid_test.tested] == [("n05", Why.LEFTOVER)]
    partner = plan_night([view("n05", "golden")], live_runs=set())
    assert [p.node for p in partner.give_back] == ["n05"] and partner.tested == []
    failed = plan_night([view("n05", "failed")], live_runs=set())
    assert failed.tested == failed.give_back == [] and [p.node for p in failed.keep] == ["n05"]


DEAD_NIGHT = """\
r01|drained|root(0)|2026-11-24T02:00:00|bringup nightly run 7
r02|drained|root(0)|2026-11-24T02:00:00|bringup nightly run 7
r03|drained|root(0)|2026-11-24T02:00:00|bringup nightly run 7
r04|drained|root(0)|2026-11-24T02:00:00|bringup nightly run 7
r05|drained|root(0)|2026-11-24T02:00:00|bringup nightly run 7: gpu_inventory: 7 GPU(s) found
"""


def test_the_golden_nodes_a_dead_night_held_stand_beside_its_leftover():
    """Killed while it held every node: the next night re-tests r02 beside r01 and r03 (golden,
    drained only by the dead run), not alone: a repaired node tested without golden anchors
    has nothing to be judged against at scale."""
    slurm = {n.name: n for n in parse_sinfo_nodes(DEAD_NIGHT)}
    states = {"r01": "golden", "r02": "burnin", "r03": "golden", "r04": "failed", "r05": "failed"}
    plan = plan_night([NodeView(n, st, slurm[n]) for n, st in states.items()], live_runs=set())
    assert [(p.node, p.why) for p in plan.tested] == [("r02", Why.LEFTOVER)]
    assert [p.node for p in plan.partners] == ["r01", "r03"]
    assert plan.give_back == []  # the night holds them and gives them back at its end


def test_a_failed_node_a_dead_night_left_with_a_bare_drain_is_kept_to_get_its_finding():
    slurm = {n.name: n for n in parse_sinfo_nodes(DEAD_NIGHT)}
    plan = plan_night(
        [NodeView("r04", "failed", slurm["r04"]), NodeView("r05", "failed", slurm["r05"])], set()
    )
    assert [(p.node, p.why) for p in plan.keep] == [("r04", Why.LEFTOVER)]
    assert [n for n, _ in plan.skipped] == ["r05"]  # its reason already says why: nothing to do


def test_drains_of_a_live_nightly_are_not_touched():
    plan = plan_night([view("n05", "burnin")], live_runs={7})
    assert plan.tested == [] and plan.skipped == [("n05", "held by the live nightly run 7")]


def test_revalidation_takes_the_share_proven_longest_ago_among_nodes_in_service():
    views = [
        view("n01", "golden", "2026-11-20T00:00:00"),
        view("n04", "golden", "2026-11-01T00:00:00"),  # busy: drained and waited for
        view("n06", "golden", "2026-11-10T00:00:00"),
        view("n07", "golden", "2026-11-22T00:00:00"),
        view("n03", "golden", "2026-10-01T00:00:00"),  # drained by an operator: not in service
    ]
    plan = plan_night(views, set(), revalidate_pct=40)  # 40 % of 5 golden = 2
    assert [(p.node, p.why) for p in plan.tested] == [("n04", Why.REVALIDATE), ("n06", Why.REVALIDATE)]
    assert [p.node for p in plan.partners] == ["n01"]  # n07 runs a job (mixed)
    assert plan_night(views, set(), revalidate_pct=0).tested == []


def test_revalidation_count():
    assert revalidation_count(100, 5) == 5
    assert revalidation_count(3, 10) == 1  # at least one above 0 %
    assert revalidation_count(3, 0) == 0
    assert revalidation_count(0, 50) == 0
    assert revalidation_count(4, 100) == 4


def test_nightly_reason_round_trip_and_others_are_not_nightly():
    assert nightly_reason(12) == "bringup nightly run 12"
    assert nightly_run_of(nightly_reason(12, "gpu_inventory: 7 GPU(s)")) == 12
    assert nightly_run_of("bringup: gpu_inventory: 7 GPU(s)") is None
    assert nightly_run_of("PSU swap, ticket 4711") is None
    assert len(nightly_reason(3, "x" * 400).encode()) <= 255


def test_golden_after_the_night_and_drained_by_the_project_is_resumed():
    assert return_action("golden", SLURM["n05"], 9).action is Return.RESUME
    assert return_action("golden", SLURM["n02"], 9).action is Return.RESUME  # a health drain
    assert return_action("golden", SLURM["n01"], 9).action is Return.NOTHING


def test_an_operators_drain_is_never_resumed_nor_rewritten():
    for state in ("golden", "failed", "burnin"):
        act = return_action(state, SLURM["n03"], 9, "gpu: x")
        assert act.action is Return.LEAVE and "alice" in act.note and act.reason == ""


def test_a_failed_node_stays_drained_with_its_finding():
    act = return_action("failed", SLURM["n05"], 9, "gpu_inventory: 7 GPU(s) found")
    assert act == act.__class__(Return.KEEP, "bringup nightly run 9: gpu_inventory: 7 GPU(s) found")
    assert return_action("failed", SLURM["n01"], 9, "x").action is Return.KEEP  # not drained: drained


def test_a_node_not_proven_stays_drained_and_a_node_slurm_lacks_is_left():
    act = return_action("burnin", SLURM["n05"], 9, "nccl_soak: could not run")
    assert (
        act.action is Return.KEEP
        and act.reason == "bringup nightly run 9: not proven: nccl_soak: could not run"
    )
    assert return_action("golden", None, 9).action is Return.LEAVE


def test_slurm_node_without_drain_is_not_busy_when_idle():
    from burnin.service.nightly_plan import is_busy

    assert [n for n, s in SLURM.items() if is_busy(s)] == ["n03", "n04", "n07"]
    assert not is_busy(SlurmNode("x", "idle", True))


# Two hardware profiles in one rack: a (g01, g02, r02) and b (g03, g04, r01, g05), profile a's
# golden nodes first in rack order. The nccl stage soaks each profile on its own (its floors are
# the profile's), so a partner of the other profile is no anchor there.
TWO_PROFILES = {"g01": "a", "g02": "a", "g03": "b", "g04": "b", "r01": "b", "r02": "a", "g05": "b"}


def two_profile_rack(**states: str) -> list[NodeView]:
    slurm = {n.name: n for n in parse_sinfo_nodes(IDLE_RACK)}
    return [
        NodeView(n, states.get(n, "golden" if n.startswith("g") else "repair"), slurm[n], profile=p)
        for n, p in TWO_PROFILES.items()
    ]


def test_partners_are_of_the_tested_nodes_profile():
    """In rack order r01 (profile b) would get g01 and g02, both of profile a:
    its nccl soak (profile b alone) would have no anchor and fall back to grouping the suspects
    together. Each profile's tested nodes get partners of their own profile, as many as
    partner_count says for that profile's tested nodes."""
    plan = plan_night(two_profile_rack(r02="golden"), set())
    assert [p.node for p in plan.tested] == ["r01"]
    assert [p.node for p in plan.partners] == ["g03", "g04"]  # profile b, not g01/g02 (a)
    plan = plan_night(two_profile_rack(), set())
    assert [p.node for p in plan.tested] == ["r01", "r02"]
    assert [p.node for p in plan.partners] == ["g01", "g02", "g03", "g04"]  # two of each, rack order
    assert plan.notes == []
    # no tested node of a profile: none of its golden nodes is held
    plan = plan_night(two_profile_rack(r01="golden"), set())
    assert [p.node for p in plan.partners] == ["g01", "g02"]


def test_partners_cap_is_per_profile():
    """--partners N: at most N golden partners for each profile among the tested nodes (each
    profile soaks on its own, so a night-wide cap would starve one profile of anchors)."""
    plan = plan_night(two_profile_rack(), set(), partners=1)
    assert [p.node for p in plan.partners] == ["g01", "g03"]
    assert plan_night(two_profile_rack(), set(), partners=0).partners == []
    assert plan_night(two_profile_rack(), set(), partners=0).notes == []  # none wanted, none short


def test_a_profile_short_of_free_golden_nodes_gets_what_there_is_and_the_plan_says_so():
    # g03 failed and g04 marked repaired (profile b): g04 and r01 get g05 alone
    plan = plan_night(two_profile_rack(g03="failed", g04="repair"), set())
    assert [p.node for p in plan.tested] == ["g04", "r01", "r02"]  # g04: marked repaired too
    assert [p.node for p in plan.partners] == ["g01", "g02", "g05"]
    assert plan.notes == ["profile b: 1 golden partner free of the 2 wanted for g04, r01"]
    # none at all of profile b: said too, and profile a still gets its own
    plan = plan_night(two_profile_rack(g03="failed", g04="failed", g05="failed"), set())
    assert [p.node for p in plan.partners] == ["g01", "g02"]
    assert plan.notes == ["profile b: no golden partner free of the 2 wanted for r01"]


def test_a_golden_node_a_dead_night_left_stands_only_beside_its_own_profile():
    """A golden node drained by a dead nightly may be a partner first, but only of its profile:
    otherwise it is given back at once, as before."""
    dead = SlurmNode("g03", "drained", True, reason="bringup nightly run 7")
    views = [
        v if v.name != "g03" else NodeView("g03", "golden", dead, profile="b") for v in two_profile_rack()
    ]
    plan = plan_night([v for v in views if v.name != "r01"], set())  # only r02 (profile a) tested
    assert [p.node for p in plan.partners] == ["g01", "g02"]
    assert [p.node for p in plan.give_back] == ["g03"]
    plan = plan_night(views, set())  # r01 (profile b) tested too: g03 stands beside it
    assert [p.node for p in plan.partners] == ["g01", "g02", "g03", "g04"] and plan.give_back == []
