"""Slurm's view of its nodes: ``sinfo -N -h -o '%N|%T|%U|%H|%E'`` and ``scontrol show node -o``;
and of its reservations: ``scontrol show reservation -o`` (which nodes each one covers).

Both give a node's state, whether it is drained, the drain reason, who set it and when. The
``sinfo`` format is the project's own (``SINFO_FORMAT``): the reason is the last field, so a
``|`` inside a reason stays in the reason. ``scontrol show node -o`` prints one line per node of
``Key=Value`` pairs where some values hold spaces (``OS=Linux 6.1 #1 SMP``) and the reason ends
with `` [user@time]``; only the keys this project needs are read.

States: ``sinfo %T`` prints the base state in lower case with the drain folded in (``drained``,
``draining``) and a suffix for a flag (``*`` not responding, ``~`` powered off, ``#`` powering
up, ``%`` powering down, ``$`` maintenance, ``@`` reboot pending, ``!`` pending power down,
``^`` rebooting, ``-`` planned); ``scontrol`` prints ``IDLE+DRAIN``, ``ALLOCATED+DRAIN``,
``DOWN+DRAIN+NOT_RESPONDING``. Samples: tests/fixtures/samples/slurm_22_05_*.

A reservation's ``Nodes=`` is a hostlist (``node[01-02,04]``); ``Nodes=ALL`` at creation is
printed expanded, with the ``ALL_NODES`` flag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from burnin.parsers._common import parser, split_lines
from burnin.parsers.errors import ParseError
from burnin.parsers.sacct import expand_hostlist

# The sinfo output format sync asks for: node, long state, user(uid), time, reason (last).
SINFO_FORMAT = "%N|%T|%U|%H|%E"
_SINFO_SUFFIXES = "*~#%$@!^-"
_SINFO_DRAIN = {"drained", "draining", "drain"}
_NO_REASON = {"", "none", "(null)"}
_NO_VALUE = {"", "unknown", "none", "n/a", "(null)"}
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
# ` [root@2026-11-24T06:40:40]` at the end of a reason in `scontrol show node`.
_SETTER = re.compile(r" \[(?P<user>[^\]@\s]+)@(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\]")
_KEY = re.compile(r"(?:^|\s)(?P<key>[A-Za-z][A-Za-z_]*)=")
_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class SlurmNode:
    """One node as Slurm sees it."""

    name: str
    state: str  # lower case: idle, allocated, mixed, down...; from sinfo also drained, draining
    drain: bool  # DRAIN is set (drained, or draining while jobs finish)
    flags: tuple[str, ...] = ()  # other flags: not_responding, maint, reboot_requested, ...
    reason: str = ""  # the drain/down reason ("" when none)
    user: str = ""  # who set the reason
    since: datetime | None = None  # when it was set (controller local time, as printed)

    @property
    def label(self) -> str:
        """The state as people read it: 'idle', 'idle+drain', 'drained*', 'down+drain'."""
        base = self.state if not self.drain or self.state.startswith("drain") else f"{self.state}+drain"
        return base + ("*" if "not_responding" in self.flags else "")


def _time(text: str, what: str) -> datetime | None:
    text = text.strip()
    if text.lower() in _NO_VALUE:
        return None
    if not _TIME.fullmatch(text):
        raise ParseError(f"{what}: {text!r} is not a Slurm time (YYYY-MM-DDTHH:MM:SS)")
    return datetime.fromisoformat(text)


def _user(text: str) -> str:
    """'root(0)' or 'root' -> 'root'; 'Unknown' -> ''."""
    text = text.strip()
    if text.lower() in _NO_VALUE:
        return ""
    return re.sub(r"\(\d+\)$", "", text)


def _sinfo_state(text: str, line_no: int) -> tuple[str, bool, tuple[str, ...]]:
    raw = text.strip().lower()
    flags: list[str] = []
    while raw and raw[-1] in _SINFO_SUFFIXES:
        flags.append({"*": "not_responding", "~": "powered_down", "$": "maint"}.get(raw[-1], raw[-1]))
        raw = raw[:-1]
    if not re.fullmatch(r"[a-z]+(?:\+[a-z]+)*", raw):
        raise ParseError(f"line {line_no}: {text!r} is not a Slurm node state")
    parts = raw.split("+")
    drain = any(p in _SINFO_DRAIN for p in parts)
    base = parts[0]  # sinfo folds the drain in: 'drained'/'draining' stay as printed
    extra = [p for p in parts[1:] if p not in _SINFO_DRAIN]
    return base, drain, tuple(flags + extra)


@parser
def parse_sinfo_nodes(text: str) -> list[SlurmNode]:
    """``sinfo -N -h -o '%N|%T|%U|%H|%E'``: one node per line (a node in two partitions is
    printed twice: kept once). An empty output is no nodes; a line of another shape is an error."""
    nodes: dict[str, SlurmNode] = {}
    for number, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        fields = line.split("|", 4)
        if len(fields) != 5:
            raise ParseError(f"line {number}: expected 5 '|'-separated fields ({SINFO_FORMAT}), got {line!r}")
        name, state, user, when, reason = fields
        name = name.strip()
        if not _NODE_NAME.fullmatch(name):
            raise ParseError(f"line {number}: {name!r} is not a node name")
        base, drain, flags = _sinfo_state(state, number)
        reason = reason.strip()
        has_reason = reason.lower() not in _NO_REASON
        nodes.setdefault(
            name,
            SlurmNode(
                name,
                base,
                drain,
                flags,
                reason if has_reason else "",
                _user(user) if has_reason else "",
                _time(when, f"line {number}") if has_reason else None,
            ),
        )
    return list(nodes.values())


def _fields(line: str) -> dict[str, str]:
    """``Key=Value`` pairs of one ``scontrol -o`` line; a value runs to the next `` Key=``.
    Everything after ``Reason=`` is the reason (it is free text and may hold ``x=y``)."""
    head, sep, reason = line.partition(" Reason=")
    found = list(_KEY.finditer(head))
    out = {}
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(head)
        out[m.group("key")] = head[m.end() : end].strip()
    if sep:
        out["Reason"] = reason
    return out


@parser
def parse_scontrol_nodes(text: str) -> list[SlurmNode]:
    """``scontrol show node -o [NAME]``: one node per line. ``Node X not found`` (the output
    for an unknown name, exit 1) is no node; any other line without ``NodeName=`` is an error."""
    nodes = []
    for number, line in enumerate(split_lines(text), 1):
        if not line.strip() or re.fullmatch(r"Node \S+ not found", line.strip()):
            continue
        if not line.startswith("NodeName="):
            raise ParseError(f"line {number}: not a `scontrol show node -o` line: {line[:80]!r}")
        fields = _fields(line)
        name, state = fields.get("NodeName", ""), fields.get("State", "")
        if not _NODE_NAME.fullmatch(name):
            raise ParseError(f"line {number}: {name!r} is not a node name")
        if not re.fullmatch(r"[A-Z_]+(?:\+[A-Z_]+)*[*~#%$@!^-]?", state):
            raise ParseError(f"line {number}: node {name}: {state!r} is not a Slurm node state")
        parts = state.rstrip("*~#%$@!^-").lower().split("+")
        drain = "drain" in parts
        reason, user, since = "", "", None
        if "Reason" in fields:
            raw = fields["Reason"]
            m = _SETTER.search(raw)
            if m is None:
                reason = raw.strip()
            else:
                reason = raw[: m.start()].strip()
                user, since = m.group("user"), _time(m.group("time"), f"line {number}")
        flags = tuple(p for p in parts[1:] if p != "drain")
        nodes.append(SlurmNode(name, parts[0], drain, flags, reason, user, since))
    return nodes


@dataclass(frozen=True)
class SlurmReservation:
    """One reservation as ``scontrol show reservation -o`` prints it."""

    name: str
    nodes: tuple[str, ...]  # expanded from the Nodes= hostlist; () for Nodes=(null)
    state: str  # ACTIVE, INACTIVE (not started yet)
    flags: tuple[str, ...] = ()  # MAINT, IGNORE_JOBS, SPEC_NODES, ALL_NODES, ...


@parser
def parse_scontrol_reservations(text: str) -> list[SlurmReservation]:
    """``scontrol show reservation -o [NAME]``: one reservation per line. ``Reservation X not
    found`` (an unknown name, exit 1) and ``No reservations in the system`` are none; any other
    line without ``ReservationName=`` is an error."""
    out = []
    for number, line in enumerate(split_lines(text), 1):
        bare = line.strip()
        if not bare or re.fullmatch(r"Reservation \S+ not found|No reservations in the system", bare):
            continue
        if not line.startswith("ReservationName="):
            raise ParseError(f"line {number}: not a `scontrol show reservation -o` line: {line[:80]!r}")
        fields = _fields(line)
        name, nodes = fields.get("ReservationName", ""), fields.get("Nodes")
        if not name or " " in name:
            raise ParseError(f"line {number}: {name!r} is not a reservation name")
        if nodes is None:
            raise ParseError(f"line {number}: reservation {name}: no Nodes= field")
        try:
            hosts = () if nodes.lower() in _NO_VALUE else expand_hostlist(nodes)
        except ParseError as exc:
            raise ParseError(f"line {number}: reservation {name}: Nodes={nodes[:80]}: {exc}") from exc
        flags = tuple(f for f in fields.get("Flags", "").split(",") if f and f.lower() not in _NO_VALUE)
        out.append(SlurmReservation(name, hosts, fields.get("State", ""), flags))
    return out
