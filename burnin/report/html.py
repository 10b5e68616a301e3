"""The rack report as one self-contained HTML page: inline CSS, inline SVG charts drawn here, no
JavaScript and nothing fetched from the network (a Content-Security-Policy says so to the browser).

Sections: the node-by-stage matrix (verdict colours), the excluded nodes and why, IB bandwidth
per port (bars against the profile's floor), NCCL bus bandwidth over the soak (one line per
node, bad iterations marked), then every failure's findings and evidence in <details>.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from html import escape

from burnin.golden import first_problem
from burnin.report import IbPortBar, NcclSeries, RackReport, clip_evidence
from burnin.result import Verdict

VERDICT_CLASS = {Verdict.PASS: "pass", Verdict.WARN: "warn", Verdict.FAIL: "fail", Verdict.UNKNOWN: "unknown"}
IB_OK, IB_LOW, IB_FAIL = "#2e7d32", "#b26a00", "#c62828"  # IB bars: passed, low but cleared, failed
# Line colours for the NCCL chart (distinguishable, and none of them the failure red).
PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

CSS = """
:root { --pass:#2e7d32; --warn:#b26a00; --fail:#c62828; --unknown:#6a1b9a; --none:#9e9e9e; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 1320px; padding: 16px 24px 48px; color: #1b1b1b; background: #fafafa; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; }
.meta { color: #555; margin: 0 0 12px; } code, pre { font-family: ui-monospace, Menlo, Consolas, monospace; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; }
.card { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px; min-width: 120px; }
.card b { display: block; font-size: 22px; }
table { border-collapse: collapse; background: #fff; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
thead th { background: #f0f0f0; }
table.matrix td.v { text-align: center; font-weight: 600; color: #fff; min-width: 78px; }
.v-pass { background: var(--pass); } .v-warn { background: var(--warn); }
.v-fail { background: var(--fail); } .v-unknown { background: var(--unknown); }
td.v-none { background: #eee; color: #777 !important; font-weight: 400 !important; }
td.v-none.required { background: repeating-linear-gradient(45deg, #eee, #eee 4px, #ddd 4px, #ddd 8px); }
.golden-yes { color: var(--pass); font-weight: 600; } .golden-no { color: var(--fail); }
.legend span { display: inline-block; padding: 1px 8px; margin-right: 6px; border-radius: 3px; color: #fff; }
.empty { color: #666; font-style: italic; }
details { background: #fff; border: 1px solid #ddd; border-left: 6px solid var(--none); border-radius: 4px;
          margin: 6px 0; padding: 4px 10px; }
details.problem.fail { border-left-color: var(--fail); } details.problem.unknown { border-left-color: var(--unknown); }
details.problem.warn { border-left-color: var(--warn); }
summary { cursor: pointer; } summary .tag { font-weight: 600; }
pre { background: #f6f6f6; border: 1px solid #e3e3e3; padding: 8px; overflow-x: auto; max-height: 420px;
      white-space: pre-wrap; word-break: break-all; font-size: 12px; }
ul.reasons { margin: 4px 0; } .chart { background: #fff; border: 1px solid #ddd; border-radius: 6px; }
.swatch { display: inline-block; width: 14px; height: 4px; vertical-align: middle; margin: 0 4px 0 12px; }
"""


def _t(value: object) -> str:
    return escape(_CONTROL.sub("", str(value)), quote=True)


def _anchor(*parts: str) -> str:
    return "-".join(re.sub(r"[^A-Za-z0-9_.-]", "_", p) for p in parts)


def _nice_step(span: float, ticks: int = 5) -> float:
    if span <= 0:
        return 1.0
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _fmt(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.1f}"


# ---- the charts --------------------------------------------------------------------------------------


def ib_chart(bars: Sequence[IbPortBar]) -> str:
    """Horizontal bars, one per (node, port), with the floor as a dashed line."""
    if not bars:
        return '<p class="empty" id="no-ib">no IB results (stage ib, check ib_bandwidth)</p>'
    label_w, plot_w, row_h, top, bottom = 230, 820, 20, 30, 40
    height = top + row_h * len(bars) + bottom
    floors = [b.floor_gbps for b in bars if b.floor_gbps is not None]
    top_value = max([b.gbps for b in bars] + floors + [1.0]) * 1.08
    step = _nice_step(top_value)
    top_value = math.ceil(top_value / step) * step

    def x(v: float) -> float:
        return label_w + plot_w * max(v, 0.0) / top_value

    out = [
        f'<svg id="ib-chart" class="chart" xmlns="http://www.w3.org/2000/svg" width="{label_w + plot_w + 30}" '
        f'height="{height}" role="img" aria-label="IB bandwidth per port">'
    ]
    tick = 0.0
    while tick <= top_value + 1e-9:
        out.append(
            f'<line x1="{x(tick):.1f}" y1="{top - 6}" x2="{x(tick):.1f}" y2="{top + row_h * len(bars)}" '
            'stroke="#e5e5e5"/>'
            f'<text x="{x(tick):.1f}" y="{top - 10}" font-size="11" text-anchor="middle" fill="#555">'
            f"{_fmt(tick)}</text>"
        )
        tick += step
    previous = None
    for i, b in enumerate(bars):
        y = top + i * row_h
        if previous is not None and b.node != previous:
            out.append(f'<line x1="4" y1="{y}" x2="{label_w + plot_w}" y2="{y}" stroke="#bbb"/>')
        previous = b.node
        colour = IB_FAIL if b.below_floor else IB_LOW if b.low_not_blamed else IB_OK
        partner = f" with {b.partner}" if b.partner else ""
        note = " (below the floor, but the other end was blamed)" if b.low_not_blamed else ""
        out.append(
            f'<g class="ib-bar" data-node="{_t(b.node)}" data-port="{_t(b.port)}">'
            f"<title>{_t(b.node)} {_t(b.port)}{_t(partner)}: {b.gbps:.1f} Gb/s{note}</title>"
            f'<text x="{label_w - 8}" y="{y + row_h - 6}" font-size="12" text-anchor="end">'
            f"{_t(b.node)} {_t(b.port)}</text>"
            f'<rect x="{label_w}" y="{y + 3}" width="{max(x(b.gbps) - label_w, 1):.1f}" height="{row_h - 6}" '
            f'fill="{colour}"/>'
            f'<text x="{x(b.gbps) + 4:.1f}" y="{y + row_h - 6}" font-size="11" fill="#333">{b.gbps:.1f}'
            f"{_t(partner)}</text></g>"
        )
    if floors:
        fx = x(min(floors))
        out.append(
            f'<line class="floor" x1="{fx:.1f}" y1="{top - 4}" x2="{fx:.1f}" y2="{top + row_h * len(bars)}" '
            'stroke="#c62828" stroke-dasharray="6 4" stroke-width="1.5"/>'
            f'<text x="{fx:.1f}" y="{height - 22}" font-size="11" text-anchor="middle" fill="#c62828">'
            f"floor {_fmt(min(floors))} Gb/s</text>"
        )
    out.append(
        f'<text x="{label_w + plot_w / 2}" y="{height - 6}" font-size="12" text-anchor="middle">'
        "ib_write_bw per port (Gb/s)</text></svg>"
    )
    legend = "".join(
        f'<span class="swatch" style="background:{colour}"></span>{text}'
        for colour, text in (
            (IB_OK, "passed"),
            (IB_LOW, "measured low with a partner that was blamed; this port passed"),
            (IB_FAIL, "failed"),
        )
    )
    return "".join(out) + f'<p class="legend-chart">{legend}</p>'


def nccl_chart(series: Sequence[NcclSeries]) -> str:
    """Bus bandwidth per soak iteration, one line per node; bad iterations as red circles."""
    if not series:
        return '<p class="empty" id="no-nccl">no NCCL soak results (stage nccl, check nccl_soak)</p>'
    left, right, top, bottom, plot_w, plot_h = 64, 24, 20, 48, 880, 300
    width, height = left + plot_w + right, top + plot_h + bottom
    indexes = [p.index for s in series for p in s.points]
    values = [p.busbw_gbps for s in series for p in s.points if p.busbw_gbps is not None]
    floors = [s.floor_gbps for s in series if s.floor_gbps is not None]
    lo_i, hi_i = min(indexes), max(indexes)
    top_value = max(values + floors + [1.0]) * 1.1
    step = _nice_step(top_value)
    top_value = math.ceil(top_value / step) * step

    def x(i: float) -> float:
        return left + (plot_w * (i - lo_i) / (hi_i - lo_i) if hi_i > lo_i else plot_w / 2)

    def y(v: float) -> float:
        return top + plot_h * (1 - max(v, 0.0) / top_value)

    out = [
        f'<svg id="nccl-chart" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" role="img" aria-label="NCCL bus bandwidth over the soak">'
    ]
    tick = 0.0
    while tick <= top_value + 1e-9:
        out.append(
            f'<line x1="{left}" y1="{y(tick):.1f}" x2="{left + plot_w}" y2="{y(tick):.1f}" stroke="#e5e5e5"/>'
            f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" font-size="11" text-anchor="end" fill="#555">'
            f"{_fmt(tick)}</text>"
        )
        tick += step
    x_step = max(1, int(_nice_step(hi_i - lo_i, 8))) if hi_i > lo_i else 1
    for i in range(lo_i, hi_i + 1):
        if (i - lo_i) % x_step == 0 or i == hi_i:
            out.append(
                f'<text x="{x(i):.1f}" y="{top + plot_h + 16}" font-size="11" text-anchor="middle" '
                f'fill="#555">{i}</text>'
            )
    out.append(
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#888"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#888"/>'
    )
    if floors:
        fy = y(max(floors))
        out.append(
            f'<line class="floor" x1="{left}" y1="{fy:.1f}" x2="{left + plot_w}" y2="{fy:.1f}" '
            'stroke="#c62828" stroke-dasharray="6 4" stroke-width="1.5"/>'
            f'<text x="{left + plot_w - 4}" y="{fy + 14:.1f}" font-size="11" text-anchor="end" fill="#c62828">'
            f"floor {_fmt(max(floors))} GB/s</text>"
        )
    for n, s in enumerate(series):
        colour = PALETTE[n % len(PALETTE)]
        dash = "" if n < len(PALETTE) else ' stroke-dasharray="4 2"'
        pts = " ".join(
            f"{x(p.index):.1f},{y(p.busbw_gbps):.1f}" for p in s.points if p.busbw_gbps is not None
        )
        out.append(f'<g class="nccl-series" data-node="{_t(s.node)}">')
        if pts:
            out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for p in s.points:
            v = p.busbw_gbps if p.busbw_gbps is not None else 0.0
            what = f"{p.busbw_gbps:.1f} GB/s" if p.busbw_gbps is not None else "no result"
            extra = (f", {p.wrong} wrong" if p.wrong else "") + (f", {p.verdict}" if p.verdict else "")
            fill, r = ("#c62828", 5) if p.bad else (colour, 3)
            cls = ' class="bad"' if p.bad else ""
            out.append(
                f'<circle cx="{x(p.index):.1f}" cy="{y(v):.1f}" r="{r}" fill="{fill}"{cls}>'
                f"<title>{_t(s.node)} iteration {p.index}: {what}{_t(extra)}</title></circle>"
            )
        out.append("</g>")
    out.append(
        f'<text x="{left + plot_w / 2}" y="{height - 8}" font-size="12" text-anchor="middle">soak iteration</text>'
        f'<text x="14" y="{top + plot_h / 2}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2})">bus bandwidth (GB/s)</text></svg>'
    )
    legend = "".join(
        f'<span class="swatch" style="background:{PALETTE[n % len(PALETTE)]}"></span>{_t(s.node)}'
        for n, s in enumerate(series)
    )
    bad = (
        '<span class="swatch" style="background:#c62828"></span>bad iteration (wrong results, failed or none)'
    )
    return "".join(out) + f'<p class="legend-chart">{legend}{bad}</p>'


# ---- the page ------------------------------------------------------------------------------------------


def _matrix(report: RackReport) -> str:
    head = "".join(f"<th>{_t(s)}</th>" for s in report.stages)
    rows = []
    for n in report.nodes:
        cells = []
        for stage in report.stages:
            st = n.stages.get(stage)
            required = stage in n.required
            if st is None or st.verdict is None:
                title = "required for golden, never ran" if required else "not run"
                cls = "v v-none required" if required else "v v-none"
                cells.append(f'<td class="{cls}" title="{title}">{"not run" if required else "–"}</td>')
                continue
            when = st.time.strftime("%Y-%m-%d %H:%M") if st.time else "?"
            cells.append(
                f'<td class="v v-{VERDICT_CLASS.get(st.verdict, "unknown")}" data-stage="{_t(stage)}" '
                f'title="run {st.run_id}, {when}">{_t(st.verdict)}</td>'
            )
        if n.golden:
            # qualifies but not recorded yet: `burnin golden` makes the move
            word = "golden" if n.state == "golden" else "qualifies"
            golden = f'<td class="golden-yes">{word}</td>'
        else:
            golden = f'<td class="golden-no" title="{_t("; ".join(n.reasons))}">no</td>'

        rows.append(
            f'<tr id="{_anchor("node", n.name)}" data-node="{_t(n.name)}"><th>'
            f'<a href="#{_anchor("problems", n.name)}">{_t(n.name)}</a></th>'
            f"<td>{_t(n.state)}</td>{golden}{''.join(cells)}</tr>"
        )
    legend = (
        "".join(f'<span class="v-{c}">{v}</span>' for v, c in VERDICT_CLASS.items())
        + '<span style="background:#9e9e9e">not run</span>'
    )
    return (
        '<table class="matrix" id="matrix-table"><thead><tr><th>node</th><th>state</th><th>golden</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f'<p class="legend">{legend} Hatched: a stage the golden rules need that never ran.</p>'
    )


def _excluded(report: RackReport) -> str:
    excluded = [n for n in report.nodes if not n.golden]
    if not excluded:
        return '<p class="empty">none: every node is golden</p>'
    items = "".join(
        f'<li id="{_anchor("excluded", n.name)}"><b>{_t(n.name)}</b> ({_t(n.state)})'
        f'<ul class="reasons">{"".join(f"<li>{_t(r)}</li>" for r in n.reasons)}</ul></li>'
        for n in excluded
    )
    return f'<ul class="excluded">{items}</ul>'


def _findings_table(findings: Sequence[dict]) -> str:
    if not findings:
        return ""
    rows = "".join(
        f"<tr><td>{_t(f.get('severity', ''))}</td><td>{_t(f.get('subject', ''))}</td>"
        f"<td>{_t(f.get('message', ''))}</td><td><b>{_t(f.get('action', ''))}</b></td>"
        + (f"<td><pre>{_t(f.get('evidence'))}</pre></td></tr>" if f.get("evidence") else "<td></td></tr>")
        for f in findings
    )
    return (
        '<table class="findings"><thead><tr><th>severity</th><th>subject</th><th>finding</th>'
        f"<th>action</th><th>evidence line(s)</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _problems(report: RackReport) -> str:
    problems = report.problems
    if not problems:
        return '<p class="empty">no failures, unknowns or warnings</p>'
    out, anchored = [], set()
    for node, r in problems:
        anchor = ""
        if node.name not in anchored:
            anchored.add(node.name)
            anchor = f' id="{_anchor("problems", node.name)}"'
        summary = first_problem([r]).removeprefix(f"{r.check}: ") or r.verdict
        evidence, cut = clip_evidence(report.evidence.get(r.id))
        kept = f"`burnin results {node.name} --evidence` shows what the store kept"
        note = f" (last {len(evidence)} characters; {kept})" if cut else ""
        when = r.time.strftime("%Y-%m-%d %H:%M:%S") if r.time else "?"
        reason = (r.metrics or {}).get("reason", "") if isinstance(r.metrics, dict) else ""
        out.append(
            f'<details class="problem {VERDICT_CLASS.get(r.verdict, "unknown")}"{anchor} data-node="{_t(node.name)}"'
            f"{' open' if r.verdict == 'FAIL' else ''}>"
            f'<summary><span class="tag">{_t(r.verdict)}</span> {_t(node.name)} · {_t(r.stage)}/{_t(r.check)} · '
            f"{_t(summary)}</summary>"
            + (f"<p>{_t(reason)}</p>" if reason else "")
            + _findings_table(r.findings or [])
            + f'<details class="evidence"><summary>raw evidence: run {_t(r.run_id)}, {when}{_t(note)}</summary>'
            f"<pre>{_t(evidence) or '(empty)'}</pre></details></details>"
        )
    return "".join(out)


def render_html(report: RackReport) -> str:
    golden = len(report.golden)
    total = len(report.nodes)
    counts = {v: sum(1 for _, r in report.problems if r.verdict == v) for v in ("FAIL", "UNKNOWN", "WARN")}
    cards = (
        f'<div class="card" id="count-golden"><b>{golden} / {total}</b>qualify as golden</div>'
        f'<div class="card"><b>{total - golden}</b>excluded</div>'
        f'<div class="card"><b>{counts["FAIL"]}</b>failed checks</div>'
        f'<div class="card"><b>{counts["UNKNOWN"]}</b>unknown checks</div>'
        f'<div class="card"><b>{counts["WARN"]}</b>warnings</div>'
    )
    made = report.made_at.isoformat(timespec="seconds")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Burn-in report: rack {_t(report.rack)}</title>
<style>{CSS}</style></head>
<body>
<header><h1>Burn-in report: rack {_t(report.rack)}</h1>
<p class="meta">made {_t(made)} from store <code>{_t(report.store)}</code></p>
<div class="cards">{cards}</div></header>
<section id="matrix"><h2>Nodes by stage</h2>{_matrix(report)}</section>
<section id="excluded"><h2>Excluded nodes and why</h2>{_excluded(report)}</section>
<section id="ib"><h2>InfiniBand bandwidth per port</h2>{ib_chart(report.ib)}</section>
<section id="nccl"><h2>NCCL bus bandwidth over the soak</h2>{nccl_chart(report.nccl)}</section>
<section id="problems"><h2>Failures, unknowns and warnings</h2>{_problems(report)}</section>
<footer><p class="meta">burnin report · latest result of every check per node · golden rules as
<code>burnin golden</code> applies them</p></footer>
</body></html>
"""
