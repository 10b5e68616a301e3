"""The nccl soak's first round grouped by leaf switch, and a whole slow group named as its leaf."""

from __future__ import annotations

from burnin.parsers.ibnetdiscover import IbnetPort
from burnin.plan.leaf_groups import Leaf, leaf_findings, leaf_groups, node_leaves, slow_leaves
from burnin.result import Action, Severity


def cable(guid: str, leaf_guid: str, leaf_name: str | None, port: int) -> IbnetPort:
    return IbnetPort("CA", 10, 1, guid, "4x", "NDR", "node HCA-1", "SW", 1, port, leaf_guid, leaf_name)


L1 = Leaf("0x10", "ib-leaf01")
L2 = Leaf("0x20", None)


FABRIC = [
    cable("0xa1", "0x10", "ib-leaf01", 1),
    cable("0xa2", "0x10", "ib-leaf01", 2),
    cable("0xb1", "0x20", None, 1),
    cable("0xb2", "0x20", None, 2),
    cable("0xb3", "0x20", None, 3),
    IbnetPort("SW", 1, 40, "0x10", "4x", "NDR", "ib-leaf01", "SW", 2, 1, "0x99", "ib-spine01"),  # an uplink
]


def test_nodes_map_to_the_leaf_their_hca_is_cabled_to():
    guids = {"n1": ["0xA1"], "n2": ["0xa2"], "n3": ["0xb1"], "n4": ["0xb2", None], "n5": ["0xfff"], "n6": []}
    assert node_leaves(FABRIC, guids) == {
        "n1": (L1,),
        "n2": (L1,),
        "n3": (L2,),
        "n4": (L2,),
        "n5": (),
        "n6": (),
    }


def test_rail_optimised_nodes_group_by_the_set_of_their_leaves():
    """Each HCA of a rail-optimised node goes to another leaf (one per rail); nodes of one
    scalable unit share the same set, so they soak together."""
    r0, r1, other = Leaf("0x1", "su1-rail0"), Leaf("0x2", "su1-rail1"), Leaf("0x3", "su2-rail0")
    got = leaf_groups(["a", "b", "c", "d"], {"a": (r0, r1), "b": (r1, r0), "c": (other,), "d": (other,)})
    assert got.groups == [["a", "b"], ["c", "d"]]
    assert got.labels == ["leaves su1-rail0 (0x1), su1-rail1 (0x2)", "leaf su2-rail0 (0x3)"]
    assert got.leaves == [(r0, r1), (other,)]
    assert got.notes == {}


def test_nodes_of_no_known_leaf_soak_in_a_group_of_their_own_and_it_is_said():
    got = leaf_groups(
        ["n1", "n2", "n3", "n4", "n5"], {"n1": (L1,), "n2": (L1,), "n3": (), "n4": (), "n5": ()}
    )
    assert got.groups == [["n1", "n2"], ["n3", "n4", "n5"]]
    assert got.labels[1] == "no known leaf"
    assert got.leaves == [(L1,), ()]
    assert set(got.notes) == {"n3", "n4", "n5"} and "no known leaf" in got.notes["n3"]


def test_a_leaf_with_one_node_cannot_soak_alone_and_joins_the_leftovers():
    got = leaf_groups(["n1", "n2", "n3", "n4"], {"n1": (L1,), "n2": (L1,), "n3": (L2,), "n4": ()})
    assert got.groups == [["n1", "n2"], ["n3", "n4"]]
    assert got.leaves == [(L1,), ()]
    assert set(got.notes) == {"n3", "n4"} and "alone under leaf 0x20" in got.notes["n3"]


def test_a_lone_leftover_joins_the_smallest_leaf_group():
    leaves = {"n1": (L1,), "n2": (L1,), "n3": (L2,), "n4": (L2,), "n5": ()}
    got = leaf_groups(["n1", "n2", "n3", "n4", "n5"], leaves)
    assert got.groups == [["n1", "n2", "n5"], ["n3", "n4"]]
    assert got.leaves == [(), (L2,)]  # the leaf group with a stranger in it names no leaf
    assert set(got.notes) == {"n5"} and "soaked with leaf ib-leaf01 (0x10)" in got.notes["n5"]


def test_no_fabric_known_is_one_group():
    got = leaf_groups(["n1", "n2"], {})
    assert got.groups == [["n1", "n2"]] and got.leaves == [()]


def test_a_slow_leaf_is_named_as_the_leaf_not_as_its_nodes():
    """Every node of a leaf's group blamed: the leaf (its switch or uplinks), not n nodes."""
    leaves = {"n1": (L1,), "n2": (L1,), "n3": (L2,), "n4": (L2,), "n5": (L2,)}
    got = leaf_groups(["n1", "n2", "n3", "n4", "n5"], leaves)
    named = slow_leaves(got, culprits={"n3", "n4", "n5"})
    assert named == {"leaf 0x20": ["n3", "n4", "n5"]}
    assert slow_leaves(got, culprits={"n3", "n4"}) == {}  # two bad nodes under a leaf are two nodes
    assert slow_leaves(got, culprits={"n1", "n2", "n3", "n4", "n5"}) == {
        "leaf ib-leaf01 (0x10)": ["n1", "n2"],
        "leaf 0x20": ["n3", "n4", "n5"],
    }


def test_the_no_leaf_group_is_never_named_as_a_leaf():
    got = leaf_groups(["n1", "n2"], {"n1": (), "n2": ()})
    assert slow_leaves(got, culprits={"n1", "n2"}) == {}


def test_findings_name_the_leaf_on_each_of_its_nodes_and_say_who_soaked_apart():
    leaves = {"n1": (L1,), "n2": (L1,), "n3": (L2,), "n4": (L2,), "n5": ()}
    got = leaf_findings(leaf_groups(["n1", "n2", "n3", "n4", "n5"], leaves), culprits={"n3", "n4"})
    (first, *_) = got["n3"]
    assert (first.severity, first.action, first.subject) == (
        Severity.CRITICAL,
        Action.REPLACE_CABLE,
        "leaf 0x20",
    )
    assert "every node under leaf 0x20 (2: n3, n4)" in first.message
    assert got["n5"][0].severity is Severity.INFO and "no known leaf" in got["n5"][0].message
    assert "n1" not in got
