"""The fabric seen (``ibnetdiscover -p``) against the cabling plan (docs/fabric.md, "Findings").

Every cable seen is named by its two ends in the plan's terms: an HCA by the node description
``ibnetdiscover`` prints for it (``'gpu0001 mlx5_0'``: the host, then the HCA), a switch by the
plan's name for its GUID (or, for a switch the map lacks, its node description). Then:

- a planned cable not seen is **missing**; a cable seen that the plan lacks is **unexpected**;
- two cables each at the other's planned port are **swapped** (one finding, not four), and a
  cable whose one end is right and other end at another port is on the **wrong port**;
- a planned cable seen at another speed or width, on either end, is **degraded**;
- the fabric seen in more than one piece is **split** (count and members); planned devices seen
  nowhere are **unreached**;
- one GUID on two devices is a **duplicate GUID**; P_Key tables that differ from the others
  are a **P_Key mismatch** (when the tables are given).

Pure: ``verify`` takes the parsed ports and returns findings, each one line with both ends.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from burnin.fabric.pkeys import PkeyTable, odd_tables
from burnin.fabric.plan import End, Plan
from burnin.parsers._common import gc_paused  # the fabric's maps make no cycles (benchmarks/fabric.py)
from burnin.parsers.ibnetdiscover import IbnetPort

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_INPUT_ERROR = 2

# What to do, by finding kind: the action word scripts match on, and the advice a person reads.
ACTIONS = {
    "missing": ("RESEAT", "reseat the cable at both ends; replace it if the link stays down"),
    "unreached": ("CHECK_DEVICE", "power and cable these devices; run ibnetdiscover in each part"),
    "unexpected": ("FIX_PLAN", "remove the cable, or add it to the plan if it is meant"),
    "swapped": ("SWAP_CABLES", "swap the two cables at the switch ports named"),
    "wrong_port": ("MOVE_CABLE", "move the cable to the planned port"),
    "degraded": ("REPLACE_CABLE", "reseat the cable, then replace it (or its transceivers)"),
    "split": ("FIX_CABLING", "connect the islands: restore the missing uplinks between them"),
    "duplicate_guid": ("REPLACE_DEVICE", "give one device a unique GUID (firmware) or replace it"),
    "pkey": ("RECONFIGURE", "fix the partitions (the subnet manager's partitions.conf) for this port"),
}


@dataclass(frozen=True)
class Finding:
    kind: str
    ends: tuple[str, ...]  # each end named physically: 'gpu0001 mlx5_0 port 1', 'switch ... port 3'
    message: str

    @property
    def action(self) -> str:
        return ACTIONS[self.kind][0]

    def line(self) -> str:
        word, advice = ACTIONS[self.kind]
        return f"{self.kind}: {self.message} -> {word}: {advice}"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "ends": list(self.ends), "message": self.message, "action": self.action}


@dataclass
class Verification:
    findings: list[Finding] = field(default_factory=list)
    planned_links: int = 0
    seen_links: int = 0
    pkeys_checked: bool = False
    islands: int = 0

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.findings else EXIT_CLEAN

    def to_dict(self) -> dict[str, object]:
        return {
            "planned_links": self.planned_links,
            "seen_links": self.seen_links,
            "islands": self.islands,
            "pkeys_checked": self.pkeys_checked,
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass
class _Seen:
    """The fabric seen, in the plan's names."""

    links: dict[frozenset[End], dict[End, tuple[str | None, str | None]]]  # ends -> end -> (width, speed)
    devices: set[str]  # every device seen: nodes and switch names
    duplicates: list[Finding]


def _identify(plan: Plan, ports: Iterable[IbnetPort]) -> _Seen:
    by_guid = plan.switch_by_guid()
    ignore = {i.strip() for i in plan.ignore}
    ca_names: dict[str, set[str]] = defaultdict(set)
    sw_names: dict[str, set[str]] = defaultdict(set)
    sw_peers: dict[tuple[str, int], set[tuple[str | None, int | None]]] = defaultdict(set)

    def end_of(kind: str | None, guid: str | None, port: int | None, name: str | None) -> End | None:
        text = (name or "").strip()
        if text in ignore or port is None:
            return None
        if kind == "CA":
            node, _, hca = text.partition(" ")
            return End(node or str(guid), hca.strip() or "HCA", port)
        key = int(guid, 16) if guid else None
        return End(by_guid.get(key) or text or str(guid), None, port) if key is not None else None

    links: dict[frozenset[End], dict[End, tuple[str | None, str | None]]] = {}
    devices: set[str] = set()
    for p in ports:
        (ca_names if p.kind == "CA" else sw_names)[p.guid].add((p.name or "").strip())
        if p.kind == "SW":
            sw_peers[(p.guid, p.port)].add((p.peer_guid, p.peer_port))
        here = end_of(p.kind, p.guid, p.port, p.name)
        if here is None:
            continue
        devices.add(here.device)
        there = end_of(p.peer_kind, p.peer_guid, p.peer_port, p.peer_name) if p.up else None
        if there is None:
            continue
        devices.add(there.device)
        links.setdefault(frozenset((here, there)), {})[here] = (p.width, p.speed)
    duplicates = []
    # only the few GUIDs with two names are sorted: a 32,000-port fabric has as many GUIDs
    suspects = {g for names in (ca_names, sw_names) for g, n in names.items() if len(n) > 1}
    for guid in sorted(suspects | (ca_names.keys() & sw_names.keys())):
        both = sorted(n for n in ca_names.get(guid, set()) | sw_names.get(guid, set()) if n)
        if len(both) > 1:
            duplicates.append(
                Finding(
                    "duplicate_guid",
                    tuple(both),
                    f"GUID {guid} is on {len(both)} devices: " + ", ".join(repr(n) for n in both),
                )
            )
    for (guid, port), peers in sorted(item for item in sw_peers.items() if len(item[1]) > 1):
        if len(sw_names[guid]) <= 1:
            name = next(iter(sw_names[guid]), guid)
            duplicates.append(
                Finding(
                    "duplicate_guid",
                    (f"switch {name} port {port}",),
                    f"switch GUID {guid} port {port} answers with {len(peers)} different peers: two switches share the GUID",
                )
            )
    return _Seen(links, devices, duplicates)


def _ordered(ends: frozenset[End]) -> list[End]:
    """A cable's ends, the HCA first: findings say where an HCA is cabled, whatever the names."""
    return sorted(ends, key=lambda e: (e.hca is None, e))


def _islands(seen: _Seen) -> list[set[str]]:
    """The pieces of the fabric seen: devices joined by the cables seen. A device with no cable
    seen is in none (ibnetdiscover reaches a device through a cable, so it is in an excerpt)."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pair in seen.links:
        a, b = (e.device for e in pair) if len(pair) == 2 else (next(iter(pair)).device,) * 2
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        parent[root(a)] = root(b)
    groups: dict[str, set[str]] = defaultdict(set)
    for d in parent:
        groups[root(d)].add(d)
    return sorted(groups.values(), key=lambda g: (-len(g), min(g)))


def _members(plan: Plan, group: set[str], switch_names: set[str], limit: int = 8) -> str:
    switches = sorted(g for g in group if g in switch_names)
    nodes = sorted(g for g in group if g not in switch_names)

    def some(names: list[str]) -> str:
        return ", ".join(names[:limit]) + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")

    return f"{len(switches)} switch(es) [{some(switches)}], {len(nodes)} node(s) [{some(nodes)}]"


def verify(plan: Plan, ports: list[IbnetPort], pkeys: list[PkeyTable] | None = None) -> Verification:
    """Every finding of the fabric seen against the plan (pure)."""
    with gc_paused():
        return _verify(plan, ports, pkeys)


def _verify(plan: Plan, ports: list[IbnetPort], pkeys: list[PkeyTable] | None) -> Verification:
    seen = _identify(plan, ports)
    d = plan.describe
    planned: dict[frozenset[End], tuple[str | None, str | None, End, End]] = {}
    peer_of: dict[End, End] = {}
    for link in plan.links:
        planned[frozenset((link.a, link.b))] = (
            link.width or plan.width,
            link.speed or plan.speed,
            link.a,
            link.b,
        )
        peer_of[link.a], peer_of[link.b] = link.b, link.a
    out = Verification(
        planned_links=len(planned), seen_links=len(seen.links), pkeys_checked=pkeys is not None
    )
    findings = out.findings
    findings += seen.duplicates

    missing = {k for k in planned if k not in seen.links}
    unexpected = {k for k in seen.links if k not in planned and len(k) == 2}

    # swapped: A planned to X and B to Y, seen A-Y and B-X
    for k in sorted(unexpected, key=_ordered):
        if k not in unexpected:
            continue
        a, y = _ordered(k)
        x, b = peer_of.get(a), peer_of.get(y)
        if x is None or b is None:
            continue
        other = frozenset((b, x))
        if other in unexpected and frozenset((a, x)) in missing and frozenset((b, y)) in missing:
            unexpected -= {k, other}
            missing -= {frozenset((a, x)), frozenset((b, y))}
            findings.append(
                Finding(
                    "swapped",
                    (d(a), d(y), d(b), d(x)),
                    f"{d(a)} is cabled to {d(y)} and {d(b)} to {d(x)}: the plan has them the other way round",
                )
            )
    # wrong port: one end where the plan has it, the other at another port
    for k in sorted(unexpected, key=_ordered):
        for a in _ordered(k):
            y = next(e for e in k if e != a)
            x = peer_of.get(a)
            if x is not None and frozenset((a, x)) in missing and x != y:
                unexpected.discard(k)
                missing.discard(frozenset((a, x)))
                findings.append(
                    Finding(
                        "wrong_port", (d(a), d(y), d(x)), f"{d(a)} is cabled to {d(y)}; the plan has {d(x)}"
                    )
                )
                break
    for k in sorted(missing, key=_ordered):
        _, _, a, b = planned[k]
        absent = [e.device for e in (a, b) if e.device not in seen.devices]
        why = f" ({' and '.join(absent)} not seen in the fabric)" if absent else ""
        findings.append(Finding("missing", (d(a), d(b)), f"no cable seen between {d(a)} and {d(b)}{why}"))
    planned_devices = {e.device for k in planned for e in k}
    for k in sorted(unexpected, key=_ordered):
        a, b = _ordered(k)
        if a.device in planned_devices or b.device in planned_devices:
            findings.append(
                Finding("unexpected", (d(a), d(b)), f"a cable between {d(a)} and {d(b)} is not in the plan")
            )
    for k, (width, speed, a, b) in planned.items():  # in the plan's order
        ends = seen.links.get(k)
        if not ends or (width is None and speed is None):
            continue
        bad = {e: ws for e, ws in ends.items() if (width and ws[0] != width) or (speed and ws[1] != speed)}
        if bad:
            got = "; ".join(
                f"{d(e)} at {ws[0]} {ws[1]}"
                for e, ws in sorted(ends.items(), key=lambda kv: (kv[0].hca is None, kv[0]))
            )
            findings.append(
                Finding(
                    "degraded",
                    (d(a), d(b)),
                    f"{got}: the plan has {width or ''} {speed or ''}".replace("  ", " ").rstrip(),
                )
            )
    islands = _islands(seen)
    out.islands = len(islands)
    switch_names = {e.device for k in planned for e in k if e.hca is None} | set(plan.switches)
    switch_names |= {e.device for k in seen.links for e in k if e.hca is None}
    if len(islands) > 1:
        parts = "; ".join(f"island {n}: {_members(plan, g, switch_names)}" for n, g in enumerate(islands, 1))
        findings.append(
            Finding(
                "split",
                tuple(f"island {n}" for n in range(1, len(islands) + 1)),
                f"the fabric is in {len(islands)} islands: {parts}",
            )
        )
    unreached = planned_devices - seen.devices
    # a node alone unseen is named by its missing cables; a switch unseen takes a part with it
    if unreached & switch_names and seen.devices:
        findings.append(
            Finding(
                "unreached",
                tuple(sorted(unreached)),
                f"planned but seen nowhere in the fabric: {_members(plan, unreached, switch_names)}",
            )
        )
    if pkeys is not None:
        common, odd = odd_tables(pkeys)
        switch_port = {e: other for k in seen.links for e in k for other in k if other != e}
        reference = " ".join(f"0x{k:04x}" for k in sorted(common))
        for t in odd:
            far = switch_port.get(t.end)
            ends = (d(t.end),) + ((d(far),) if far else ())
            at = f" (cabled to {d(far)})" if far else ""
            findings.append(
                Finding(
                    "pkey",
                    ends,
                    f"{d(t.end)}{at} holds P_Keys {t.text()}; the other {len(pkeys) - len(odd)} port(s) hold {reference}",
                )
            )
    return out
