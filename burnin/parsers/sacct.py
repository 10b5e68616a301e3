"""Slurm accounting: ``sacct --parsable2`` job records and ``sacctmgr --parsable2 list event`` node
events (pure).

Both are read by their header line (kept on purpose: the columns are found by name, so a format
with more fields or another order still parses, and a missing field the project needs is an
error naming it). Values as Slurm 22.05 prints them (samples: tests/fixtures/samples/
slurm_22_05_sacct_* and slurm_22_05_sacctmgr_*):

- ``State`` is one word (``COMPLETED``, ``FAILED``, ``NODE_FAIL``, ``REQUEUED``, ``TIMEOUT``,
  ...) or ``CANCELLED by <uid>``; with ``--duplicates`` a requeued job has one row per run, the
  runs before the last ``REQUEUED`` (``scontrol requeue``) or ``NODE_FAIL`` (requeued after a node
  failure);
- ``NodeList`` is a Slurm hostlist (``node[01-03,07],gpu9``), or ``None assigned``;
- times are ``YYYY-MM-DDTHH:MM:SS`` (the controller's local time) or ``Unknown``/``None``;
- ``Elapsed`` is ``[D-]HH:MM:SS``; ``ExitCode`` is ``code:signal``;
- an array task's ``JobID`` is ``<array>_<task>``, its ``JobIDRaw`` the task's own id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from burnin.parsers._common import parser, split_lines
from burnin.parsers.errors import ParseError

# What `burnin` asks sacct for (burnin/service/slurm.py): the allocation of each run of each job.
SACCT_FIELDS = (
    "JobID",
    "JobIDRaw",
    "JobName",
    "Partition",
    "State",
    "ExitCode",
    "NodeList",
    "AllocNodes",
    "Submit",
    "Start",
    "End",
    "Elapsed",
    "Reason",
)
SACCT_NEEDS = ("JobID", "State", "NodeList", "End")
EVENT_FIELDS = ("NodeName", "TimeStart", "TimeEnd", "State", "Reason", "User")
EVENT_NEEDS = ("NodeName", "TimeStart", "State")

_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
_NO_TIME = {"", "unknown", "none", "n/a"}
_ELAPSED = re.compile(r"(?:(\d+)-)?(\d+):(\d\d):(\d\d)")
_STATE = re.compile(r"([A-Z_]+)(?: by (\d+))?\+?")
_EXIT = re.compile(r"(\d+):(\d+)")
_HOSTLIST_PART = re.compile(r"([^,\[\]]*)(?:\[([^\]]*)\])?([^,\[\]]*)")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_HOSTS = 100_000  # a hostlist range that would expand to more is not a real job's


@dataclass(frozen=True)
class SacctJob:
    """One row of ``sacct --allocations --duplicates``: one run of one job."""

    job_id: str  # as printed: "12", "9_1" (array task), "12+0" (heterogeneous component)
    state: str  # upper case, without " by <uid>": COMPLETED, FAILED, NODE_FAIL, REQUEUED, ...
    nodes: tuple[str, ...]  # expanded from NodeList; () for "None assigned"
    end: datetime | None
    start: datetime | None = None
    submit: datetime | None = None
    name: str = ""
    partition: str = ""
    exit_code: int | None = None
    signal: int | None = None
    alloc_nodes: int | None = None
    elapsed: timedelta | None = None
    reason: str = ""
    raw_id: str = ""  # JobIDRaw: an array task's own id
    cancelled_by: int | None = None  # the uid in "CANCELLED by <uid>"


@dataclass(frozen=True)
class NodeEvent:
    """One row of ``sacctmgr list event``: a node down or drained, from when to when."""

    node: str
    start: datetime
    end: datetime | None  # None while it lasts ("Unknown")
    state: str  # DOWN, DOWN*, DRAIN, IDLE+DRAIN ...
    reason: str = ""
    user: str = ""


def expand_hostlist(text: str) -> tuple[str, ...]:
    """A Slurm hostlist -> host names: ``node[01-03,07],gpu9`` -> node01, node02, node03, node07,
    gpu9 (zero padding kept). ``None assigned`` and "" -> (). Anything else is a ParseError."""
    text = text.strip()
    if text.lower() in ("", "none assigned", "(null)", "none"):
        return ()
    hosts: list[str] = []
    for item in _split_top(text):
        m = _HOSTLIST_PART.fullmatch(item)
        if not m or not item:
            raise ParseError(f"{text!r} is not a Slurm hostlist")
        prefix, ranges, suffix = m.groups()
        if ranges is None:
            names = [prefix + suffix]
        else:
            names = [prefix + n + suffix for n in _expand_ranges(ranges, text)]
        for name in names:
            if not _NAME.fullmatch(name):
                raise ParseError(f"{text!r}: {name!r} is not a host name")
        hosts += names
        if len(hosts) > MAX_HOSTS:
            raise ParseError(f"{text[:80]!r}: a hostlist of more than {MAX_HOSTS} hosts")
    return tuple(hosts)


def _split_top(text: str) -> list[str]:
    """Split at the commas outside brackets."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        if depth not in (0, 1):
            raise ParseError(f"{text!r} is not a Slurm hostlist (brackets)")
    out.append("".join(cur))
    if depth != 0:
        raise ParseError(f"{text!r} is not a Slurm hostlist (brackets)")
    return out


def _expand_ranges(ranges: str, text: str) -> list[str]:
    out: list[str] = []
    for r in ranges.split(","):
        lo, sep, hi = r.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ParseError(f"{text!r}: {r!r} is not a hostlist range")
        if not sep:
            out.append(lo)
            continue
        a, b = int(lo), int(hi)
        if b < a or b - a > MAX_HOSTS:
            raise ParseError(f"{text!r}: {r!r} is not a hostlist range")
        width = len(lo) if lo.startswith("0") else 0
        out += [str(i).zfill(width) for i in range(a, b + 1)]
    return out


def _time(value: str, where: str) -> datetime | None:
    value = value.strip()
    if value.lower() in _NO_TIME:
        return None
    if not _TIME.fullmatch(value):
        raise ParseError(f"{where}: {value!r} is not a Slurm time (YYYY-MM-DDTHH:MM:SS)")
    return datetime.fromisoformat(value)


def _elapsed(value: str, where: str) -> timedelta | None:
    value = value.strip()
    if value.lower() in _NO_TIME:
        return None
    m = _ELAPSED.fullmatch(value)
    if not m:
        raise ParseError(f"{where}: Elapsed {value!r} is not [D-]HH:MM:SS")
    d, h, mi, s = (int(x or 0) for x in m.groups())
    return timedelta(days=d, hours=h, minutes=mi, seconds=s)


def _table(text: str, needs: tuple[str, ...], what: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, column -> value) per row of a ``--parsable2`` table with its header."""
    lines = [(n, line) for n, line in enumerate(split_lines(text), 1) if line.strip()]
    if not lines:
        return []
    header_no, header = lines[0]
    columns = [c.strip() for c in header.split("|")]
    missing = [c for c in needs if c not in columns]
    if missing:
        raise ParseError(
            f"{what}: line {header_no}: no header with {', '.join(missing)} "
            f"(run it --parsable2 with its header, not --noheader): {header[:120]!r}"
        )
    rows = []
    for number, line in lines[1:]:
        values = line.split("|")
        if len(values) != len(columns):
            raise ParseError(
                f"{what}: line {number}: {len(values)} '|'-separated fields, the header has {len(columns)}"
            )
        rows.append((number, dict(zip(columns, values, strict=True))))
    return rows


def _int(value: str | None) -> int | None:
    value = (value or "").strip()
    return int(value) if value.isdigit() else None


@parser
def parse_sacct(text: str) -> list[SacctJob]:
    """``sacct --parsable2 --format=...`` with its header: one record per row."""
    jobs = []
    for number, row in _table(text, SACCT_NEEDS, "sacct"):
        where = f"sacct line {number}"
        job_id = row["JobID"].strip()
        if not re.fullmatch(r"\d+(?:[_+][\w\[\]\-,%]+)?(?:\.\w+)?", job_id):
            raise ParseError(f"{where}: {job_id!r} is not a job id")
        m = _STATE.fullmatch(row["State"].strip())
        if not m:
            raise ParseError(f"{where}: {row['State']!r} is not a job state")
        code = _EXIT.fullmatch(row.get("ExitCode", "").strip())
        jobs.append(
            SacctJob(
                job_id=job_id,
                state=m.group(1),
                nodes=expand_hostlist(row["NodeList"]),
                end=_time(row["End"], where),
                start=_time(row.get("Start", ""), where),
                submit=_time(row.get("Submit", ""), where),
                name=row.get("JobName", "").strip(),
                partition=row.get("Partition", "").strip(),
                exit_code=int(code.group(1)) if code else None,
                signal=int(code.group(2)) if code else None,
                alloc_nodes=_int(row.get("AllocNodes")),
                elapsed=_elapsed(row.get("Elapsed", ""), where),
                reason=_reason(row.get("Reason", "")),
                raw_id=row.get("JobIDRaw", "").strip(),
                cancelled_by=int(m.group(2)) if m.group(2) else None,
            )
        )
    return jobs


@parser
def parse_node_events(text: str) -> list[NodeEvent]:
    """``sacctmgr --parsable2 list event Event=Node format=NodeName,TimeStart,TimeEnd,State,
    Reason,User`` with its header. A cluster-wide row (no node name) is skipped."""
    out = []
    for number, row in _table(text, EVENT_NEEDS, "sacctmgr list event"):
        where = f"sacctmgr line {number}"
        node = row["NodeName"].strip()
        if not node:
            continue  # "Cluster Registered TRES" and other cluster events
        if not _NAME.fullmatch(node):
            raise ParseError(f"{where}: {node!r} is not a node name")
        start = _time(row["TimeStart"], where)
        if start is None:
            raise ParseError(f"{where}: node {node}: no TimeStart")
        user = re.sub(r"\(\d+\)$", "", row.get("User", "").strip())
        out.append(
            NodeEvent(
                node,
                start,
                _time(row.get("TimeEnd", ""), where),
                row["State"].strip(),
                _reason(row.get("Reason", "")),
                user,
            )
        )
    return out


def _reason(value: str) -> str:
    value = value.strip()
    return "" if value.lower() in ("none", "(null)") else value
