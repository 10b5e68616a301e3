"""Per-node history signals (pure): failures by stage and component, repairs, drains, Xids, time in
each state, each with where it came from (the event or result row).

Input is what ``burnin.history.read`` gathers from the fleet store: a node's events and its FAIL
and kernel_log results over a window (duck-typed: Event and CheckResult rows, or anything with
their fields). Definitions (docs/reliability.md):

- a **failure** is a transition into ``failed`` from burn-in or golden (a health drain synced
  too): one per incident, what the failure rate counts; a provisioning or configure failure is not;
- a **component failure** is a critical finding of a FAIL result, its part named from the
  finding's subject ("GPU 5", "mlx5_2 port 1", a PCIe address, a DIMM); a GPU's serial is added
  when the node's hardware record maps the slot to one;
- a **repair** is a move out of ``failed`` (``bringup nodes mark-repaired``), with its reason,
  or a rung ``burnin remediate`` carried out (a ``remediation`` event that acted, its command
  worked or not: docs/in-service.md, "Remediation"); the move remediate made with it is that
  same repair, not a second one;
- a **drain** is a ``slurm_drain`` event ``burnin sync`` recorded;
- **Xids** are the kernel_log check's per-code counts (metrics ``xids``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

TRANSITION = "transition"
DRAIN_EVENT = "slurm_drain"  # burnin.service.sync.DRAIN_EVENT (not imported: sync is an I/O edge)
REMEDIATION_EVENT = "remediation"  # burnin.service.remediate.EVENT (an I/O edge too)
REMEDIATION_ACTOR = "burnin remediate"
FAILED = "failed"
RETIRED = "retired"
KERNEL_CHECK = "kernel_log"
# A failure counted in the rate is a node failing in burn-in or in service; a provisioning or
# configure failure is bring-up, not the hardware.
IN_SERVICE = ("burnin", "golden")

_GPU = re.compile(r"^GPU\s+(\S+)")
_HCA_PORT = re.compile(r"^(\S+)\s+port\s+(\d+)")
_BDF = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")
_DIMM = re.compile(r"\bDIMM\b|\bmemory\b", re.IGNORECASE)
# "GPU 7 (0000:ca:00.0, serial ...)": a GPU finding that names both its index and its PCIe address
_GPU_AT = re.compile(r"^GPU\s+(\d+)\s*\(\s*((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])")
# "GPU 7 (0000:ca:00.0, serial 1652...)": the serial a GPU check names the board by (burnin/checks/gpu.py)
_GPU_SERIAL = re.compile(r"^GPU\s+(\d+)\s*\([^)]*\bserial\s+([^,)\s]+)")
# The part a finding blames when its subject names none, by its stage: the single-node stages'
# here; a group stage says its own (GroupStage.component), and the caller that reads the store
# adds those (burnin/history/read.py), so this pure module stays below the stages' layer.
STAGE_COMPONENTS: Mapping[str, str] = {"gpu": "gpu", "pcie": "pcie"}


@dataclass(frozen=True)
class Source:
    """Where a signal came from: a table row of the fleet store, or a Slurm accounting record."""

    table: str  # "events" or "check_results"; "sacct" (the id is the job id)
    id: int | str | None

    def __str__(self) -> str:
        return f"{self.table} #{self.id}"


@dataclass(frozen=True)
class Failure:
    time: datetime
    reason: str
    source: Source


@dataclass(frozen=True)
class ComponentFailure:
    time: datetime
    stage: str
    check: str
    component: str  # gpu, hca_port, pcie, dimm, other
    part: str  # "GPU 5", "GPU 5 (serial 1652...)", "mlx5_2 port 1", a PCIe address, "DIMM A3"
    message: str
    source: Source


@dataclass(frozen=True)
class Repair:
    time: datetime
    reason: str
    source: Source


@dataclass(frozen=True)
class Drain:
    time: datetime
    reason: str
    source: Source


@dataclass(frozen=True)
class XidCount:
    time: datetime
    code: int
    count: int
    source: Source


@dataclass
class NodeSignals:
    node: str
    failures: list[Failure] = field(default_factory=list)
    components: list[ComponentFailure] = field(default_factory=list)
    repairs: list[Repair] = field(default_factory=list)
    drains: list[Drain] = field(default_factory=list)
    xids: list[XidCount] = field(default_factory=list)
    time_in_state: dict[str, timedelta] = field(default_factory=dict)

    @property
    def node_days(self) -> float:
        """Days in the window the node was in the fleet (not retired, enrolled)."""
        live = sum((t for s, t in self.time_in_state.items() if s != RETIRED), timedelta(0))
        return live.total_seconds() / 86400.0

    def failures_by_stage(self) -> Counter[str]:
        return Counter(c.stage for c in self.components)

    def failures_by_component(self) -> Counter[str]:
        return Counter(c.component for c in self.components)

    def failures_by_part(self) -> Counter[str]:
        return Counter(c.part for c in self.components)

    def xid_counts(self, since: datetime | None = None) -> Counter[int]:
        out: Counter[int] = Counter()
        for x in self.xids:
            if since is None or x.time > since:
                out[x.code] += x.count
        return out


def classify(
    subject: str, stage: str = "", components: Mapping[str, str] = STAGE_COMPONENTS
) -> tuple[str, str]:
    """A finding's subject -> (component kind, part); the stage decides when the subject is silent."""
    subject = (subject or "").strip()
    if m := _GPU.match(subject):
        return "gpu", f"GPU {m.group(1)}"
    if _DIMM.search(subject):
        return "dimm", subject
    if m := _HCA_PORT.match(subject):
        return "hca_port", f"{m.group(1)} port {m.group(2)}"
    if _BDF.match(subject):
        return "pcie", subject.split()[0]
    return components.get(stage, "other"), subject or stage or "node"


def gpu_serials(hardware: Mapping[str, Any] | None) -> dict[str, str]:
    """'GPU <index>' -> serial, from a hardware record's ``gpus`` list (index, serial), if any."""
    out: dict[str, str] = {}
    for g in (hardware or {}).get("gpus") or []:
        if isinstance(g, Mapping) and g.get("index") is not None and g.get("serial"):
            out[f"GPU {g['index']}"] = str(g["serial"])
    return out


def component_failures(
    results: Iterable[Any],
    hardware: Mapping[str, Any] | None = None,
    components: Mapping[str, str] = STAGE_COMPONENTS,
) -> list[ComponentFailure]:
    """The critical findings of FAIL results, one per (result, part). A GPU named by its PCIe
    address (the kernel log's "GPU 0000:ca:00.0") is the slot another finding of the node names
    at that address ("GPU 7 (0000:ca:00.0, ...)"), so one GPU is one part. A GPU's serial comes
    from the hardware record, else from a finding of the same run (results of one time, as a
    health run's) that names it: the board as it was when it failed, so a repeat on a swapped
    board is another part."""
    serials = gpu_serials(hardware)
    results = list(results)
    slots = _gpu_slots(results)
    named = _named_serials(results)
    out: list[ComponentFailure] = []
    for r in results:
        if r.verdict != "FAIL":
            continue
        seen: set[str] = set()
        for f in r.findings or []:
            if f.get("severity") != "critical":
                continue
            kind, part = classify(str(f.get("subject", "")), r.stage, components)
            if kind == "gpu":
                part = slots.get(_bdf(part.removeprefix("GPU ")), part)
            serial = serials.get(part) or (named.get((r.time, part)) if kind == "gpu" else None)
            if serial:
                part = f"{part} (serial {serial})"
            if part in seen:
                continue
            seen.add(part)
            out.append(
                ComponentFailure(
                    r.time,
                    r.stage,
                    r.check,
                    kind,
                    part,
                    str(f.get("message", "")),
                    Source("check_results", r.id),
                )
            )
    return out


def _bdf(text: str) -> str:
    """A PCIe address in one form: lower case, with its domain."""
    text = text.strip().lower()
    return text if text.count(":") == 2 else f"0000:{text}"


def _gpu_slots(results: Sequence[Any]) -> dict[str, str]:
    """PCIe address -> "GPU <index>", from GPU findings that name both."""
    out: dict[str, str] = {}
    for r in results:
        for f in r.findings or []:
            if m := _GPU_AT.match(str(f.get("message", ""))):
                out.setdefault(_bdf(m.group(2)), f"GPU {m.group(1)}")
    return out


def _named_serials(results: Sequence[Any]) -> dict[tuple[datetime, str], str]:
    """(result time, "GPU <index>") -> the serial a GPU finding of that time names."""
    out: dict[tuple[datetime, str], str] = {}
    for r in results:
        for f in r.findings or []:
            if m := _GPU_SERIAL.match(str(f.get("message", ""))):
                out.setdefault((r.time, f"GPU {m.group(1)}"), m.group(2))
    return out


def xid_counts(results: Iterable[Any]) -> list[XidCount]:
    """Per-code Xid counts of kernel_log results (metrics ``xids``: code -> count)."""
    out = []
    for r in results:
        if r.check != KERNEL_CHECK:
            continue
        for code, count in ((r.metrics or {}).get("xids") or {}).items():
            try:
                out.append(XidCount(r.time, int(code), int(count), Source("check_results", r.id)))
            except (TypeError, ValueError):
                continue  # a malformed count is not a signal
    return out


def time_in_state(
    events: Sequence[Any], start: datetime, end: datetime, current: str, enrolled: datetime | None = None
) -> dict[str, timedelta]:
    """Time spent in each lifecycle state between ``start`` and ``end``, from the transitions
    (ordered); the state before the first one in the window is its from_state (none before the
    enrolment), else ``current``."""
    begin = max(start, enrolled) if enrolled else start
    moves = [e for e in events if e.kind == TRANSITION and begin <= e.time <= end]
    # before the first move: its from_state; None when that move is the enrolment (not in the fleet)
    state: str | None = (moves[0].from_state if moves else current) or None
    out: Counter[str] = Counter()
    t = begin
    for e in moves:
        if state is not None:
            out[state] += (e.time - t).total_seconds()
        state, t = e.to_state, e.time
    if end > t and state is not None:
        out[state] += (end - t).total_seconds()
    return {s: timedelta(seconds=v) for s, v in out.items() if v > 0}


def node_signals(
    node: str,
    events: Sequence[Any],
    results: Sequence[Any],
    start: datetime,
    end: datetime,
    *,
    current: str,
    enrolled: datetime | None = None,
    hardware: Mapping[str, Any] | None = None,
    components: Mapping[str, str] = STAGE_COMPONENTS,
) -> NodeSignals:
    """Every signal of one node over [start, end] from its events and results."""
    events = sorted((e for e in events if e.time <= end), key=lambda e: (e.time, e.id or 0))
    inside = [e for e in events if e.time >= start]
    sig = NodeSignals(node)
    for e in inside:
        src = Source("events", e.id)
        if e.kind == TRANSITION and e.to_state == FAILED and e.from_state in IN_SERVICE:
            sig.failures.append(Failure(e.time, e.reason, src))
        elif e.kind == TRANSITION and e.from_state == FAILED:
            if getattr(e, "actor", "") != REMEDIATION_ACTOR:  # its remediation event counts it
                sig.repairs.append(Repair(e.time, e.reason, src))
        elif e.kind == REMEDIATION_EVENT and (e.details or {}).get("acted"):
            sig.repairs.append(Repair(e.time, f"remediation: {e.reason}", src))
        elif e.kind == DRAIN_EVENT:
            sig.drains.append(Drain(e.time, e.reason, src))
    window = sorted((r for r in results if start <= r.time <= end), key=lambda r: (r.time, r.id or 0))
    sig.components = component_failures(window, hardware, components)
    sig.xids = xid_counts(window)
    sig.time_in_state = time_in_state(events, start, end, current, enrolled)
    return sig


def clip(sig: NodeSignals, start: datetime, end: datetime) -> NodeSignals:
    """The signals that fall in [start, end] (time in state is not clipped: it is kept empty)."""

    def inside(items: Iterable[Any]) -> list[Any]:
        return [x for x in items if start <= x.time <= end]

    return NodeSignals(
        sig.node,
        inside(sig.failures),
        inside(sig.components),
        inside(sig.repairs),
        inside(sig.drains),
        inside(sig.xids),
    )
