"""Each node accepted or rejected, with reasons; the delivery against its criteria. Pure.

A node is accepted when what it is matches the order (burnin/accept/conformance.py) and every
result of the acceptance's burn-in runs, the order's stages and every soak iteration, passed
(a WARN passes and is noted; UNKNOWN never passes). A reason names the part as a vendor's desk
asks for it: the finding, the slot, the part's serial, the action, and when it was seen.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from burnin.result import Verdict, verdict_of

ACCEPTED, REJECTED = "accepted", "rejected"
# 'serial X', 'Serial: X', 'Serial Number: X', where X holds a digit ('serial here' is no serial).
_SERIAL = re.compile(r"\bserial(?:\s+number)?\s*[:=]?\s*([A-Za-z0-9._-]*[0-9][A-Za-z0-9._-]*)", re.IGNORECASE)


@dataclass(frozen=True)
class ResultRow:
    """A stored check result with its node's name (what decisions and reports read)."""

    id: int
    node: str
    run_id: int | None
    stage: str
    check: str
    verdict: str
    findings: tuple[dict[str, Any], ...]
    metrics: dict[str, Any]
    time: datetime
    has_evidence: bool


@dataclass(frozen=True)
class Reason:
    """Why a node is rejected (or, among ``notes``, what was seen and let pass)."""

    source: str  # "order" (found against ordered) or "burn-in"
    part: str  # the component: memory, gpu, psu, nvme, the check's name...
    finding: str  # one line a person reads
    action: str  # burnin.result.Action value ("" when nothing could judge it)
    slot: str = ""
    serial: str = ""  # the failing part's serial, when known
    ordered: str = ""
    found: str = ""
    stage: str = ""
    check: str = ""
    iteration: int | None = None  # 0: the order's stages, 1..: the soak's
    result_id: int | None = None  # the stored result whose raw output is the evidence
    seen_at: datetime | None = None

    def line(self) -> str:
        where = ", ".join(x for x in (self.slot, f"serial {self.serial}" if self.serial else "") if x)
        when = f" (soak iteration {self.iteration})" if self.iteration else ""
        action = f" -> {self.action}" if self.action else ""
        return f"{self.part}{f' [{where}]' if where else ''}: {self.finding}{when}{action}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "part": self.part,
            "finding": self.finding,
            "action": self.action,
            "slot": self.slot,
            "serial": self.serial,
            "ordered": self.ordered,
            "found": self.found,
            "stage": self.stage,
            "check": self.check,
            "iteration": self.iteration,
            "seen_at": self.seen_at.isoformat() if self.seen_at else None,
        }


@dataclass(frozen=True)
class NodeDecision:
    node: str
    serial: str | None
    decision: str  # accepted | rejected
    reasons: tuple[Reason, ...] = ()
    notes: tuple[Reason, ...] = ()  # warnings let pass

    @property
    def accepted(self) -> bool:
        return self.decision == ACCEPTED


@dataclass(frozen=True)
class DeliveryDecision:
    accepted: bool
    accepted_nodes: int
    ordered: int
    required_fraction: float
    why: str
    problems: tuple[str, ...] = ()  # delivery-wide: nodes missing, more than ordered...


@dataclass(frozen=True)
class NodeEvidence:
    """What the decision of one node reads."""

    node: str
    serial: str | None
    conformance: Sequence[Reason] = ()  # mismatches against the order
    skipped: str = ""  # why the node was not burnt in at all
    results: Sequence[ResultRow] = field(default_factory=tuple)  # all runs of the acceptance
    required_stages: Sequence[str] = ()  # stages iteration 0 must show a result for
    # Stages with a result in iteration 0 (None: read them from ``results``, which then holds
    # the passes too; a caller that hands in only what did not pass names them here).
    first_stages: frozenset[str] | None = None


def serial_in(*texts: str) -> str:
    """The first 'serial X' / 'Serial: X' named in the texts ('' when none)."""
    for text in texts:
        m = _SERIAL.search(text or "")
        if m:
            return m.group(1).rstrip(".,;)")
    return ""


def result_reasons(
    rows: Iterable[ResultRow], iteration_of: Mapping[int, int]
) -> tuple[list[Reason], list[Reason]]:
    """(reasons, notes) from stored results: each critical finding of a FAIL, each UNKNOWN, and
    the warnings. A finding repeated in later soak iterations is named once, where it began."""
    reasons: dict[tuple[str, str, str], Reason] = {}
    notes: dict[tuple[str, str, str], Reason] = {}
    for r in rows:
        verdict = verdict_of(r.verdict)
        iteration = iteration_of.get(r.run_id) if r.run_id is not None else None
        if verdict is Verdict.PASS:
            continue
        wanted = (
            {"critical"} if verdict is Verdict.FAIL else {"warning"} if verdict is Verdict.WARN else set()
        )
        target = notes if verdict is Verdict.WARN else reasons
        found = [f for f in r.findings if f.get("severity") in wanted]
        if verdict is Verdict.UNKNOWN or not found:
            why = str((r.metrics or {}).get("reason") or "no finding recorded")
            text = f"could not be judged: {why}" if verdict is Verdict.UNKNOWN else f"{verdict.value}: {why}"
            found = [{"message": text, "action": "", "subject": "", "evidence": ""}]
        for f in found:
            subject = str(f.get("subject") or "")
            message = str(f.get("message") or "")
            key = (r.check, subject, message)
            if key in target:
                continue
            target[key] = Reason(
                source="burn-in",
                part=r.check,
                finding=message,
                action=str(f.get("action") or ""),
                slot=subject,
                serial=serial_in(subject, message, str(f.get("evidence") or "")),
                stage=r.stage,
                check=r.check,
                iteration=iteration,
                result_id=r.id,
                seen_at=r.time,
            )
    return list(reasons.values()), list(notes.values())


# A burn-in check that counts a part the order counts too (check -> the order's part): its count
# finding names no part, while the order's comparison may have named the one the OS lost from the
# PCI tree (burnin/accept/missing_parts.py).
_COUNTS = {"gpu_inventory": "gpu", "ib_ports": "nic"}


def lend_slots(burn: Sequence[Reason], conformance: Sequence[Reason]) -> list[Reason]:
    """The burn-in's count findings (no slot, the same action) with the slot and serial the
    order's comparison named for that part from the PCI tree."""
    named = {c.part.split()[0]: c for c in conformance if c.slot.startswith("PCI ")}
    out = []
    for r in burn:
        c = named.get(_COUNTS.get(r.check, ""))
        if c is not None and not r.slot and r.action == c.action:
            r = replace(r, slot=c.slot, serial=r.serial or c.serial)
        out.append(r)
    return out


def decide_node(facts: NodeEvidence, iteration_of: Mapping[int, int]) -> NodeDecision:
    reasons = list(facts.conformance)
    if facts.skipped:
        reasons.append(Reason("burn-in", "node", f"not burnt in: {facts.skipped}", ""))
    burn, notes = result_reasons(facts.results, iteration_of)
    reasons.extend(lend_slots(burn, facts.conformance))
    if not facts.skipped:
        first = facts.first_stages
        if first is None:
            first = frozenset(r.stage for r in facts.results if iteration_of.get(r.run_id or -1) == 0)
        missing = [s for s in facts.required_stages if s not in first]
        if missing and not burn:  # a node stopped at a failing stage is rejected for that already
            reasons.append(Reason("burn-in", "node", f"no result for stage(s) {', '.join(missing)}", ""))
    return NodeDecision(
        facts.node, facts.serial, REJECTED if reasons else ACCEPTED, tuple(reasons), tuple(notes)
    )


def decide_delivery(
    latest: Mapping[str, str], ordered: int, required_fraction: float, problems: Sequence[str] = ()
) -> DeliveryDecision:
    """The delivery against its criteria: ``latest`` is node -> its latest decision over every
    acceptance of the delivery (a re-delivery's acceptance replaces the rejection it re-tested)."""
    accepted = sum(1 for d in latest.values() if d == ACCEPTED)
    need = required_fraction * ordered
    ok = ordered > 0 and accepted >= need - 1e-9
    share = f"{accepted} of {ordered} ordered node(s) accepted"
    rule = f"the order requires {required_fraction:.0%}"
    why = f"{share}; {rule}" + ("" if ok else f": {max(0, _ceil(need) - accepted)} more needed")
    return DeliveryDecision(ok, accepted, ordered, required_fraction, why, tuple(problems))


def _ceil(x: float) -> int:
    n = int(x)
    return n if n >= x - 1e-9 else n + 1
