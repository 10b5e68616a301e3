"""The rack report as JUnit XML, for CI systems and dashboards.

One <testsuite> per node, one <testcase> per stage (classname ``burnin.RACK.NODE``, name the
stage). Verdicts map as:

- PASS, WARN: a passing test case (warnings are listed in <system-out>);
- FAIL: <failure>, with the findings, actions and evidence lines;
- UNKNOWN: <error>. UNKNOWN means the check could not run or could not be judged; that is not a
  pass and never golden, so it must not hide as <skipped> (which CI shows as harmless);
- a stage with no result: <skipped>, saying whether the golden rules need it.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from bringup.fleet.reads import collector_paused
from burnin.golden.rules import first_problem
from burnin.report import NodeReport, RackReport, clip_evidence
from burnin.result import Verdict

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


def _x(value: Any) -> str:
    """Text XML 1.0 can carry (tool output may hold escape sequences and NULs)."""
    return _CONTROL.sub("", "" if value is None else str(value))


def _details(results: list[Any], evidence: Mapping[int, str] | None) -> str:
    """The results' lines, with each one's raw evidence (its tail) when ``evidence`` is given."""
    lines = []
    for r in results:
        lines.append(f"{r.check}: {r.verdict} (run {r.run_id}, {r.time.isoformat(timespec='seconds')})")
        reason = (r.metrics or {}).get("reason") if isinstance(r.metrics, dict) else None
        if reason:
            lines.append(f"  reason: {reason}")
        for f in r.findings or []:
            subject = f" [{f.get('subject')}]" if f.get("subject") else ""
            lines.append(f"  - {f.get('severity')}: {f.get('message')} -> {f.get('action')}{subject}")
            for ev in str(f.get("evidence") or "").splitlines()[:5]:
                lines.append(f"      | {ev}")
        if evidence is not None and evidence.get(r.id):
            text, cut = clip_evidence(evidence[r.id], 2000)
            lines.append("  raw evidence" + (" (tail)" if cut else "") + ":")
            lines += [f"    {line}" for line in text.splitlines()]
    return "\n".join(lines)


def _testcase(
    parent: ET.Element, rack: str, node: NodeReport, stage: str, evidence: Mapping[int, str]
) -> str:
    """Add the stage's test case; returns its outcome: pass, failure, error or skipped."""
    case = ET.SubElement(parent, "testcase", classname=f"burnin.{rack}.{node.name}", name=stage, time="0")
    st = node.stages.get(stage)
    if st is None or st.verdict is None:
        need = "required for golden" if stage in node.required else "not required by the golden rules"
        ET.SubElement(case, "skipped", message=_x(f"stage {stage} never ran ({need})"))
        return "skipped"
    results = list(st.results)
    bad = [r for r in results if r.verdict in (Verdict.FAIL, Verdict.UNKNOWN)]
    outcome = "pass"
    if st.verdict == Verdict.FAIL:
        el = ET.SubElement(case, "failure", message=_x(first_problem(results)), type="FAIL")
        el.text = _x(_details(bad, evidence))
        outcome = "failure"
    elif st.verdict == Verdict.UNKNOWN:
        el = ET.SubElement(case, "error", message=_x(first_problem(results)), type="UNKNOWN")
        el.text = _x(_details(bad, evidence))
        outcome = "error"
    out = ET.SubElement(case, "system-out")
    out.text = _x(_details(results, None))
    return outcome


def render_junit(report: RackReport) -> str:
    with collector_paused():  # a fleet's report holds 200,000 results the collector would walk
        return _render(report)


def _render(report: RackReport) -> str:
    stamp = report.made_at.isoformat(timespec="seconds")
    root = ET.Element("testsuites", name=f"burnin rack {report.rack}")
    totals = {"tests": 0, "failure": 0, "error": 0, "skipped": 0}
    for node in report.nodes:
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"{report.rack}.{node.name}",
            hostname=node.name,
            timestamp=stamp,
            time="0",
        )
        props = ET.SubElement(suite, "properties")
        for key, value in (
            ("state", node.state),
            ("golden", "true" if node.golden else "false"),
            ("serial", node.serial or ""),
            ("profile", node.profile),
            ("store", report.store),
            ("excluded_because", "; ".join(node.reasons)),
        ):
            ET.SubElement(props, "property", name=key, value=_x(value))
        counts = {"tests": 0, "failure": 0, "error": 0, "skipped": 0}
        for stage in report.stages:
            outcome = _testcase(suite, report.rack, node, stage, report.evidence)
            counts["tests"] += 1
            if outcome != "pass":
                counts[outcome] += 1
        suite.set("tests", str(counts["tests"]))
        suite.set("failures", str(counts["failure"]))
        suite.set("errors", str(counts["error"]))
        suite.set("skipped", str(counts["skipped"]))
        for k in totals:
            totals[k] += counts[k]
    root.set("tests", str(totals["tests"]))
    root.set("failures", str(totals["failure"]))
    root.set("errors", str(totals["error"]))
    root.set("skipped", str(totals["skipped"]))
    root.set("timestamp", stamp)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
