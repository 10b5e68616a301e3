"""Judging the all-port InfiniBand load (pure): sessions against the floor, counters before and
after, and blame by agreement across rounds.

Floor (per direction): ``floors.ib_write_bw_fraction`` x ``ib.rate_gbps`` (default 97% of line
rate). A bidirectional session (``ib_write_bw -b``) reports the sum of both directions: its
per-direction figure is half of it, and when the profile sets ``floors.ib_write_bw_bidir_gbps``
the sum must reach that as well (the stricter of the two wins). A one-way session (3-cycles of
odd node counts) is compared as it is.

Blame: a session involves two ports, and a failure alone cannot say which end is bad. A port
that failed with two or more different partners that each pass with someone else is bad (FAIL,
REPLACE_CABLE). A failure no bad end explains is inconclusive: both ends are re-tested against
proven ports (``retest_inputs``). What stays unexplained is UNKNOWN when it could not be
re-tested and WARN when both ends passed their re-test (a one-off); it is never a pass.

Counters: the error counters (burnin.parsers.perfquery.ERROR_COUNTERS) are read before and after
each round; a rise on the port's own link (symbol errors, link recovery, link downed, local link
integrity, receive errors, buffer overruns) fails that port whatever its bandwidth. Remote
physical errors and transmit discards point elsewhere on the path (or at congestion) and warn.
A counter at its maximum cannot show a rise: it warns and asks for a counter reset.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from burnin.checks.ib import link_down_action
from burnin.checks.ib_counters import (  # burnin.stages.ib and ib_replay read them here too
    LINK_COUNTERS,
    CounterChange,
)
from burnin.checks.ib_counters import (
    counter_bad_ports as counter_bad_ports,
)
from burnin.checks.ib_counters import (
    counter_changes as counter_changes,
)
from burnin.checks.ib_fabric import fabric_name, not_compute_findings, on_compute_fabric
from burnin.checks.ib_link_ends import FarEnds
from burnin.parsers import ParseError
from burnin.parsers.perftest import GBITS, classify_problem, parse_perftest, parse_perftest_json
from burnin.plan.ib_pairs import PortKey, Session
from burnin.result import Action, Finding, Result, critical, info, warning

CHECK = "ib_bandwidth"


# ---- what was found and measured ----------------------------------------------------------


@dataclass(frozen=True)
class IbPortInfo:
    """One IB port of a node as discovery saw it."""

    node: str
    hca: str
    port: int
    guid: str | None = None
    lid: int | None = None
    rate_gbps: float | None = None
    link_layer: str | None = None
    state: str | None = None  # 'Active', 'Down', ...
    physical_state: str | None = None  # 'LinkUp', 'Polling', ...
    switch_port: str | None = None  # 'switch leaf01 (0x...) port 10', when the fabric map knew it
    gpu: int | None = None  # GPUDirect mode (diag.ib_gdr): the GPU whose memory loads this port
    gpu_dmabuf: bool = False  # ... registered through dma_buf (diag.ib_gdr_dmabuf)
    # ... as numbers (ibnetdiscover -p), so its counters can be read: perfquery -x LID PORT
    switch_lid: int | None = None
    switch_port_number: int | None = None
    switch_guid: str | None = None
    switch_name: str | None = None  # its node description, or the cabling plan's name and place
    ca_type: str | None = None  # its HCA's ('MT4131'), to tell the rails from a storage HCA (ib.ca_types)

    @property
    def rail(self) -> str:
        return f"{self.hca}/{self.port}"

    @property
    def key(self) -> PortKey:
        return PortKey(self.node, self.rail)

    @property
    def active(self) -> bool:
        return self.state == "Active" and self.physical_state in ("LinkUp", None)

    @property
    def metric_key(self) -> str:
        """'mlx5_0' for port 1 (ConnectX IB HCAs have one port each), else 'mlx5_0/2'."""
        return self.hca if self.port == 1 else self.rail

    def describe(self) -> str:
        ids = ", ".join(x for x in (f"GUID {self.guid}" if self.guid else "", self._lid()) if x)
        text = f"{self.node} {self.hca} port {self.port}" + (f" ({ids})" if ids else "")
        return text + (f", cabled to {self.switch_port}" if self.switch_port else "")

    def _lid(self) -> str:
        return f"LID {self.lid}" if self.lid is not None else ""


@dataclass(frozen=True)
class EndOutput:
    """What one end (server or client process) of a session left behind."""

    stdout: str = ""
    stderr: str = ""
    json: str = ""  # the --out_json file, when asked for
    rc: int | None = None
    error: str = ""  # the node's round did not run or come back (SSH): why


@dataclass(frozen=True)
class Measurement:
    gbps_total: float | None  # what perftest reported (a bidirectional test: both directions)
    link_problem: str = ""  # a perftest error line that blames the link (port down, completion error)
    run_problem: str = ""  # why nothing was measured (could not connect, no output, ...)


def _measure_end(end: EndOutput) -> Measurement:
    if end.error:
        return Measurement(None, run_problem=end.error)
    text = end.stdout + ("\n" + end.stderr if end.stderr else "")
    gbps = None
    if end.json.strip():
        try:
            gbps = parse_perftest_json(end.json, unit=GBITS).average_gbps()
        except ParseError:
            gbps = None
    problems: tuple[str, ...] = ()
    try:
        parsed = parse_perftest(text) if text.strip() else None
    except ParseError:
        parsed = None
    if parsed is not None:
        problems = parsed.problems
        report = parsed.report()
        if gbps is None and report is not None:
            gbps = report.average_gbps()
    link = next((p for p in problems if classify_problem(p) == "link"), "")
    if link:
        return Measurement(None, link_problem=link)
    if gbps is not None and end.rc in (0, None):
        return Measurement(gbps)
    run = next((p for p in problems if classify_problem(p) == "run"), "")
    if end.rc == 124:
        run = run or "timed out (no partner connected, or the test hung)"
    if not run:
        last = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        run = f"exit status {end.rc}" + (f": {last[-1][:160]}" if last else ": no output")
    return Measurement(None, run_problem=run)


def measure_session(server: EndOutput, client: EndOutput) -> Measurement:
    """The session's figure: the client's report, else the server's; a link error from either
    end wins over a missing figure."""
    ends = [_measure_end(client), _measure_end(server)]
    for m in ends:
        if m.gbps_total is not None:
            return m
    for m in ends:
        if m.link_problem:
            return m
    return Measurement(
        None, run_problem="; ".join(dict.fromkeys(m.run_problem for m in ends if m.run_problem))
    )


# ---- sessions against the floor ---------------------------------------------------------------


@dataclass(frozen=True)
class SessionResult:
    round: int
    session: Session
    gbps: float | None  # per direction
    gbps_total: float | None
    floor_gbps: float  # per direction
    passed: bool | None  # None: nothing was measured (the test could not run)
    problem: str = ""
    retest: bool = False

    def partner_key(self, key: PortKey) -> PortKey:
        a, b = self.session.ends
        return b if key == a else a


def floor_gbps(fraction: float, rate_gbps: float) -> float:
    return round(float(fraction) * float(rate_gbps), 3)


def judge_session(
    round_index: int,
    session: Session,
    measurement: Measurement,
    floor: float,
    bidir_floor: float | None = None,
    retest: bool = False,
) -> SessionResult:
    if measurement.link_problem:
        return SessionResult(round_index, session, None, None, floor, False, measurement.link_problem, retest)
    total = measurement.gbps_total
    if total is None:
        return SessionResult(round_index, session, None, None, floor, None, measurement.run_problem, retest)
    per_direction = round(total / 2, 3) if session.bidirectional else total
    passed = per_direction >= floor
    if session.bidirectional and bidir_floor:
        passed = passed and total >= bidir_floor
    return SessionResult(round_index, session, per_direction, total, floor, passed, "", retest)


# ---- blame by agreement -------------------------------------------------------------------------


@dataclass(frozen=True)
class PortStanding:
    status: str  # 'pass' | 'bad' | 'flaky' | 'inconclusive' | 'untested'
    failed_with: tuple[PortKey, ...] = ()
    passed_with: tuple[PortKey, ...] = ()
    unexplained: tuple[PortKey, ...] = ()  # failed with these and neither end could be blamed


def standings(
    results: Sequence[SessionResult], ports: Iterable[PortKey], known_bad: Collection[PortKey] = ()
) -> dict[PortKey, PortStanding]:
    """Each port's standing after these sessions. ``known_bad``: ports failed on other evidence
    (their own error counters rose): they explain their partners' failures."""
    fail_with: dict[PortKey, set[PortKey]] = defaultdict(set)
    pass_with: dict[PortKey, set[PortKey]] = defaultdict(set)
    passed_retest: set[PortKey] = set()
    for r in results:
        a, b = r.session.ends
        if r.passed is True:
            pass_with[a].add(b)
            pass_with[b].add(a)
            if r.retest:
                passed_retest |= {a, b}
        elif r.passed is False:
            fail_with[a].add(b)
            fail_with[b].add(a)
    everyone = set(ports) | set(fail_with) | set(pass_with)

    def passes_elsewhere(q: PortKey, p: PortKey) -> bool:
        return bool(pass_with[q] - {p})

    agreed = {p for p in everyone if sum(passes_elsewhere(q, p) for q in fail_with[p]) >= 2}
    blamed = agreed | (set(known_bad) & everyone)
    out = {}
    for p in sorted(everyone):
        unexplained = tuple(sorted(q for q in fail_with[p] if p not in blamed and q not in blamed))
        if p in agreed or (p in blamed and fail_with[p]):
            status = "bad"
        elif unexplained:
            status = "flaky" if p in passed_retest else "inconclusive"
        elif pass_with[p]:
            status = "pass"
        else:
            status = "untested"
        out[p] = PortStanding(status, tuple(sorted(fail_with[p])), tuple(sorted(pass_with[p])), unexplained)
    return out


@dataclass(frozen=True)
class RetestInputs:
    suspects: list[PortKey]
    partners: dict[str, list[str]]  # rail -> nodes proven on it, best first
    must_avoid: dict[PortKey, set[str]]
    met: dict[PortKey, set[str]]


def retest_inputs(
    results: Sequence[SessionResult],
    standing: Mapping[PortKey, PortStanding],
    exclude_nodes: Collection[str] = (),
) -> RetestInputs:
    """What a re-test round needs: the ports left inconclusive (or never measured although they
    had sessions), and the ports proven on each rail to test them against."""
    met: dict[PortKey, set[str]] = defaultdict(set)
    sessions_of: dict[PortKey, int] = defaultdict(int)
    for r in results:
        a, b = r.session.ends
        met[a].add(b.node)
        met[b].add(a.node)
        sessions_of[a] += 1
        sessions_of[b] += 1
    suspects = [
        p
        for p, s in standing.items()
        if p.node not in exclude_nodes
        and (s.status == "inconclusive" or (s.status == "untested" and sessions_of[p]))
    ]
    suspects.sort(key=lambda p: (len(standing[p].passed_with), p))
    # Proven: passed with someone (a bad port never does). Clean ones first, then those that
    # also have an unexplained failure: they can still tell a suspect's fault from its partner's.
    in_doubt = {q for s in standing.values() for q in s.unexplained}
    proven = [
        (p in in_doubt, len(s.failed_with), p)
        for p, s in standing.items()
        if s.status != "bad" and s.passed_with and p.node not in exclude_nodes
    ]
    partners: dict[str, list[str]] = defaultdict(list)
    for _, _, p in sorted(proven):
        partners[p.rail].append(p.node)
    avoid = {p: {q.node for q in standing[p].unexplained} for p in suspects}
    return RetestInputs(suspects, dict(partners), avoid, {p: met[p] for p in suspects})


# ---- counters -----------------------------------------------------------------------------------


# ---- the node's result --------------------------------------------------------------------------


@dataclass
class NodeEvidence:
    """Everything the stage learnt about one node, for ``judge_node``."""

    node: str
    ports: list[IbPortInfo] = field(default_factory=list)  # every port discovery listed
    expected_ports: int = 0  # the profile's ib.hca_count
    link_layer: str = "InfiniBand"
    floor_gbps: float = 0.0
    bidir_floor_gbps: float | None = None
    problem: str = ""  # discovery itself failed: why
    counters: dict[PortKey, list[list[CounterChange]]] = field(default_factory=dict)  # per round
    counter_problems: dict[PortKey, list[str]] = field(default_factory=dict)
    unpaired: set[PortKey] = field(default_factory=set)
    far: FarEnds = field(default_factory=FarEnds)  # the far-end switch ports: both ends judged together
    ca_types: tuple[str, ...] = ()  # the profile's ib.ca_types: the rails' HCAs (burnin/checks/ib_fabric.py)


def _partner_text(result: SessionResult, key: PortKey, infos: Mapping[PortKey, IbPortInfo]) -> str:
    other = result.partner_key(key)
    info_ = infos.get(other)
    where = info_.describe() if info_ else f"{other.node} {other.rail}"
    got = f"{result.gbps:.1f} Gb/s" if result.gbps is not None else result.problem or "no figure"
    return f"{where} in round {result.round}: {got}"


def _session_line(result: SessionResult, key: PortKey) -> str:
    s = result.session
    mode = "bidirectional" if s.bidirectional else ("sends to" if s.client == key.node else "receives from")
    got = (
        f"{result.gbps:.2f} Gb/s per direction"
        + (f" ({result.gbps_total:.2f} both)" if s.bidirectional else "")
        if result.gbps is not None
        else f"no figure: {result.problem}"
    )
    verdict = {True: "pass", False: "FAIL", None: "not measured"}[result.passed]
    tag = " (re-test)" if result.retest else ""
    return (
        f"round {result.round}{tag}: {key.rail} {mode} {s.partner(key.node)}: {got}; floor "
        f"{result.floor_gbps:g}: {verdict}"
    )


def _port_metrics(
    info_: IbPortInfo,
    results: list[SessionResult],
    standing: PortStanding | None,
    rounds_counters: list[list[CounterChange]],
    verdict: str,
) -> dict[str, Any]:
    measured = [r for r in results if r.gbps is not None]
    worst = min(measured, key=lambda r: r.gbps) if measured else None  # type: ignore[arg-type,return-value]
    totals: dict[str, int] = {}
    saturated: set[str] = set()
    for changes in rounds_counters:
        for c in changes:
            if c.saturated:
                saturated.add(c.name)
            elif c.delta is not None:
                totals[c.name] = totals.get(c.name, 0) + c.delta
    return {
        "port": info_.port,
        "guid": info_.guid,
        "lid": info_.lid,
        "state": info_.state,
        "switch_port": info_.switch_port,
        "verdict": verdict,
        "status": standing.status if standing else "untested",
        "gbps": worst.gbps if worst else None,
        "partner": f"{worst.partner_key(info_.key).node}" if worst else None,
        "rounds": [
            {
                "round": r.round,
                "retest": r.retest,
                "partner": r.session.partner(info_.node),
                "role": r.session.role(info_.node),
                "mode": "bidirectional" if r.session.bidirectional else "one-way",
                "gbps": r.gbps,
                "gbps_total": r.gbps_total,
                "passed": r.passed,
                "problem": r.problem,
            }
            for r in results
        ],
        "counters": totals,
        "saturated_counters": sorted(saturated),
    }


def judge_node(
    ev: NodeEvidence,
    results: Sequence[SessionResult],
    standing: Mapping[PortKey, PortStanding],
    infos: Mapping[PortKey, IbPortInfo],
    retested: bool = False,
) -> Result:
    """The node's ``ib_bandwidth`` result: one finding per problem port, metrics per port."""
    if ev.problem:
        return Result.unknown(CHECK, ev.problem)
    findings: list[Finding] = []
    incomplete: list[str] = []
    ib = [p for p in ev.ports if on_compute_fabric(p.link_layer, p.ca_type, ev.link_layer, ev.ca_types)]
    others = [p for p in ev.ports if not on_compute_fabric(p.link_layer, None, ev.link_layer, ())]
    if others:
        findings.append(
            info(f"{len(others)} non-{ev.link_layer} port(s) not loaded", ", ".join(p.rail for p in others))
        )
    findings += not_compute_findings(
        ((p.rail, p.ca_type) for p in ev.ports if p not in ib and p not in others), "loaded"
    )
    if len(ib) < ev.expected_ports:
        findings.append(
            critical(
                f"{len(ib)} {fabric_name(ev.link_layer, ev.ca_types)} port(s) found, the profile has {ev.expected_ports}",
                Action.RESEAT,
                ", ".join(p.rail for p in ib) or "no port",
                "HCAs",
            )
        )
    ports_metrics: dict[str, Any] = {}
    for port in sorted(ib, key=lambda p: (p.hca, p.port)):
        key = port.key
        mine = [r for r in results if key in r.session.ends]
        st = standing.get(key)
        port_findings: list[Finding] = []
        subject = f"{port.hca} port {port.port}"
        if not port.active:
            action = link_down_action(port.physical_state)
            port_findings.append(
                critical(
                    f"{port.describe()} is {port.state}/{port.physical_state}: it could not be loaded",
                    action,
                    f"{port.hca} port {port.port}: State {port.state}, Physical state {port.physical_state}",
                    subject,
                )
            )
        elif key in ev.unpaired:
            incomplete.append(f"{subject}: no other node has an active port on rail {port.rail}")
        elif st is None or st.status == "untested":
            why = "; ".join(dict.fromkeys(r.problem for r in mine if r.problem)) or "no session"
            incomplete.append(f"{subject}: not measured ({why})")
        elif st.status == "bad":
            fails = [r for r in mine if r.passed is False]
            partners = "; ".join(_partner_text(r, key, infos) for r in fails)
            worst = min((r.gbps for r in fails if r.gbps is not None), default=None)
            got = f"{worst:.1f} Gb/s per direction" if worst is not None else "no bandwidth"
            port_findings.append(
                critical(
                    f"{port.describe()}: {got} under load, floor {fails[0].floor_gbps:g} Gb/s, failing with "
                    f"{len(st.failed_with)} partner(s) that pass elsewhere: {partners}",
                    Action.REPLACE_CABLE,
                    "\n".join(_session_line(r, key) for r in mine),
                    subject,
                )
            )
        elif st.status in ("inconclusive", "flaky"):
            partners = "; ".join(
                _partner_text(r, key, infos)
                for r in mine
                if r.passed is False and r.partner_key(key) in st.unexplained
            )
            evidence = "\n".join(_session_line(r, key) for r in mine)
            if st.status == "flaky":
                what = (
                    f"{port.describe()} failed once with {partners}; both ends passed a re-test: "
                    f"intermittent link or a one-off, watch it"
                )
            else:
                again = " even after a re-test" if retested else ""
                what = f"{port.describe()} failed with {partners}, and neither end could be blamed{again}"
                incomplete.append(f"{subject}: inconclusive")
            port_findings.append(warning(what, Action.MONITOR, evidence, subject))
        far_findings, own_rounds, far_metrics = ev.far.judge(port, key, ev.counters.get(key, []))
        port_findings += far_findings + _counter_findings(port, own_rounds, infos, mine)
        for problem in ev.counter_problems.get(key, []):
            incomplete.append(f"{subject}: counters not read ({problem})")
        verdict = Result.judged(CHECK, port_findings).verdict.value
        if verdict == "PASS" and any(s.startswith(subject + ":") for s in incomplete):
            verdict = "UNKNOWN"
        ports_metrics[port.metric_key] = _port_metrics(port, mine, st, ev.counters.get(key, []), verdict)
        ports_metrics[port.metric_key].update(far_metrics)
        findings += port_findings
    metrics = {
        "ports": ports_metrics,
        "floor_gbps": ev.floor_gbps,
        "bidir_floor_gbps": ev.bidir_floor_gbps,
        "rounds": len({r.round for r in results if not r.retest}),
        "retest": retested,
    }
    return Result.judged(CHECK, findings, metrics, incomplete="; ".join(incomplete))


def _counter_findings(
    port: IbPortInfo,
    rounds: list[list[CounterChange]],
    infos: Mapping[PortKey, IbPortInfo],
    results: list[SessionResult],
) -> list[Finding]:
    findings: list[Finding] = []
    subject = f"{port.hca} port {port.port}"
    rises: dict[str, list[tuple[int, CounterChange]]] = defaultdict(list)
    saturated: dict[str, CounterChange] = {}
    down: dict[str, CounterChange] = {}
    for i, changes in enumerate(rounds):
        for c in changes:
            if c.saturated:
                saturated.setdefault(c.name, c)
            elif c.went_down:
                down.setdefault(c.name, c)
            elif c.delta:
                rises[c.name].append((i, c))
    partners = sorted({r.session.partner(port.node) for r in results})
    for name, items in rises.items():
        total = sum(c.delta or 0 for _, c in items)
        evidence = "\n".join(f"{name}: {c.before} -> {c.after} (+{c.delta})" for _, c in items)
        if name in LINK_COUNTERS:
            findings.append(
                critical(
                    f"{port.describe()}: {name} rose by {total} under load: a fault on this port's link "
                    f"(cable, transceiver or switch port)",
                    Action.REPLACE_CABLE,
                    evidence,
                    subject,
                )
            )
        else:
            findings.append(
                warning(
                    f"{port.describe()}: {name} rose by {total} under load (partners: {', '.join(partners)}): "
                    f"errors elsewhere on the path or congestion",
                    Action.MONITOR,
                    evidence,
                    subject,
                )
            )
    for name, c in saturated.items():
        findings.append(
            warning(
                f"{port.describe()}: {name} is at its maximum ({c.after if c.after is not None else c.before}): "
                f"a rise cannot be seen; clear the counters (perfquery -R) and re-test",
                Action.MONITOR,
                f"{name}: {c.before} -> {c.after}",
                subject,
            )
        )
    for name, c in down.items():
        findings.append(
            warning(
                f"{port.describe()}: {name} went down during the load ({c.before} -> {c.after}): cleared by "
                f"someone else? a rise cannot be judged",
                Action.MONITOR,
                f"{name}: {c.before} -> {c.after}",
                subject,
            )
        )
    return findings
