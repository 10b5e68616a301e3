"""UFM's event log turned into port actions (docs/fabric.md, "The UFM event log").

Two inputs, one reading: the JSON list UFM's REST API returns (``GET /ufmRest/app/events``:
``id``, ``name``, ``severity``, ``timestamp``, ``object_name``, ``object_path``, ``description``,
and ``type`` or ``event_type`` for the event's number; the UFM Enterprise REST API Guide, "Events
REST API", https://docs.nvidia.com/networking/display/ufmenterpriserestapiv6202/events+rest+api),
or UFM's event log text, one event a line::

    2024-06-20 07:46:24.442 [81] [329] WARNING [Hardware] IBPort [default / Switch: su1-leaf0 / 5]
        [dev_id: 0002c903000a0001]: Link went down: (Switch:su1-leaf0:5)0002c903000a0001:5 - ...

(the line shape imbue-ai/cluster-health's UFM tool reads: ufm_events/find_problematic_events.py,
MIT). Events are sorted into four kinds by port: a link down (329 "Link went down", 112 "Link
Downed" counter), flapping (``flaps`` link downs within ``window_s``, or 702 "considered by SM
as unhealthy due to FLAPPING"), high BER or symbol errors (110, 917, 918, or a name that says
so), and thermal (a name or message about temperature). Every other event is counted, not judged.

From the cases come proposals, pure and printed, never applied: disable the switch port and file a
ticket for the cable (or the transceiver, for a thermal event) naming both ends by the cabling
plan, and, once a clean ib-stage load of the cable's HCA end is newer than the port's last bad
event (it was repaired and loaded), re-enable it instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from bringup.core.errors import UserError
from burnin.fabric.plan import End, Plan, PlannedLink

LINK_DOWN, FLAPPING, HIGH_BER, THERMAL = "link_down", "flapping", "high_ber", "thermal"
KINDS = (FLAPPING, HIGH_BER, THERMAL, LINK_DOWN)  # the order cases are told in

_LINK_DOWN_CODES = frozenset({112, 329})
_BER_CODES = frozenset({110, 917, 918})
_UNHEALTHY_CODE = 702
_LINK_DOWN_RE = re.compile(r"link (went|is) down|link ?downed", re.I)
_BER_RE = re.compile(r"symbol|\bber\b|bit error rate", re.I)
_THERMAL_RE = re.compile(r"temperature|thermal", re.I)
# "(Switch:su1-leaf0:1/5)0002c903000a0001:5" or "(Computer:gpu0001 mlx5_0)0c42a10300a1b2c3:1"
_END_RE = re.compile(
    r"\((?P<kind>Switch|Computer|Gateway):(?P<name>[^)]*)\)(?P<guid>[0-9a-fA-F]{16}):(?P<port>\d+)"
)
_LOG_LINE_RE = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) \[(?P<id>\d+)\] \[(?P<code>\d+)\] (?P<severity>\w+)"
    r" \[(?P<category>[^\]]*)\] (?P<type>\w+) \[(?P<object>[^\]]*)\](?: \[dev_id: (?P<dev>\w+)\])?: (?P<message>.*)$"
)
_PORT_OBJECT_RE = re.compile(r"^(?P<guid>[0-9a-fA-F]{16})_(?P<port>\d+)$")  # a REST port name


class UfmError(UserError, ValueError):
    """An event log that cannot be read; the message names the file and the entry."""


@dataclass(frozen=True)
class PortRef:
    """A port as UFM names it: a switch's (``hca`` None) or an HCA's."""

    device: str  # the switch's name (the plan's for its GUID), or the node for an HCA
    port: str  # as printed: '5', or a split port '17/1'
    hca: str | None = None
    guid: int | None = None

    def describe(self) -> str:
        if self.hca:
            return f"{self.device} {self.hca} port {self.port}"
        return f"switch {self.device} port {self.port}"


@dataclass(frozen=True)
class UfmEvent:
    at: datetime  # UTC
    code: int | None
    name: str
    severity: str
    message: str
    ports: tuple[PortRef, ...]  # the port the event is on first, then its peer when named
    entry: str  # where in the input: 'id 81' or 'line 3'


@dataclass(frozen=True)
class CleanLoad:
    """An ib-stage load of one HCA port that passed: ``node``'s ``hca`` port ``port`` at ``at``."""

    node: str
    hca: str
    port: int
    at: datetime


@dataclass(frozen=True)
class Proposal:
    action: str  # 'disable' | 'ticket' | 're-enable'
    target: str  # the port to act on, or what the ticket is for
    why: str

    def to_dict(self) -> dict[str, str]:
        return {"action": self.action, "target": self.target, "why": self.why}


@dataclass
class PortCase:
    """Everything the log says about one cable (or one port the plan does not know)."""

    ends: str  # both ends, named
    switch_port: str  # the port a disable acts on
    hca_end: End | None  # the cable's HCA end, the one the ib stage loads
    kinds: set[str] = field(default_factory=set)
    events: list[UfmEvent] = field(default_factory=list)
    link_downs: int = 0
    proposals: list[Proposal] = field(default_factory=list)
    repaired_by: CleanLoad | None = None
    waiting: str = ""  # what re-enabling waits for

    @property
    def last(self) -> datetime:
        return max(e.at for e in self.events)

    def kind(self) -> str:
        return next(k for k in KINDS if k in self.kinds)

    def line(self) -> str:
        acts = "; ".join(f"{p.action.upper()} {p.target}" for p in self.proposals) or "no action"
        wait = f" ({self.waiting})" if self.waiting else ""
        return f"{self.kind()}: {self.ends}, {len(self.events)} event(s), last {self.last:%Y-%m-%d %H:%M:%S}Z -> {acts}{wait}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind(),
            "kinds": sorted(self.kinds),
            "ends": self.ends,
            "switch_port": self.switch_port,
            "events": len(self.events),
            "link_downs": self.link_downs,
            "last": self.last.isoformat(),
            "event_ids": [e.entry for e in self.events],
            "proposals": [p.to_dict() for p in self.proposals],
            "repaired_by": (
                {"node": r.node, "hca": r.hca, "port": r.port, "at": r.at.isoformat()}
                if (r := self.repaired_by)
                else None
            ),
            "waiting": self.waiting,
        }


@dataclass
class UfmReport:
    cases: list[PortCase]
    events: int
    ignored: int  # events of no kind judged here (multicast groups, UFM's own)
    unplaced: int  # judged events that name no port

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": [c.to_dict() for c in self.cases],
            "events": self.events,
            "ignored": self.ignored,
            "unplaced": self.unplaced,
            "proposals": sum(len(c.proposals) for c in self.cases),
        }


# -- reading ------------------------------------------------------------------------------------


def _time(text: str, zone: tzinfo, where: str) -> datetime:
    try:
        at = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise UfmError(f"{where}: timestamp {text!r} is not a date and time") from exc
    return (at if at.tzinfo else at.replace(tzinfo=zone)).astimezone(UTC)


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _switch_port(label: str) -> str:
    """'1/17/1' -> '17/1' and '1/5' -> '5' (a switch's leading '1/' is its only ASIC's)."""
    parts = label.strip().split("/")
    return "/".join(parts[1:]) if len(parts) > 1 and parts[0] == "1" else label.strip()


def _ends_in(message: str, names: Mapping[int, str]) -> list[PortRef]:
    refs = []
    for m in _END_RE.finditer(message):
        guid = int(m.group("guid"), 16)
        if m.group("kind") == "Computer":
            node, _, hca = m.group("name").strip().partition(" ")
            refs.append(PortRef(node, m.group("port"), hca.strip() or "?", guid))
        else:
            name = names.get(guid) or m.group("name").split(":", 1)[0]
            refs.append(PortRef(name, m.group("port"), None, guid))
    return refs


def _object_port(object_path: str, dev: str | None, names: Mapping[int, str]) -> PortRef | None:
    """'default / Switch: su1-leaf0 / 1/5' (the log's object) -> the switch's port 5."""
    parts = [p.strip() for p in object_path.split(" / ")]
    if len(parts) < 3 or not parts[1].startswith(("Switch:", "Computer:")):
        return None
    kind, _, name = parts[1].partition(":")
    guid = int(dev, 16) if dev and re.fullmatch(r"[0-9a-fA-F]{16}", dev) else None
    if kind == "Computer":
        node, _, hca = name.strip().partition(" ")
        return PortRef(node, _switch_port(parts[2]), hca.strip() or "?", guid)
    return PortRef(
        (names.get(guid) if guid is not None else None) or name.strip(), _switch_port(parts[2]), None, guid
    )


def _event(
    at: datetime,
    code: int | None,
    name: str,
    severity: str,
    message: str,
    first: PortRef | None,
    names: Mapping[int, str],
    entry: str,
) -> UfmEvent:
    refs = _ends_in(message, names)
    if first is not None:
        refs = [first] + [r for r in refs if (r.guid, r.port) != (first.guid, first.port) or r.guid is None]
    return UfmEvent(at, code, name, severity, message, tuple(refs), entry)


def parse_ufm_events(
    text: str, source: str, names: Mapping[int, str] | None = None, zone: tzinfo = UTC
) -> list[UfmEvent]:
    """The events of a REST answer (a JSON list) or of an event log (text), oldest first.
    ``names``: switch GUID -> the plan's name for it. Times without a zone are in ``zone``."""
    names = names or {}
    body = "\n".join(line for line in text.splitlines() if not line.startswith("# SOURCE:"))
    if body.lstrip().startswith("["):
        try:
            rows = json.loads(body)
        except json.JSONDecodeError as exc:
            raise UfmError(f"{source}: not UFM's events JSON: {exc}") from exc
        events = [_rest_event(row, i, source, names, zone) for i, row in enumerate(rows)]
    else:
        events = []
        for number, line in enumerate(body.splitlines(), 1):
            if not line.strip():
                continue
            m = _LOG_LINE_RE.match(line.strip())
            if m is None:
                raise UfmError(f"{source}: line {number}: not a UFM event log line: {line.strip()[:80]!r}")
            where = f"{source}: line {number}"
            first = _object_port(m.group("object"), m.group("dev"), names)
            message = m.group("message")
            events.append(
                _event(
                    _time(m.group("ts"), zone, where),
                    int(m.group("code")),
                    message.split(":", 1)[0],
                    m.group("severity"),
                    message,
                    first,
                    names,
                    f"line {number}",
                )
            )
    if not events and not body.strip():
        raise UfmError(f"{source}: empty: no UFM event in it")
    return sorted(events, key=lambda e: e.at)


def _rest_event(row: Any, i: int, source: str, names: Mapping[int, str], zone: tzinfo) -> UfmEvent:
    if not isinstance(row, dict) or "timestamp" not in row or "name" not in row:
        raise UfmError(f"{source}: entry {i + 1}: not a UFM event (no name or timestamp)")
    entry = f"id {row['id']}" if "id" in row else f"entry {i + 1}"
    where = f"{source}: {entry}"
    code = _int(row.get("event_type")) if "event_type" in row else _int(row.get("type"))
    first = None
    if m := _PORT_OBJECT_RE.match(str(row.get("object_name") or "")):
        guid = int(m.group("guid"), 16)
        first = PortRef(names.get(guid, f"0x{guid:016x}"), m.group("port"), None, guid)
        described = _ends_in(str(row.get("description") or ""), names)
        first = next((r for r in described if (r.guid, r.port) == (guid, first.port)), first)
    elif row.get("object_path"):
        first = _object_port(str(row["object_path"]), None, names)
    return _event(
        _time(str(row["timestamp"]), zone, where),
        code,
        str(row["name"]),
        str(row.get("severity") or ""),
        str(row.get("description") or ""),
        first,
        names,
        entry,
    )


# -- judging ------------------------------------------------------------------------------------


def kind_of(event: UfmEvent) -> str | None:
    text = f"{event.name} {event.message}"
    if event.code == _UNHEALTHY_CODE:
        return FLAPPING if "FLAPPING" in event.message.upper() else HIGH_BER if _BER_RE.search(text) else None
    if event.code in _LINK_DOWN_CODES or _LINK_DOWN_RE.search(event.name):
        return LINK_DOWN
    if event.code in _BER_CODES or _BER_RE.search(event.name):
        return HIGH_BER
    if _THERMAL_RE.search(text):
        return THERMAL
    return None


def _planned(ref: PortRef, by_end: Mapping[End, PlannedLink]) -> PlannedLink | None:
    if not ref.port.isdigit():
        return None
    return by_end.get(End(ref.device, ref.hca, int(ref.port)))


def _flapped(downs: Sequence[datetime], flaps: int, window: timedelta) -> bool:
    return any(downs[i + flaps - 1] - downs[i] <= window for i in range(len(downs) - flaps + 1))


def clean_loads(rows: Iterable[Mapping[str, Any]]) -> list[CleanLoad]:
    """The passed ports of ib-stage results: rows with ``node``, ``check``, ``time`` and
    ``metrics`` as the store keeps them (``ib_bandwidth``'s metrics.ports, keyed 'mlx5_0' for
    port 1 and 'mlx5_0/2' otherwise; burnin/checks/ib_load.py)."""
    found = []
    for row in rows:
        if row.get("check") != "ib_bandwidth":
            continue
        at = row.get("time")
        at = at if isinstance(at, datetime) else _time(str(at), UTC, f"result of {row.get('node')}")
        at = at if at.tzinfo else at.replace(tzinfo=UTC)
        for key, port in ((row.get("metrics") or {}).get("ports") or {}).items():
            if isinstance(port, dict) and port.get("verdict") == "PASS":
                hca, _, number = str(key).partition("/")
                found.append(CleanLoad(str(row["node"]), hca, int(number or 1), at.astimezone(UTC)))
    return found


def judge_events(
    events: Sequence[UfmEvent],
    plan: Plan | None = None,
    loads: Iterable[CleanLoad] = (),
    *,
    flaps: int = 3,
    window_s: int = 600,
) -> UfmReport:
    """Cases by cable (by port where the plan does not place it) and their proposals."""
    by_end: dict[End, PlannedLink] = {}
    for link in plan.links if plan else ():
        by_end[link.a] = by_end[link.b] = link
    cases: dict[Any, PortCase] = {}
    ignored = unplaced = 0
    for event in events:
        kind = kind_of(event)
        if kind is None:
            ignored += 1
            continue
        if not event.ports:
            unplaced += 1
            continue
        link = next((lk for r in event.ports if (lk := _planned(r, by_end))), None)
        if link is not None:
            key: Any = link
            if case := cases.get(key):
                pass
            else:
                hca_end = link.a if link.a.hca else None
                case = cases[key] = PortCase(
                    f"{plan.describe(link.a)} <-> {plan.describe(link.b)}" if plan else "",
                    plan.describe(link.b) if plan else "",
                    hca_end,
                )
        else:
            ref = event.ports[0]
            key = (ref.device, ref.hca, ref.port)
            if (case := cases.get(key)) is None:
                peer = (
                    f" <-> {event.ports[1].describe()} (seen, not in the plan)"
                    if len(event.ports) > 1
                    else " (not in the plan)"
                )
                hca = next((r for r in event.ports if r.hca and r.port.isdigit()), None)
                hca_end = End(hca.device, hca.hca, int(hca.port)) if hca else None  # UFM's own naming
                switch = next((r for r in event.ports if r.hca is None), None)
                case = cases[key] = PortCase(
                    f"{ref.describe()}{peer}", switch.describe() if switch else ref.describe(), hca_end
                )
        case.events.append(event)
        case.kinds.add(kind)
    window = timedelta(seconds=window_s)
    for case in cases.values():
        downs = sorted(e.at for e in case.events if kind_of(e) == LINK_DOWN)
        case.link_downs = len(downs)
        if len(downs) >= flaps and _flapped(downs, flaps, window):
            case.kinds.add(FLAPPING)
        _propose(case, list(loads), flaps, window_s)
    ordered = sorted(cases.values(), key=lambda c: (KINDS.index(c.kind()), c.ends))
    return UfmReport(ordered, len(events), ignored, unplaced)


def _propose(case: PortCase, loads: list[CleanLoad], flaps: int, window_s: int) -> None:
    kind = case.kind()
    why = {
        FLAPPING: f"{case.link_downs} link downs (flapping: {flaps} within {window_s} s, or UFM's SM says so)",
        HIGH_BER: "high BER / symbol errors",
        THERMAL: "a temperature event on the port's module",
        LINK_DOWN: f"{case.link_downs} link down(s)",
    }[kind]
    end = case.hca_end
    if end is not None and end.hca:
        later = [
            ld
            for ld in loads
            if (ld.node, ld.hca, ld.port) == (end.device, end.hca, end.port) and ld.at > case.last
        ]
        if later:
            case.repaired_by = max(later, key=lambda ld: ld.at)
            case.proposals.append(
                Proposal(
                    "re-enable",
                    case.switch_port,
                    f"after {why}: the ib stage loaded {end.device} {end.hca} port {end.port} clean at "
                    f"{case.repaired_by.at:%Y-%m-%d %H:%M:%S}Z, after the last event",
                )
            )
            return
        case.waiting = (
            f"re-enable after repair, once the ib stage loads {end.device} {end.hca} port {end.port} clean "
            f"(no clean load since {case.last:%Y-%m-%d %H:%M:%S}Z)"
        )
    else:
        case.waiting = "re-enable by hand after repair: the ib stage loads HCA ports only"
    if kind == LINK_DOWN:  # one down may be a node's reboot: a ticket to look, the port stays up
        case.proposals.append(Proposal("ticket", f"cable {case.ends}", f"{why}: inspect and reseat"))
        case.waiting = ""
        return
    case.proposals.append(Proposal("disable", case.switch_port, why))
    part = "transceiver" if kind == THERMAL else "cable or transceiver"
    case.proposals.append(Proposal("ticket", f"{part} {case.ends}", f"{why}: replace"))
