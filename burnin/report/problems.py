"""The report's failure section: each FAIL, UNKNOWN
and WARN result with its findings and raw evidence (worst first; the evidence of the first
``EVIDENCE_SHOWN``, the rest point at `burnin results`)."""

from __future__ import annotations

from collections.abc import Sequence

from burnin.golden.rules import first_problem
from burnin.report import RackReport, clip_evidence
from burnin.report.matrix import VERDICT_CLASS
from burnin.report.page import Section, anchor, esc


def links(report: RackReport) -> dict[str, str]:
    """Node -> the anchor its name links to: its first problem, else why it is excluded."""
    out = {n.name: anchor("excluded", n.name) for n in report.nodes if not n.golden}
    for node, _ in reversed(report.problems):
        out[node.name] = anchor("problems", node.name)
    return out


def _findings_table(findings: Sequence[dict]) -> str:
    if not findings:
        return ""
    rows = "".join(
        f"<tr><td>{esc(f.get('severity', ''))}</td><td>{esc(f.get('subject', ''))}</td>"
        f"<td>{esc(f.get('message', ''))}</td><td><b>{esc(f.get('action', ''))}</b></td>"
        + (f"<td><pre>{esc(f.get('evidence'))}</pre></td></tr>" if f.get("evidence") else "<td></td></tr>")
        for f in findings
    )
    return (
        '<table class="findings"><thead><tr><th>severity</th><th>subject</th><th>finding</th>'
        f"<th>action</th><th>evidence line(s)</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def problems_section(report: RackReport) -> Section:
    problems = report.problems
    title = "Failures, unknowns and warnings"
    if not problems:
        return Section("problems", title, '<p class="empty">no failures, unknowns or warnings</p>')
    out, anchored = [], set()
    for node, r in problems:
        anchor_attr = ""
        if node.name not in anchored:
            anchored.add(node.name)
            anchor_attr = f' id="{anchor("problems", node.name)}"'
        summary = first_problem([r]).removeprefix(f"{r.check}: ") or r.verdict
        when = r.time.strftime("%Y-%m-%d %H:%M:%S") if r.time else "?"
        reason = (r.metrics or {}).get("reason", "") if isinstance(r.metrics, dict) else ""
        kept = f"`burnin results {node.name} --evidence` shows what the store kept"
        if r.id in report.evidence:
            evidence, cut = clip_evidence(report.evidence.get(r.id))
            note = f" (last {len(evidence)} characters; {kept})" if cut else ""
            raw = (
                f'<details class="evidence"><summary>raw evidence: run {esc(r.run_id)}, {when}{esc(note)}'
                f"</summary><pre>{esc(evidence) or '(empty)'}</pre></details>"
            )
        else:
            raw = (
                f'<p class="meta">run {esc(r.run_id)}, {when}: raw evidence not in this page; {esc(kept)}</p>'
            )
        out.append(
            f'<details class="problem {VERDICT_CLASS.get(r.verdict, "unknown")}"{anchor_attr} '
            f'data-node="{esc(node.name)}"{" open" if r.verdict == "FAIL" else ""}>'
            f'<summary><span class="tag">{esc(r.verdict)}</span> {esc(node.name)} · {esc(r.stage)}/'
            f"{esc(r.check)} · {esc(summary)}</summary>"
            + (f"<p>{esc(reason)}</p>" if reason else "")
            + _findings_table(r.findings or [])
            + raw
            + "</details>"
        )
    return Section("problems", title, "".join(out))
