"""The acceptance's outputs: an HTML summary for the buyer, CSV and JSON for the vendor, JUnit.

Pure renderers of an AcceptanceResult, and ``write_outputs`` that writes them and one RMA bundle
per rejected node into a folder. The page is one self-contained file like the burn-in report
(burnin/report/html.py, whose stylesheet it shares): no JavaScript, nothing fetched.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from bringup.core.csvcell import csv_cell
from burnin.accept.bundle import bundle_name_of, write_bundle
from burnin.accept.decide import NodeDecision, Reason
from burnin.accept.outcome import AcceptanceResult
from burnin.report.html import CSS

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
CSV_FIELDS = (
    "node",
    "chassis_serial",
    "decision",
    "source",
    "part",
    "slot",
    "part_serial",
    "finding",
    "action",
    "ordered",
    "found",
    "stage",
    "check",
    "soak_iteration",
    "seen_at",
    "status",  # arrived | unordered | never arrived
    "acceptance",  # the acceptance whose decision the row is
)
_EXTRA_CSS = """
.accepted { color: var(--pass); font-weight: 600; } .rejected { color: var(--fail); font-weight: 600; }
tr.mismatch td { background: #fdecea; } td.ok { color: var(--pass); } td.bad { color: var(--fail); font-weight: 600; }
"""


def _t(value: object) -> str:
    return escape(_CONTROL.sub("", str(value)), quote=True)


def _when(value: datetime | None) -> str:
    return value.isoformat(timespec="seconds") if value else "-"


def _duration(seconds: float) -> str:
    if seconds <= 0:
        return "none"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


# ---- aggregations ----------------------------------------------------------------------------


def component(reason: Reason) -> str:
    """The kind of part a reason is about: 'memory' for memory_dimms and for the order's memory,
    'nic' for 'nic MT4129', 'bios' for 'bios SriovGlobalEnable'."""
    return reason.part.split()[0].split("_")[0] if reason.part else "node"


@dataclass(frozen=True)
class CauseRow:
    component: str
    action: str  # "" when nothing could judge it
    nodes: tuple[str, ...]
    example: str  # one of the findings, as the first node showed it


def failures_by_cause(decisions: tuple[NodeDecision, ...]) -> list[CauseRow]:
    """The rejections by component and action (a missing DIMM in any slot is one cause), most
    nodes first."""
    nodes: dict[tuple[str, str], list[str]] = {}
    example: dict[tuple[str, str], str] = {}
    for d in decisions:
        for r in d.reasons:
            key = (component(r), r.action)
            example.setdefault(key, r.finding)
            if d.node not in nodes.setdefault(key, []):
                nodes[key].append(d.node)
    rows = [CauseRow(c, a, tuple(sorted(names)), example[(c, a)]) for (c, a), names in nodes.items()]
    return sorted(rows, key=lambda row: (-len(row.nodes), row.component, row.action))


def history_lines(result: AcceptanceResult) -> dict[str, list[str]]:
    """Node -> 'rejected on 2026-05-01 for ...', 'accepted on 2026-05-09', oldest first."""
    out: dict[str, list[str]] = {}
    for h in result.history:
        what = f"{h.decision} on {h.time.date().isoformat()} (acceptance #{h.acceptance})"
        if h.acceptance == result.acceptance_id:
            what += ": this one"  # its reasons are beside it
        elif h.reasons:
            what += " for " + "; ".join(h.reasons)
        out.setdefault(h.node, []).append(what)
    return out


# ---- JSON and CSV ----------------------------------------------------------------------------


def render_json(result: AcceptanceResult) -> str:
    d = result.delivery_decision
    data: dict[str, Any] = {
        "delivery": result.delivery,
        "description": result.description,
        "rack": result.rack,
        "acceptance": result.acceptance_id,
        "redelivery_of": result.redelivery_of,
        "started_at": _when(result.started_at),
        "finished_at": _when(result.finished_at),
        "soak_s": result.soak_s,
        "stages": list(result.stages),
        "soak_stages": list(result.soak_stages),
        "decision": {
            "accepted": d.accepted,
            "accepted_nodes": d.accepted_nodes,
            "ordered": d.ordered,
            "required_fraction": d.required_fraction,
            "why": d.why,
            "problems": list(d.problems),
        },
        "nodes": [
            {
                "node": n.node,
                "chassis_serial": n.serial,
                "decision": n.decision,
                "reasons": [r.as_dict() for r in n.reasons],
                "notes": [r.as_dict() for r in n.notes],
            }
            for n in result.decisions
        ],
        "waiting_for_vendor": dict(result.waiting),
        "delivery_nodes": [
            {
                "node": r.node,
                "serial": r.serial,
                "status": r.status,
                "decision": r.decision,
                "acceptance": r.acceptance,
                "decided_at": _when(r.decided_at) if r.decided_at else None,
                "reasons": list(r.reasons),
                "note": r.note,
            }
            for r in result.whole()
        ],
        "conformance": [vars(c) for c in result.conformance],
        "iterations": [
            {
                "iteration": i.iteration,
                "run": i.run_id,
                "status": i.status,
                "started_at": _when(i.started_at),
                "finished_at": _when(i.finished_at),
                "nodes": list(i.nodes),
                "failed": list(i.failed),
            }
            for i in result.iterations
        ],
        "history": [
            {
                "node": h.node,
                "acceptance": h.acceptance,
                "decision": h.decision,
                "reasons": list(h.reasons),
                "time": _when(h.time),
            }
            for h in result.history
        ],
    }
    return json.dumps(data, indent=2) + "\n"


class _SafeWriter:
    """A DictWriter whose text cells are safe to open in a spreadsheet: a node name or a BMC's
    finding that starts like a formula is written as text (bringup/core/csvcell.py)."""

    def __init__(self, writer: csv.DictWriter) -> None:
        self._writer = writer

    def writeheader(self) -> None:
        self._writer.writeheader()

    def writerow(self, row: dict[str, Any]) -> None:
        self._writer.writerow({key: csv_cell(value) for key, value in row.items()})


def render_csv(result: AcceptanceResult) -> str:
    """The whole delivery: one row per reason of a node this acceptance rejected, one per reason
    line of a node an earlier acceptance rejected, one per other node or ordered serial."""
    out = io.StringIO()
    writer = _SafeWriter(csv.DictWriter(out, CSV_FIELDS, lineterminator="\n"))
    writer.writeheader()
    mine = {n.node: n for n in result.decisions}
    for row in result.whole():
        base = {
            "node": row.node or "",
            "chassis_serial": row.serial or "",
            "decision": row.decision,
            "status": row.status,
            "acceptance": "" if row.acceptance is None else row.acceptance,
        }
        n = mine.get(row.node or "")
        if n is not None and row.acceptance == result.acceptance_id and row.decision == n.decision:
            base |= {"chassis_serial": n.serial or ""}
            if not n.reasons:
                writer.writerow(base)
            for r in n.reasons:
                writer.writerow(
                    {
                        **base,
                        "source": r.source,
                        "part": r.part,
                        "slot": r.slot,
                        "part_serial": r.serial,
                        "finding": _CONTROL.sub("", r.finding),
                        "action": r.action,
                        "ordered": r.ordered,
                        "found": r.found,
                        "stage": r.stage,
                        "check": r.check,
                        "soak_iteration": "" if r.iteration is None else r.iteration,
                        "seen_at": _when(r.seen_at),
                    }
                )
            continue
        lines = row.reasons if row.decision != "accepted" else ()
        if row.note:
            lines = (*lines, row.note)
        if not lines:
            writer.writerow(base | {"seen_at": _when(row.decided_at) if row.decided_at else ""})
        for line in lines:
            writer.writerow(base | {"finding": _CONTROL.sub("", line), "seen_at": _when(row.decided_at)})
    return out.getvalue()


# ---- JUnit -----------------------------------------------------------------------------------


def render_junit(result: AcceptanceResult) -> str:
    """One testcase per node and ordered serial of the delivery: a rejection (this acceptance's
    or an earlier one's) and a serial that never arrived are failures, a node waiting is skipped."""
    cases = []
    failures = skipped = 0
    mine = {n.node: n for n in result.decisions}
    classname = quoteattr(_CONTROL.sub("", f"accept.{result.delivery}"))
    for row in result.whole():
        label = row.node or "(not delivered)"
        name = quoteattr(_CONTROL.sub("", f"{label} ({row.serial or 'no serial'})"))
        n = mine.get(row.node or "")
        if row.decision == "accepted":
            cases.append(f"    <testcase classname={classname} name={name}/>")
            continue
        if row.decision in ("waiting", "not decided"):
            skipped += 1
            why = quoteattr(_CONTROL.sub("", row.note or row.decision))
            cases.append(
                f"    <testcase classname={classname} name={name}>\n      <skipped message={why}/>\n    </testcase>"
            )
            continue
        if n is not None and row.acceptance == result.acceptance_id and n.reasons:
            lines = [r.line() for r in n.reasons]
        elif row.decision == "never arrived":
            lines = [f"serial {row.serial} is on the packing list and never arrived"]
        else:
            lines = [f"acceptance #{row.acceptance}: {line}" for line in row.reasons] or [row.decision]
        failures += 1
        message = quoteattr(_CONTROL.sub("", lines[0]))
        body = escape(_CONTROL.sub("", "\n".join(lines)))
        kind = "never-arrived" if row.decision == "never arrived" else "rejected"
        cases.append(
            f"    <testcase classname={classname} name={name}>\n"
            f'      <failure message={message} type="{kind}">{body}</failure>\n'
            "    </testcase>"
        )
    suite = quoteattr(f"acceptance {result.delivery} #{result.acceptance_id} on {result.rack}")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites tests="{len(cases)}" failures="{failures}" skipped="{skipped}">\n'
        f'  <testsuite name={suite} tests="{len(cases)}" failures="{failures}" errors="0" skipped="{skipped}" '
        f'timestamp="{_when(result.finished_at)}">\n' + "\n".join(cases) + "\n  </testsuite>\n</testsuites>\n"
    )


# ---- HTML ------------------------------------------------------------------------------------


def _cards(result: AcceptanceResult) -> str:
    d = result.delivery_decision
    verdict = "ACCEPTED" if d.accepted else "REJECTED"
    cards = [
        ("delivery", f'<span class="{verdict.lower()}">{verdict}</span>'),
        ("accepted", f"{d.accepted_nodes} of {d.ordered}"),
        ("tested now", str(len(result.tested))),
        ("rejected now", str(len(result.rejected))),
        ("soak", _t(_duration(result.soak_s))),
        ("soak iterations", str(sum(1 for i in result.iterations if i.iteration >= 1))),
    ]
    body = "".join(f'<div class="card">{label}<b>{value}</b></div>' for label, value in cards)
    return f'<div class="cards">{body}</div><p>{_t(d.why)}</p>' + "".join(
        f'<p class="rejected">{_t(p)}</p>' for p in d.problems
    )


def _decisions(result: AcceptanceResult) -> str:
    """Every node and ordered serial of the delivery, with its latest decision and the
    acceptance that made it: this one's with its reasons and notes, an earlier one's with the
    reasons it recorded."""
    rows = []
    history = history_lines(result)
    mine = {n.node: n for n in result.decisions}
    order = {"rejected": 0, "never arrived": 1, "waiting": 2, "not decided": 3, "accepted": 4}
    for row in sorted(result.whole(), key=lambda r: (order.get(r.decision, 5), r.node or "", r.serial or "")):
        n = mine.get(row.node or "")
        if n is not None and row.acceptance == result.acceptance_id:
            reasons = "".join(f"<li>{_t(r.line())}</li>" for r in n.reasons) or "-"
            notes = "".join(f"<li>{_t(r.line())}</li>" for r in n.notes)
            reasons = f'<ul class="reasons">{reasons}</ul>' + (
                f"<p>notes:</p><ul>{notes}</ul>" if notes else ""
            )
        else:
            lines = [*(row.reasons if row.decision != "accepted" else ()), *([row.note] if row.note else [])]
            reasons = (
                f'<ul class="reasons">{"".join(f"<li>{_t(x)}</li>" for x in lines)}</ul>' if lines else "-"
            )
        css = "accepted" if row.decision == "accepted" else "rejected"
        by = f"#{row.acceptance}" + (" (this one)" if row.acceptance == result.acceptance_id else "")
        past = "".join(f"<li>{_t(line)}</li>" for line in history.get(row.node or "", []))
        rows.append(
            f"<tr><td>{_t(row.node or '-')}</td><td>{_t(row.serial or '-')}</td><td>{_t(row.status)}</td>"
            f'<td class="{css}">{_t(row.decision)}</td><td>{_t(by if row.acceptance else "-")}</td>'
            f'<td>{reasons}</td><td><ul class="reasons">{past}</ul></td></tr>'
        )
    head = (
        "<tr><th>node</th><th>chassis serial</th><th>arrived</th><th>decision</th><th>decided by</th>"
        "<th>reasons</th><th>history</th></tr>"
    )
    return f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"


def _causes(result: AcceptanceResult) -> str:
    rows = failures_by_cause(result.decisions)
    if not rows:
        return '<p class="empty">No failures.</p>'
    body = "".join(
        f"<tr><td>{_t(r.component)}</td><td>{_t(r.action or 'could not be judged')}</td><td>{len(r.nodes)}</td>"
        f"<td>{_t(', '.join(r.nodes))}</td><td>{_t(r.example)}</td></tr>"
        for r in rows
    )
    head = "<tr><th>component</th><th>action</th><th>nodes</th><th>which</th><th>for example</th></tr>"
    return f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"


def _conformance(result: AcceptanceResult) -> str:
    if not result.conformance:
        return '<p class="empty">No conformance data (was the rack discovered?).</p>'
    matches = {
        True: ("", "ok", "yes"),
        False: ("mismatch", "bad", "NO"),
        None: ("mismatch", "bad", "not compared"),
    }
    body = "".join(
        f'<tr class="{matches[c.ok][0]}"><td>{_t(c.node)}</td><td>{_t(c.part)}</td>'
        f"<td>{_t(c.ordered)}</td><td>{_t(c.found)}</td>"
        f'<td class="{matches[c.ok][1]}">{matches[c.ok][2]}</td></tr>'
        for c in sorted(result.conformance, key=lambda c: (c.node, c.part))
    )
    head = "<tr><th>node</th><th>part</th><th>ordered</th><th>found</th><th>matches</th></tr>"
    return f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"


def _iterations(result: AcceptanceResult) -> str:
    if not result.iterations:
        return '<p class="empty">No burn-in run.</p>'
    body = "".join(
        f"<tr><td>{'order stages' if i.iteration == 0 else f'soak {i.iteration}'}</td><td>{i.run_id}</td>"
        f"<td>{_t(i.status)}</td><td>{_t(_when(i.started_at))}</td><td>{_t(_when(i.finished_at))}</td>"
        f"<td>{len(i.nodes)}</td><td>{_t(', '.join(i.failed) or '-')}</td></tr>"
        for i in result.iterations
    )
    head = (
        "<tr><th>iteration</th><th>run</th><th>status</th><th>started</th><th>finished</th>"
        "<th>nodes</th><th>failed here</th></tr>"
    )
    return f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"


def render_html(result: AcceptanceResult) -> str:
    title = f"Acceptance of {result.delivery} on rack {result.rack}"
    again = f", re-testing the rejected nodes of #{result.redelivery_of}" if result.redelivery_of else ""
    meta = (
        f"acceptance #{result.acceptance_id}{again}; started {_when(result.started_at)}, decided "
        f"{_when(result.finished_at)}; stages {', '.join(result.stages)}; soak {_duration(result.soak_s)} "
        f"of {', '.join(result.soak_stages)}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{_t(title)}</title><style>{CSS}{_EXTRA_CSS}</style></head><body>"
        f'<h1>{_t(title)}</h1><p class="meta">{_t(result.description)}<br>{_t(meta)}</p>'
        f"{_cards(result)}"
        f"<h2>Nodes</h2>{_decisions(result)}"
        f"<h2>Failures by component and cause</h2>{_causes(result)}"
        f"<h2>Ordered against found</h2>{_conformance(result)}"
        f"<h2>Burn-in and soak iterations</h2>{_iterations(result)}"
        "</body></html>\n"
    )


# ---- files -----------------------------------------------------------------------------------


def write_outputs(result: AcceptanceResult, out_dir: Path) -> list[Path]:
    """acceptance.html/.csv/.json/.junit.xml and rma/<node>-<serial>-rma.tar.gz per rejected node;
    the bundle of a node accepted since moves to rma/superseded/ (``supersede``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (
        ("acceptance.html", render_html(result)),
        ("acceptance.csv", render_csv(result)),
        ("acceptance.json", render_json(result)),
        ("acceptance.junit.xml", render_junit(result)),
    ):
        path = out_dir / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    if result.rejected:
        rma = out_dir / "rma"
        rma.mkdir(exist_ok=True)
        written += [write_bundle(result, d, rma) for d in result.rejected]
    written += supersede(result, out_dir)
    return written


SUPERSEDED = "superseded"
LOG = "acceptance.log"


def supersede(result: AcceptanceResult, out_dir: Path) -> list[Path]:
    """The folder matches the decisions: the RMA bundle of a node whose latest decision is
    accepted (a re-delivery accepted it) moves to rma/superseded/, named for the acceptance that
    rejected it, with a line in the delivery's log (acceptance.log). Returns what moved there."""
    rma = out_dir / "rma"
    if not rma.is_dir():
        return []
    moved: list[Path] = []
    for row in result.whole():
        old = rma / f"{bundle_name_of(row.node, row.serial)}.tar.gz" if row.node else None
        if old is None or row.decision != "accepted" or not old.exists():
            continue
        rejected_by = [
            h.acceptance for h in result.history if h.node == row.node and h.decision == "rejected"
        ]
        tag = f"-acceptance{rejected_by[-1]}" if rejected_by else ""
        stem = old.name[: -len(".tar.gz")]
        target = rma / SUPERSEDED / f"{stem}{tag}.tar.gz"
        n = 1
        while target.exists():
            n += 1
            target = rma / SUPERSEDED / f"{stem}{tag}.{n}.tar.gz"
        target.parent.mkdir(exist_ok=True)
        old.rename(target)
        moved.append(target)
        because = f" (its rejection in acceptance #{rejected_by[-1]})" if rejected_by else ""
        _log(
            out_dir,
            f"{row.node} accepted in acceptance #{row.acceptance}: rma/{old.name}{because} moved to "
            f"rma/{SUPERSEDED}/{target.name}",
            result.finished_at,
        )
    return moved


def _log(out_dir: Path, line: str, when: datetime) -> None:
    with (out_dir / LOG).open("a", encoding="utf-8") as log:
        log.write(f"{_when(when)} {_CONTROL.sub('', line)}\n")
