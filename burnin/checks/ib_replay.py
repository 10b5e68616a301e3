"""The ib stage's record for `burnin rejudge` (pure): what a node's ``ib_bandwidth`` result was
judged from, kept in its evidence so the whole stage can be judged again later.

The stage appends one line of JSON, after a ``RECORD_MARK`` line, to each node's evidence: its
ports as discovery saw them, each session its ports took part in with the raw output of both
ends (perftest text and --out_json), the error counters around each round and the ports left
unpaired. ``replay`` judges the sessions of every node's record again with the stage's own
judgement (burnin.checks.ib_load: the floor, blame by agreement, counter rises) against the
profiles given, so a raised ``floors.ib_*`` turns the ports that measured under it into
non-passing ones. A replay cannot re-test: a port that would have been re-tested stays as
the recorded rounds leave it, and says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Any

from bringup.profiles.load import Profile
from burnin.checks import replay_record
from burnin.checks.ib_link_ends import FarEnds, SwitchEnd, switch_rises
from burnin.checks.ib_load import (
    CounterChange,
    EndOutput,
    IbPortInfo,
    NodeEvidence,
    SessionResult,
    counter_bad_ports,
    floor_gbps,
    judge_node,
    judge_session,
    measure_session,
    standings,
)
from burnin.plan.ib_pairs import PortKey, Session
from burnin.result import Result

RECORD_MARK = "@@burnin-ib-record v1"


def record_text(
    ev: NodeEvidence,
    sessions: Iterable[tuple[int, bool, Session, EndOutput, EndOutput]],
    retested: bool,
) -> str:
    """The record of one node (its ports' sessions: round, re-test, session, server end, client
    end), as the lines to append to its evidence."""
    mine = [s for s in sessions if ev.node in (s[2].server, s[2].client)]
    doc = {
        "node": ev.node,
        "problem": ev.problem,
        "ports": [asdict(p) for p in ev.ports],
        "unpaired": sorted(k.rail for k in ev.unpaired),
        "counters": {k.rail: [[asdict(c) for c in changes] for changes in v] for k, v in ev.counters.items()},
        "counter_problems": {k.rail: list(v) for k, v in ev.counter_problems.items()},
        "retested": retested,
        "far": {  # the far-end switch ports (burnin.checks.ib_link_ends)
            "ends": {k.rail: asdict(e) for k, e in ev.far.ends.items()},
            "counters": {k.rail: [[asdict(c) for c in ch] for ch in v] for k, v in ev.far.counters.items()},
            "problems": {k.rail: list(v) for k, v in ev.far.problems.items()},
            "load_seconds": ev.far.load_seconds,
        },
        "sessions": [
            {
                "round": index,
                "retest": retest,
                "session": asdict(s),
                "server": asdict(server),
                "client": asdict(client),
            }
            for index, retest, s, server, client in mine
        ],
    }
    return replay_record.record_text(RECORD_MARK, doc)


def parse_record(evidence: str) -> dict[str, Any]:
    """The record in a node's ``ib_bandwidth`` evidence; ParseError when it holds none (a run
    from before records were kept, or a node the stage never loaded)."""
    return replay_record.parse_record(
        evidence,
        RECORD_MARK,
        "no ib record in the evidence (the stage keeps one for each node it loaded)",
        {"node": object, "sessions": list},
    )


def _node_evidence(doc: Mapping[str, Any], profile: Profile) -> NodeEvidence:
    node = doc["node"]
    floors = profile.floors
    far = doc.get("far", {})  # absent from records of before the far ends were read
    ends = FarEnds(
        {PortKey(node, rail): SwitchEnd(**e) for rail, e in far.get("ends", {}).items()},
        {
            PortKey(node, rail): [[CounterChange(**c) for c in ch] for ch in rounds]
            for rail, rounds in far.get("counters", {}).items()
        },
        {PortKey(node, rail): list(v) for rail, v in far.get("problems", {}).items()},
        float(far.get("load_seconds", 0.0)),
    )
    return NodeEvidence(
        node,
        [IbPortInfo(**p) for p in doc.get("ports", [])],
        profile.ib.hca_count,
        profile.ib.link_layer,
        floor_gbps(floors.ib_write_bw_fraction, profile.ib.rate_gbps),
        floors.ib_write_bw_bidir_gbps,
        doc.get("problem", ""),
        {
            PortKey(node, rail): [[CounterChange(**c) for c in changes] for changes in rounds]
            for rail, rounds in doc.get("counters", {}).items()
        },
        {PortKey(node, rail): list(v) for rail, v in doc.get("counter_problems", {}).items()},
        {PortKey(node, rail) for rail in doc.get("unpaired", [])},
        ends,
        profile.ib.ca_types,
    )


def replay(records: Mapping[str, Mapping[str, Any]], profiles: Mapping[str, Profile]) -> dict[str, Result]:
    """Each recorded node's ``ib_bandwidth`` judged again from the records of the run (every
    session once, whichever node's record holds it) against ``profiles`` (node -> profile;
    a partner without one is held to the lower floor of the nodes that have one)."""
    evidence = {n: _node_evidence(doc, profiles[n]) for n, doc in records.items()}
    floors = {n: ev.floor_gbps for n, ev in evidence.items()}
    bidir = {n: ev.bidir_floor_gbps for n, ev in evidence.items()}
    lowest = min(floors.values(), default=0.0)
    sessions: dict[tuple[int, Session], tuple[bool, EndOutput, EndOutput]] = {}
    for doc in records.values():
        for row in doc["sessions"]:
            s = Session(**row["session"])
            sessions.setdefault(
                (int(row["round"]), s),
                (bool(row["retest"]), EndOutput(**row["server"]), EndOutput(**row["client"])),
            )
    results: list[SessionResult] = []
    for (index, s), (retest, server, client) in sorted(
        sessions.items(), key=lambda i: (i[0][0], i[0][1].tcp_port, i[0][1].rail)
    ):
        floor = min(floors.get(s.server, lowest), floors.get(s.client, lowest))
        both = [b for b in (bidir.get(s.server), bidir.get(s.client)) if b]
        results.append(
            judge_session(
                index, s, measure_session(server, client), floor, min(both) if both else None, retest
            )
        )
    infos = {p.key: p for ev in evidence.values() for p in ev.ports}
    loaded = {end for (_, s) in sessions for end in s.ends}
    known_bad = counter_bad_ports({k: v for ev in evidence.values() for k, v in ev.counters.items()})
    known_bad |= {k for ev in evidence.values() for k, r in ev.far.counters.items() if switch_rises(r)}
    standing = standings(results, loaded, known_bad)
    retested = any(bool(doc.get("retested")) for doc in records.values())
    by_node: dict[str, list[SessionResult]] = {}
    for r in results:
        for node in {r.session.server, r.session.client}:
            by_node.setdefault(node, []).append(r)
    return {
        name: judge_node(ev, by_node.get(name, []), standing, infos, retested)
        for name, ev in evidence.items()
    }
