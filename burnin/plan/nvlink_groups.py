"""NCCL groups by NVLink domain on multi-node NVLink racks (GB200/GB300 NVL72), and the rack-aware
localiser. Pure: no I/O.

On an NVL72 the NVLink domain is the rack: 18 compute trays joined by 9 NVLink switch trays; a
GPU is in it once its fabric registration completed with a non-zero CliqueId and ClusterUUID
(burnin/checks/gpu_fabric.py; docs/platforms.md). The nccl stage runs two passes over the same
groups, one per domain (docs/burnin.md, "nccl stage on NVL72"):

- ``mnnvl``: ``NCCL_MNNVL_ENABLE=1``, the all-reduce over the rack's NVLink fabric;
- ``ib``: ``NCCL_MNNVL_ENABLE=0``, the same trays over InfiniBand only.

NCCL's MNNVL switch: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
(NCCL_MNNVL_ENABLE). Slow with MNNVL on but fine with it off: the NVLink fabric of that domain;
slow both ways: the network (``read_passes``).

``RackLocalizer`` drives one ``Localizer`` (burnin/plan/nccl_groups.py) per domain, in lockstep
rounds, and adds the rack rule: when every part of a domain's split failed and none of its trays
passed anything, the fault is the rack's (its switch trays), not 18 trays; that domain stops there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from burnin.plan.nccl_groups import MIN_TEST_NODES, Localizer, plan_groups

MNNVL_ENV = "NCCL_MNNVL_ENABLE"
FABRIC_CHECK = "gpu_fabric_state"


def domain_key(metrics: Mapping[str, Any] | None) -> str | None:
    """``CLUSTERUUID/CLIQUEID`` from a gpu_fabric_state result's metrics; None when the node is in
    no multi-node domain (the check records both only when every GPU is in one real domain)."""
    metrics = metrics or {}
    clique, cluster = metrics.get("clique_id"), metrics.get("cluster_uuid")
    if not clique or not cluster or str(clique) == "0":
        return None
    return f"{cluster}/{clique}"


def domains_from(results: Mapping[str, Iterable[Any]]) -> dict[str, str]:
    """Node -> NVLink domain, from each node's results of this run (objects with ``check`` and
    ``metrics``: burnin.result.Result); nodes with no domain are left out."""
    out: dict[str, str] = {}
    for node, rows in results.items():
        for r in rows:
            if r.check == FABRIC_CHECK and (key := domain_key(r.metrics)):
                out[node] = key
    return out


def registered(metrics: Mapping[str, Any] | None) -> bool | None:
    """Whether a tray's GPUs registered with the rack's NVLink fabric, from its gpu_fabric_state
    metrics: False when a GPU is still Not Started or In Progress, or all Completed in no domain
    (CliqueId 0); None when there is no state to tell (no result, N/A)."""
    metrics = metrics or {}
    states = metrics.get("states") or {}
    if any(s in states for s in ("Not Started", "In Progress")):
        return False
    if domain_key(metrics):
        return True
    if states and set(states) <= {"Completed"}:
        return False  # registered with no multi-node domain: CliqueId 0
    return None


@dataclass(frozen=True)
class NvlinkPass:
    """One pass of the nccl stage: its name, the environment it adds, its groups (a partition of
    ``nodes``)."""

    name: str  # 'mnnvl' or 'ib'
    env: dict[str, str]
    groups: tuple[tuple[str, ...], ...]
    domains: tuple[str | None, ...]  # each group's domain (None: nodes outside any domain)

    @property
    def nodes(self) -> list[str]:
        return [n for g in self.groups for n in g]


def domain_groups(nodes: Sequence[str], domains: Mapping[str, str]) -> dict[str, list[str]]:
    """The nodes in each domain, domains in the order their first node comes, nodes in order."""
    out: dict[str, list[str]] = {}
    for n in nodes:
        if (d := domains.get(n)) is not None:
            out.setdefault(d, []).append(n)
    return out


@dataclass(frozen=True)
class PassPlan:
    passes: tuple[NvlinkPass, ...]
    outside: tuple[str, ...]  # nodes in no domain (or alone in theirs): in the ib pass only, if 2+


def plan_nvlink_passes(
    nodes: Sequence[str], domains: Mapping[str, str], group_size: int = 0, min_nodes: int = MIN_TEST_NODES
) -> PassPlan:
    """Both passes over ``nodes``: one group per NVLink domain of at least ``min_nodes`` trays.
    The mnnvl pass holds those groups alone (multi-node NVLink exists only inside a domain); the
    ib pass the same groups, then the nodes outside any domain in ``plan_groups`` groups (when
    there are enough of them to run)."""
    if len(set(nodes)) != len(nodes):
        raise ValueError("plan_nvlink_passes: a node is listed twice")
    by_domain = domain_groups(nodes, domains)
    inside = {d: tuple(ns) for d, ns in by_domain.items() if len(ns) >= min_nodes}
    outside = tuple(n for n in nodes if domains.get(n) not in inside)
    mnnvl = NvlinkPass("mnnvl", {MNNVL_ENV: "1"}, tuple(inside.values()), tuple(inside))
    extra = plan_groups(outside, group_size, min_nodes) if len(outside) >= min_nodes else []
    ib = NvlinkPass(
        "ib",
        {MNNVL_ENV: "0"},
        (*inside.values(), *(tuple(g) for g in extra)),
        (*inside, *(None for _ in extra)),
    )
    passes = tuple(p for p in (mnnvl, ib) if p.groups)
    return PassPlan(passes, outside)


def read_passes(mnnvl_passed: bool | None, ib_passed: bool | None) -> str:
    """What a domain's two passes say: 'fine'; 'nvlink' (slow with MNNVL on, fine with it off:
    the domain's NVLink fabric); 'network' (slow both ways, or with MNNVL off alone: the
    InfiniBand side); 'unknown' (a pass that did not run or could not be judged)."""
    if mnnvl_passed is None or ib_passed is None:
        return "unknown"
    if mnnvl_passed and ib_passed:
        return "fine"
    if not ib_passed:
        return "network"
    return "nvlink"


def rack_wide(loc: Localizer, nodes: Iterable[str]) -> bool:
    """The rack rule: no tray of the domain passed a trial, and the latest localisation round's
    failed trials are at least two, disjoint, and cover every tray. With one fault at a time a bad
    tray makes one part fail, never all: every part failing is the rack's fabric."""
    members = set(nodes)
    if loc.cleared & members or loc.round < 2:
        return False
    latest = [t for t in loc.history if t.round == loc.round and t.purpose != "group"]
    if len(latest) < 2 or any(t.passed for t in latest):
        return False
    covered: set[str] = set()
    for t in latest:
        if t.nodes & covered:
            return False
        covered |= t.nodes
    return covered >= members


@dataclass
class RackLocalizer:
    """One ``Localizer`` per domain, run in lockstep (each round is every domain's next trials,
    disjoint); a domain that meets the rack rule stops and is reported as a whole."""

    domains: Mapping[str, Sequence[str]]
    max_parallel: int | None = 64
    confirm: bool = True
    # a domain's first-round groups (default: the domain as one group) and its trays proven good
    # already (anchors: never a trial's subject), as the ib pass gets them from ``ib_pass_groups``
    groups: Mapping[str, Sequence[Sequence[str]]] = field(default_factory=dict)
    anchors: Mapping[str, Iterable[str]] = field(default_factory=dict)
    # the fewest trays a trial holds in a domain that has as many (the NVLink pass on a profile
    # whose NVLink-domain floor covers groups of that size: burnin/stages/nccl.py)
    min_nodes: int = MIN_TEST_NODES
    locs: dict[str, Localizer] = field(init=False)
    fabric: list[str] = field(init=False, default_factory=list)  # domains blamed as a whole
    round: int = field(init=False, default=0)
    _owner: dict[frozenset[str], str] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.locs = {
            d: Localizer(
                list(ns),
                groups=[list(g) for g in self.groups.get(d, [ns])],
                max_parallel=self.max_parallel,
                confirm=self.confirm,
                anchors=self.anchors.get(d, ()),
                min_nodes=self.min_nodes if len(ns) >= self.min_nodes else MIN_TEST_NODES,
            )
            for d, ns in self.domains.items()
            if len(ns) >= MIN_TEST_NODES
        }

    def next_tests(self) -> list[frozenset[str]]:
        if self._owner:
            return list(self._owner)
        for d, loc in self.locs.items():
            if d not in self.fabric and rack_wide(loc, self.domains[d]):
                self.fabric.append(d)
        for d, loc in self.locs.items():
            if d not in self.fabric:
                for test in loc.next_tests():
                    self._owner[test] = d
        if self._owner:
            self.round += 1
        return list(self._owner)

    def record(self, test: Iterable[str], passed: bool, detail: str = "") -> None:
        key = frozenset(test)
        self.locs[self._owner.pop(key)].record(key, passed, detail)

    @property
    def culprits(self) -> list[str]:
        return [n for d, loc in self.locs.items() if d not in self.fabric for n in loc.culprits]

    @property
    def unresolved(self) -> list[str]:
        return [n for d, loc in self.locs.items() if d not in self.fabric for n in loc.unresolved]

    @property
    def cleared(self) -> set[str]:
        return {n for loc in self.locs.values() for n in loc.cleared}

    @property
    def trials(self) -> int:
        return sum(len(loc.history) for loc in self.locs.values())


def ib_pass_groups(
    domains: Mapping[str, Sequence[str]],
    culprits: Iterable[str],
    cleared: Iterable[str],
    fabric: Iterable[str] = (),
) -> tuple[dict[str, list[list[str]]], dict[str, list[str]]]:
    """The ib pass's first round per domain, after the mnnvl pass: each tray the mnnvl pass
    blamed runs beside one tray it cleared (so the ib pass says at once whether the tray is slow
    both ways, without localising it again), the domain's other trays as one group. A domain
    blamed as a whole (``fabric``), or with no cleared tray to spare, runs as one group.
    Returns (groups, anchors) for ``RackLocalizer``."""
    blamed, good, whole = set(culprits), set(cleared), set(fabric)
    groups: dict[str, list[list[str]]] = {}
    anchors: dict[str, list[str]] = {}
    for d, nodes in domains.items():
        bad = [n for n in nodes if n in blamed]
        free = [n for n in nodes if n in good and n not in blamed]
        if d in whole or not bad or len(free) < len(bad):
            groups[d] = [list(nodes)]
            continue
        pads = free[: len(bad)]
        rest = [n for n in nodes if n not in bad and n not in pads]
        pairs = [[b, a] for b, a in zip(bad, pads, strict=True)]
        groups[d] = (
            [*pairs, rest]
            if len(rest) >= MIN_TEST_NODES
            else [p + rest if i == 0 else p for i, p in enumerate(pairs)]
        )
        anchors[d] = pads
    return groups, anchors
