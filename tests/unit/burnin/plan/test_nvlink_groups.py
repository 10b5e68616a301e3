"""NCCL groups by NVLink domain (the mnnvl and ib passes) and the rack-aware localiser, driven by
simulated NVL72 racks: a bad switch tray makes every trial of its rack fail with MNNVL on."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from burnin.plan.nccl_groups import Localizer
from burnin.plan.nvlink_groups import (
    MNNVL_ENV,
    RackLocalizer,
    domain_key,
    domains_from,
    ib_pass_groups,
    plan_nvlink_passes,
    rack_wide,
    read_passes,
    registered,
)

UUID = "5f3e0a3c-1b2d-4e5f-8a9b-0c1d2e3f4a5b"


def racks(count: int = 4, trays: int = 18) -> dict[str, list[str]]:
    return {f"{UUID}/{r + 1}": [f"r{r + 1:02d}-t{t + 1:02d}" for t in range(trays)] for r in range(count)}


def drive(loc, fails) -> None:
    while tests := loc.next_tests():
        for test in tests:
            loc.record(test, not fails(test))


def test_domain_key_needs_a_real_clique_and_cluster():
    assert domain_key({"clique_id": "32766", "cluster_uuid": UUID}) == f"{UUID}/32766"
    assert domain_key({"clique_id": "0", "cluster_uuid": UUID}) is None
    assert domain_key({"clique_id": "7"}) is None
    assert domain_key(None) is None


def test_domains_from_reads_the_fabric_check_only():
    rows = {
        "a": [SimpleNamespace(check="gpu_inventory", metrics={"clique_id": "9", "cluster_uuid": UUID})],
        "b": [SimpleNamespace(check="gpu_fabric_state", metrics={"clique_id": "9", "cluster_uuid": UUID})],
        "c": [SimpleNamespace(check="gpu_fabric_state", metrics={"states": {"In Progress": 4}})],
    }
    assert domains_from(rows) == {"b": f"{UUID}/9"}


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [
        ({"states": {"Completed": 4}, "clique_id": "3", "cluster_uuid": UUID}, True),
        ({"states": {"Completed": 2, "In Progress": 2}}, False),
        ({"states": {"Not Started": 4}}, False),
        ({"states": {"Completed": 4}}, False),  # CliqueId 0: registered with no multi-node domain
        ({"states": {"N/A": 4}}, None),
        (None, None),
    ],
)
def test_registered(metrics, expected):
    assert registered(metrics) is expected


def test_passes_group_by_domain_and_differ_only_in_mnnvl():
    domains = {n: d for d, ns in racks(2, 3).items() for n in ns}
    nodes = ["r02-t01", "r01-t01", "r01-t02", "r02-t02", "r01-t03", "r02-t03"]  # interleaved
    plan = plan_nvlink_passes(nodes, domains)
    mnnvl, ib = plan.passes
    assert mnnvl.env == {MNNVL_ENV: "1"} and ib.env == {MNNVL_ENV: "0"}
    assert mnnvl.groups == (("r02-t01", "r02-t02", "r02-t03"), ("r01-t01", "r01-t02", "r01-t03"))
    assert ib.groups == mnnvl.groups and plan.outside == ()


def test_nodes_outside_a_domain_run_the_ib_pass_only():
    domains = {"a1": "d1", "a2": "d1", "lonely": "d2"}
    plan = plan_nvlink_passes(["a1", "a2", "lonely", "x", "y"], domains)
    mnnvl, ib = plan.passes
    assert mnnvl.groups == (("a1", "a2"),)
    assert ib.groups == (("a1", "a2"), ("lonely", "x", "y")) and ib.domains == ("d1", None)
    assert plan.outside == ("lonely", "x", "y")


def test_no_domain_at_all_is_an_ib_pass_alone():
    plan = plan_nvlink_passes(["a", "b", "c"], {})
    assert [p.name for p in plan.passes] == ["ib"]


def test_a_node_listed_twice_is_refused():
    with pytest.raises(ValueError):
        plan_nvlink_passes(["a", "a"], {})


@pytest.mark.parametrize(
    ("mnnvl", "ib", "reading"),
    [
        (True, True, "fine"),
        (False, True, "nvlink"),
        (False, False, "network"),
        (True, False, "network"),
        (None, True, "unknown"),
        (False, None, "unknown"),
    ],
)
def test_read_passes(mnnvl, ib, reading):
    assert read_passes(mnnvl, ib) == reading


def test_a_bad_switch_tray_is_the_rack_after_one_split():
    domains = racks()
    bad = set(domains[f"{UUID}/3"])
    loc = RackLocalizer(domains)
    drive(loc, lambda t: bool(t & bad))
    assert loc.fabric == [f"{UUID}/3"]
    assert loc.culprits == [] and loc.unresolved == []
    assert loc.round == 2  # the domains' groups, then one split of the slow rack


def test_one_bad_tray_is_blamed_alone():
    domains = racks()
    loc = RackLocalizer(domains)
    drive(loc, lambda t: "r02-t07" in t)
    assert loc.fabric == [] and loc.culprits == ["r02-t07"]


def test_trials_hold_the_least_trays_the_nvlink_floor_covers_and_the_rack_rule_still_holds():
    """GB300's NVLink-domain floor covers 3 trays or more: no trial of a domain that large holds
    fewer, so none is judged against a lesser floor; a bad switch tray is still its rack after
    one split (18 trays in 6 thirds); a domain of 2 trays keeps pairs."""
    domains = {**racks(count=2), f"{UUID}/9": ["r09-t01", "r09-t02"]}
    bad = set(domains[f"{UUID}/2"])
    seen: list[frozenset[str]] = []
    loc = RackLocalizer(domains, min_nodes=3)

    def fails(test: frozenset[str]) -> bool:
        seen.append(test)
        return bool(test & bad)

    drive(loc, fails)
    assert loc.fabric == [f"{UUID}/2"] and loc.culprits == []
    assert all(len(t) >= 3 for t in seen if not t <= set(domains[f"{UUID}/9"]))
    assert len([t for t in seen if t <= bad]) == 1 + 6  # the rack's group, then its thirds
    one = RackLocalizer(racks(count=1), min_nodes=3)
    drive(one, lambda t: "r01-t07" in t)
    assert one.fabric == [] and one.culprits == ["r01-t07"]


def test_two_bad_trays_of_one_rack_are_not_the_rack():
    domains = racks()
    loc = RackLocalizer(domains)
    drive(loc, lambda t: bool(t & {"r01-t02", "r01-t15"}))
    assert loc.fabric == [] and sorted(loc.culprits) == ["r01-t02", "r01-t15"]


def test_rack_wide_needs_a_split_not_the_group_alone():
    nodes = [f"t{i}" for i in range(6)]
    loc = Localizer(nodes, groups=[nodes])
    (group,) = loc.next_tests()
    loc.record(group, False)
    assert not rack_wide(loc, nodes)  # one failed group says only "someone in here"
    for test in loc.next_tests():
        loc.record(test, False)
    assert rack_wide(loc, nodes)


def test_rack_wide_is_false_once_a_tray_passed():
    nodes = [f"t{i}" for i in range(6)]
    loc = Localizer(nodes, groups=[nodes])
    drive(loc, lambda t: "t0" in t)
    assert not rack_wide(loc, nodes)


def test_the_ib_pass_pairs_a_blamed_tray_with_a_cleared_one():
    domains = racks(2, 6)
    groups, anchors = ib_pass_groups(domains, ["r01-t03"], ["r01-t01", "r01-t02", "r01-t04"])
    d1, d2 = domains
    assert groups[d1] == [["r01-t03", "r01-t01"], ["r01-t02", "r01-t04", "r01-t05", "r01-t06"]]
    assert anchors == {d1: ["r01-t01"]}
    assert groups[d2] == [domains[d2]]


def test_the_ib_pass_runs_a_rack_blamed_as_a_whole_as_one_group():
    domains = racks(1, 4)
    (d,) = domains
    groups, anchors = ib_pass_groups(domains, [], [], fabric=[d])
    assert groups == {d: [domains[d]]} and anchors == {}


def test_ib_pass_tells_a_tray_slow_both_ways_in_one_targeted_trial_and_its_confirmation():
    domains = racks()
    mnnvl = RackLocalizer(domains)
    drive(mnnvl, lambda t: "r04-t11" in t)
    groups, anchors = ib_pass_groups(domains, mnnvl.culprits, mnnvl.cleared, mnnvl.fabric)
    ib = RackLocalizer(domains, groups=groups, anchors=anchors)
    drive(ib, lambda t: "r04-t11" in t)
    assert ib.culprits == ["r04-t11"] and ib.round == 2  # the pair, then the confirmation
    clean = RackLocalizer(domains, groups=groups, anchors=anchors)
    drive(clean, lambda t: False)
    assert clean.culprits == [] and clean.round == 1
