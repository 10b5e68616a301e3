"""Both ends of a loaded InfiniBand cable (pure): the HCA port's error counters and the far-end
switch port's (``perfquery -x LID PORT``), read before and after each round of the ib stage.

A cable carries errors both ways: when both ends count symbol errors, link-downed events or
receive errors under load, the cable between them is blamed (REPLACE_CABLE) and both physical
ends are named. When only one end counts them, that end is named: the switch port (or its
transceiver), or the HCA port (or its transceiver); reseat there first (RESEAT). Transmit
discards (PortXmitDiscards) point at congestion or a stalled path, not at the cable: they warn.
Rises are also given as rates over the load time. The switch is named by the cabling plan's
name and place when a plan is given (docs/fabric.md), else by its description, GUID and LID.
The far end is read through the local port: ``perfquery -x -C CA -P PORT LID PORT``
(https://manpages.ubuntu.com/manpages/noble/man8/perfquery.8.html, ``[<lid|guid> [[port(s)]]]``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from burnin.checks.base import CommandOutput
from burnin.fabric.plan import Plan
from burnin.parsers import ParseError
from burnin.parsers.ibnetdiscover import guid_key
from burnin.parsers.perfquery import parse_perfquery
from burnin.result import Action, Finding, critical, info, warning

# The counters read at both ends (docs/burnin.md, ib stage): the link's own faults...
LINK_END_COUNTERS = ("SymbolErrorCounter", "LinkDownedCounter", "PortRcvErrors")
# ...and congestion or a stalled path beyond the port.
DISCARD_COUNTERS = ("PortXmitDiscards",)
WATCHED = LINK_END_COUNTERS + DISCARD_COUNTERS

# The round script's shell function (burnin.stages.ib) reading the far end through the local port.
SWITCH_COUNTERS_FN = (
    "switch_counters() {  # key hca port switch-lid switch-port: the far end, through this port",
    "  if command -v perfquery >/dev/null 2>&1; then",
    '    timeout -k 5 30 perfquery -x -C "$2" -P "$3" "$4" "$5" >"$d/$1.out" 2>"$d/$1.err"',
    "  else",
    '    echo "perfquery: not installed (the switch port cannot be read)" >"$d/$1.err"; false',
    "  fi",
    '  frame "$1" $?',
    "}",
)


class Change(Protocol):
    """A counter around one round (burnin.checks.ib_load.Change)."""

    name: str
    before: int | None
    after: int | None
    saturated: bool

    @property
    def delta(self) -> int | None: ...


class HcaPort(Protocol):
    """An HCA port as discovery saw it (burnin.checks.ib_load.HcaPort)."""

    node: str
    hca: str
    port: int
    switch_lid: int | None
    switch_port_number: int | None
    switch_guid: str | None
    switch_name: str | None


@dataclass(frozen=True)
class SwitchEnd:
    """The switch port at the far end of an HCA port's cable."""

    lid: int
    port: int
    guid: str | None = None
    name: str | None = None  # its node description ('ib-i4l1s01'), or the plan's name
    place: str = ""  # the plan's 'rack R01 U40'
    planned: bool = False  # named by the cabling plan

    def describe(self) -> str:
        """'switch su1-leaf0 (rack R01 U40) port 3', or 'switch ib-i4l1s01 (GUID 0x..., LID 2052) port 1'."""
        if self.planned:
            return f"switch {self.name}{f' ({self.place})' if self.place else ''} port {self.port}"
        ids = ", ".join(x for x in (f"GUID {self.guid}" if self.guid else "", f"LID {self.lid}") if x)
        return f"switch{f' {self.name}' if self.name else ''} ({ids}) port {self.port}"


def far_end(port: HcaPort, plan: Plan | None = None) -> SwitchEnd | None:
    """The switch end of this HCA port's cable, named by ``plan`` when it knows the GUID."""
    if port.switch_lid is None or port.switch_port_number is None:
        return None
    end = SwitchEnd(port.switch_lid, port.switch_port_number, port.switch_guid, port.switch_name)
    key = guid_key(port.switch_guid)
    if plan is not None and key is not None:
        name = plan.switch_by_guid().get(key)
        if name is not None:
            switch = plan.switches.get(name)
            place = switch.place() if switch else ""
            return SwitchEnd(end.lid, end.port, end.guid, name, place, True)
    return end


def _totals(rounds: Sequence[Sequence[Change]]) -> tuple[dict[str, int], dict[str, Change]]:
    rises: dict[str, int] = {}
    saturated: dict[str, Change] = {}
    for changes in rounds:
        for c in changes:
            if c.name not in WATCHED:
                continue
            if c.saturated:
                saturated.setdefault(c.name, c)
            elif c.delta:
                rises[c.name] = rises.get(c.name, 0) + c.delta
    return rises, saturated


def switch_read_line(key: str, port: HcaPort) -> str:
    """The round script's line reading the far-end switch port (``perfquery -x -C CA -P PORT LID PORT``)."""
    lid, number = int(port.switch_lid or 0), int(port.switch_port_number or 0)
    return f"switch_counters {key} {shlex.quote(port.hca)} {port.port} {lid} {number}"


def switch_counters_of(output: CommandOutput, switch_port: int | None) -> dict[str, int]:
    """The far-end switch port's block of ``perfquery -x LID PORT``; ParseError when absent."""
    if output.error or output.rc != 0:
        detail = (output.error or output.stderr or output.stdout).strip().splitlines()[-1:] or [""]
        raise ParseError(f"exit status {output.rc}: {detail[0][:160]}")
    block = next((b for b in parse_perfquery(output.stdout) if b.port == switch_port), None)
    if block is None:
        raise ParseError(f"no block for port {switch_port} in the switch's perfquery output")
    return dict(block.counters)


def evidence_text(round_index: int, port: HcaPort, before: CommandOutput, after: CommandOutput) -> str:
    """The far end's two reads of a round, for the node's evidence."""
    return (
        f"-- round {round_index}: counters of the far end of {port.hca} port {port.port}, switch LID "
        f"{port.switch_lid} port {port.switch_port_number} before --\n{before.stdout}{before.stderr}"
        f"-- after --\n{after.stdout}{after.stderr}"
    )


def switch_rises(rounds: Sequence[Sequence[Change]]) -> dict[str, int]:
    """The link counters that rose at the switch end: the link is bad whatever its bandwidth."""
    rises, _ = _totals(rounds)
    return {n: v for n, v in rises.items() if n in LINK_END_COUNTERS}


def _rates(rises: Mapping[str, int], seconds: float) -> str:
    def one(name: str, n: int) -> str:
        rate = f" ({n / seconds:.1f}/s)" if seconds > 0 else ""
        return f"{name} +{n}{rate}"

    return ", ".join(one(n, v) for n, v in rises.items())


def _evidence(label: str, rounds: Sequence[Sequence[Change]], names: Sequence[str]) -> list[str]:
    return [
        f"{label} {c.name}: {c.before} -> {c.after}"
        for changes in rounds
        for c in changes
        if c.name in names and (c.delta or c.saturated)
    ]


def judge_link_ends(
    port: HcaPort,
    switch: SwitchEnd | None,
    hca_rounds: Sequence[Sequence[Change]],
    switch_rounds: Sequence[Sequence[Change]],
    seconds: float,
) -> list[Finding]:
    """Findings for one loaded cable from both ends' counter changes (one list per round);
    ``seconds``: the load time of one round (rates are over every round read)."""
    if switch is None:
        return []
    hca_name = f"{port.node} {port.hca} port {port.port}"
    subject = f"{port.hca} port {port.port}"
    load_s = seconds * max(len(hca_rounds), len(switch_rounds))
    hca_rises, _ = _totals(hca_rounds)
    sw_rises, sw_saturated = _totals(switch_rounds)
    hca_link = {n: v for n, v in hca_rises.items() if n in LINK_END_COUNTERS}
    sw_link = {n: v for n, v in sw_rises.items() if n in LINK_END_COUNTERS}
    far = switch.describe()
    evidence = "\n".join(
        _evidence(f"{hca_name}:", hca_rounds, LINK_END_COUNTERS)
        + _evidence(f"{far}:", switch_rounds, LINK_END_COUNTERS)
    )
    findings: list[Finding] = []
    if hca_link and sw_link:
        findings.append(
            critical(
                f"the cable between {hca_name} and {far}: errors at both ends under load "
                f"({hca_name}: {_rates(hca_link, load_s)}; {far}: {_rates(sw_link, load_s)})",
                Action.REPLACE_CABLE,
                evidence,
                subject,
            )
        )
    elif sw_link:
        findings.append(
            critical(
                f"{far} (cabled to {hca_name}): {_rates(sw_link, load_s)} under load, the HCA end saw none: "
                "the switch port or its transceiver; reseat it there, then replace the transceiver or "
                "use another switch port",
                Action.RESEAT,
                evidence,
                subject,
            )
        )
    elif hca_link:
        findings.append(
            critical(
                f"{hca_name} (cabled to {far}): {_rates(hca_link, load_s)} under load, the switch end saw "
                "none: the HCA port or its transceiver; reseat it there, then replace the transceiver or HCA",
                Action.RESEAT,
                evidence,
                subject,
            )
        )
    discards = [(hca_name, hca_rises), (far, sw_rises)]
    at = [(who, {n: v for n, v in r.items() if n in DISCARD_COUNTERS}) for who, r in discards]
    at = [(who, r) for who, r in at if r]
    if at:
        findings.append(
            warning(
                "transmit discards under load at "
                + "; ".join(f"{who}: {_rates(r, load_s)}" for who, r in at)
                + f" (the cable between {hca_name} and {far}): congestion or a stalled path beyond the port",
                Action.MONITOR,
                "\n".join(
                    _evidence(f"{hca_name}:", hca_rounds, DISCARD_COUNTERS)
                    + _evidence(f"{far}:", switch_rounds, DISCARD_COUNTERS)
                ),
                subject,
            )
        )
    for name, c in sw_saturated.items():
        value = c.after if c.after is not None else c.before
        findings.append(
            warning(
                f"{far} (cabled to {hca_name}): {name} is at its maximum ({value}): a rise cannot be seen; "
                f"clear it (perfquery -R {switch.lid} {switch.port}) and re-test",
                Action.MONITOR,
                f"{far}: {name}: {c.before} -> {c.after}",
                subject,
            )
        )
    return findings


def both_ends(
    port: HcaPort,
    switch: SwitchEnd | None,
    hca_rounds: Sequence[Sequence[Change]],
    switch_rounds: Sequence[Sequence[Change]],
    problems: Sequence[str],
    seconds: float,
) -> tuple[list[Finding], list[list[Any]], dict[str, Any]]:
    """For burnin.checks.ib_load.judge_node: the findings of both ends, the HCA's own changes left
    to judge as one end (the watched counters' rises taken out when the far end was read), and
    the far end's metrics."""
    subject = f"{port.hca} port {port.port}"
    findings = [
        info(f"{subject}: the far-end switch port's counters"
             f"{f' ({switch.describe()})' if switch else ''} not read: {p}", "", subject)
        for p in dict.fromkeys(problems)
    ]  # fmt: skip
    if switch is None or not switch_rounds:
        return findings, [list(ch) for ch in hca_rounds], {}
    findings = judge_link_ends(port, switch, hca_rounds, switch_rounds, seconds) + findings
    own = [[c for c in ch if not (c.name in WATCHED and c.delta)] for ch in hca_rounds]
    rises: dict[str, int] = {}
    for ch in switch_rounds:
        for c in ch:
            if c.delta:
                rises[c.name] = rises.get(c.name, 0) + c.delta
    return findings, own, {"far_end": switch.describe(), "switch_counters": rises}


@dataclass
class FarEnds:
    """What a node's ib stage learnt of its loaded ports' far ends (burnin.checks.ib_load.NodeEvidence)."""

    ends: dict[Any, SwitchEnd] = field(default_factory=dict)  # PortKey -> its far-end switch port
    counters: dict[Any, list[list[Any]]] = field(default_factory=dict)  # PortKey -> changes per round
    problems: dict[Any, list[str]] = field(default_factory=dict)  # PortKey -> why a read failed
    load_seconds: float = 0.0  # one round's load time: counter rises become rates

    def judge(
        self, port: HcaPort, key: Any, hca_rounds: Sequence[Sequence[Change]]
    ) -> tuple[list[Finding], list[list[Any]], dict[str, Any]]:
        """``both_ends`` for this port."""
        return both_ends(
            port,
            self.ends.get(key),
            hca_rounds,
            self.counters.get(key, []),
            self.problems.get(key, []),
            self.load_seconds,
        )
