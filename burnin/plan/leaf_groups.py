"""The nccl soak's first round grouped by leaf switch (pure), and a slow leaf named as a leaf.

A leaf switch or its uplinks going bad slows every node cabled to it. Soak groups cut by size
mix nodes of several leaves, so the localisation then blames the nodes one by one wherever
their trials crossed the bad leaf; grouped by leaf, the bad leaf's group fails as one, its
nodes fail every trial beside nodes of other leaves (docs/burnin.md, nccl stage), and
``slow_leaves`` names the leaf when the localisation blamed all of its nodes.

A node's leaf comes from ``ibnetdiscover -p`` (the ib stage's discovery): the switch each of
its HCA ports is cabled to. On a rail-optimised fabric a node's HCAs go to one leaf per rail,
and the nodes of a scalable unit share the same set, so nodes group by the set of their leaves.
Nodes of no known leaf (not in the fabric map) soak in a group of their own, and so do nodes
whose leaf has no second node to soak with; the groups' notes say so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from burnin.parsers.ibnetdiscover import IbnetPort, guid_key
from burnin.plan.nccl_groups import MIN_TEST_NODES
from burnin.result import Action, Finding, Severity, info

NO_LEAF = "no known leaf"


@dataclass(frozen=True, order=True)
class Leaf:
    guid: str  # the switch's node GUID as ibnetdiscover prints it
    name: str | None = None  # its node description ('ib-leaf01'), when it has one

    @property
    def label(self) -> str:
        return f"{self.name} ({self.guid})" if self.name else self.guid


@dataclass
class LeafGroups:
    groups: list[list[str]] = field(default_factory=list)  # round 1: a partition of the nodes
    labels: list[str] = field(default_factory=list)  # per group: 'leaf ib-leaf01 (0x..)', 'no known leaf'
    leaves: list[tuple[Leaf, ...]] = field(default_factory=list)  # per group; () when not one leaf set
    notes: dict[str, str] = field(default_factory=dict)  # node -> why it soaks apart from a leaf group


def node_leaves(
    fabric: Iterable[IbnetPort], port_guids: Mapping[str, Iterable[str | None]]
) -> dict[str, tuple[Leaf, ...]]:
    """node -> the switches its HCA ports are cabled to (distinct, sorted); () when none is known."""
    cabled = {
        guid_key(p.guid): Leaf(p.peer_guid or "", p.peer_name)
        for p in fabric
        if p.kind == "CA" and p.peer_kind == "SW" and p.peer_guid
    }
    out = {}
    for node, guids in port_guids.items():
        found = {cabled[k] for g in guids if (k := guid_key(g)) is not None and k in cabled}
        out[node] = tuple(sorted(found))
    return out


def _label(leaves: tuple[Leaf, ...]) -> str:
    if not leaves:
        return NO_LEAF
    return ("leaf " if len(leaves) == 1 else "leaves ") + ", ".join(leaf.label for leaf in leaves)


def leaf_groups(
    nodes: Sequence[str], leaves: Mapping[str, tuple[Leaf, ...]], min_nodes: int = MIN_TEST_NODES
) -> LeafGroups:
    """One soak group per set of leaves, in the nodes' order; nodes of no known leaf, and those
    whose leaf set has fewer than ``min_nodes`` nodes, pooled in one group (a lone one joins
    the smallest leaf group, which then names no leaf)."""
    by_leaves: dict[tuple[Leaf, ...], list[str]] = {}
    for node in nodes:
        by_leaves.setdefault(tuple(sorted(set(leaves.get(node, ())))), []).append(node)
    out = LeafGroups()
    pool: list[str] = list(by_leaves.pop((), []))
    for node in pool:
        out.notes[node] = f"{NO_LEAF} (its HCAs are not in the fabric map): soaked apart from the leaf groups"
    for key, members in by_leaves.items():
        if len(members) < min_nodes:
            pool += members
            for node in members:
                out.notes[node] = f"alone under {_label(key)}: soaked with the nodes of no leaf group"
        else:
            out.groups.append(members)
            out.labels.append(_label(key))
            out.leaves.append(key)
    if len(pool) >= min_nodes or (pool and not out.groups):
        out.groups.append(pool)
        out.labels.append(NO_LEAF)
        out.leaves.append(())
    elif pool:
        i = min(range(len(out.groups)), key=lambda j: len(out.groups[j]))
        why = out.notes[pool[0]].split(":")[0]
        out.notes[pool[0]] = f"{why}, and no other such node to soak with: soaked with {out.labels[i]}"
        out.groups[i] = out.groups[i] + pool
        out.labels[i] = f"{out.labels[i]} and {pool[0]} ({NO_LEAF} to soak with)"
        out.leaves[i] = ()
    order = {n: k for k, n in enumerate(nodes)}
    for g in out.groups:
        g.sort(key=order.__getitem__)
    return out


def slow_leaves(grouping: LeafGroups, culprits: Iterable[str]) -> dict[str, list[str]]:
    """'leaf <name or GUID>' -> its nodes, for each one-leaf group whose every node (two or more)
    the localisation blamed: the leaf switch or its uplinks, not that many bad nodes."""
    blamed = set(culprits)
    out = {}
    for group, leaves, label in zip(grouping.groups, grouping.leaves, grouping.labels, strict=True):
        if len(leaves) == 1 and len(group) >= 2 and set(group) <= blamed:
            out[label] = list(group)
    return out


def leaf_findings(grouping: LeafGroups, culprits: Iterable[str]) -> dict[str, list[Finding]]:
    """node -> what its nccl result adds: the slow leaf it sits under (critical: the leaf's
    switch or uplink cables), or why it soaked apart from a leaf group (info)."""
    out: dict[str, list[Finding]] = {
        n: [info(f"nccl soak group: {why}")] for n, why in grouping.notes.items()
    }
    for label, nodes in slow_leaves(grouping, culprits).items():
        said = Finding(
            f"every node under {label} ({len(nodes)}: {', '.join(nodes)}) failed its trials beside nodes of "
            "other leaves: the leaf switch or its uplinks, not that many bad nodes",
            Severity.CRITICAL,
            Action.REPLACE_CABLE,
            subject=label,
        )
        for node in nodes:
            out.setdefault(node, []).insert(0, said)
    return out
