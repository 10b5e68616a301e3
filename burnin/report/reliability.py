"""The fleet reliability section of the HTML report: the figures of `burnin reliability`
with two inline SVG charts, drawn here (no script, nothing fetched):

- failures over time by component: stacked bars, one per day (a week over windows longer than
  62 days), one colour per component kind;
- MTTF against job size on log axes (GPUs 8 to 131,072 against hours): 1 / (N x r_f) is a
  straight line there, at the rate the plan uses (measured, or given with --failure-rate).

Then the numbers behind them: rate per component, the MTTF table, E[ETTR], the top causes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from bringup.fleet.reads import collector_paused
from bringup.fleet.store import FleetStore
from bringup.inventory.rack import Rack
from burnin.history.figures import Reliability
from burnin.history.fleet import fleet_reliability
from burnin.history.reliability import ETTR_FORMULA, FORMULA_SOURCE
from burnin.report.page import Section, esc

WINDOW = timedelta(days=28)  # as `burnin reliability`'s default

SECTION_ID = "reliability"
TITLE = "Fleet reliability"
# Component colours (none of them the failure red the rest of the report uses for verdicts).
COLOURS = {
    "gpu": "#1f77b4",
    "hca_port": "#2ca02c",
    "pcie": "#9467bd",
    "dimm": "#ff7f0e",
    "other": "#7f7f7f",
}
SPARE = ("#17becf", "#8c564b", "#e377c2", "#bcbd22")


def colour(kind: str, kinds: Sequence[str]) -> str:
    if kind in COLOURS:
        return COLOURS[kind]
    others = [k for k in kinds if k not in COLOURS]
    return SPARE[others.index(kind) % len(SPARE)] if kind in others else "#444"


def failures_chart(rel: Reliability) -> str:
    """Stacked bars of component failures per bucket; a sentence when there were none."""
    if not rel.timeline:
        return '<p class="empty" id="no-failures">no component failures in the window</p>'
    kinds = list(rel.timeline)
    n = max(len(v) for v in rel.timeline.values())
    totals = [sum(rel.timeline[k][i] for k in kinds if i < len(rel.timeline[k])) for i in range(n)]
    top = max(1, max(totals))
    left, right, head, foot, plot_w, plot_h = 48, 16, 28, 40, 880, 220
    bar = plot_w / n
    width, height = left + plot_w + right, head + plot_h + foot
    unit = "day" if rel.bucket_days == 1 else f"{rel.bucket_days} days"
    out = [
        f'<svg id="failures-chart" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" role="img" aria-label="component failures per {esc(unit)}">'
    ]
    step = max(1, math.ceil(top / 5))
    for v in range(0, top + 1, step):
        y = head + plot_h * (1 - v / top)
        out.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#e5e5e5"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end" fill="#555">{v}</text>'
        )
    for i in range(n):
        base = 0
        for kind in kinds:
            count = rel.timeline[kind][i] if i < len(rel.timeline[kind]) else 0
            if not count:
                continue
            y0 = head + plot_h * (1 - (base + count) / top)
            h = plot_h * count / top
            day = (rel.start + timedelta(days=i * rel.bucket_days)).date()
            out.append(
                f'<rect class="bar" data-kind="{esc(kind)}" x="{left + i * bar + 1:.1f}" y="{y0:.1f}" '
                f'width="{max(bar - 2, 1):.1f}" height="{h:.1f}" fill="{colour(kind, kinds)}">'
                f"<title>{esc(day)}: {count} {esc(kind)}</title></rect>"
            )
            base += count
    for i in sorted({0, n // 2, n - 1}):
        day = (rel.start + timedelta(days=i * rel.bucket_days)).date()
        out.append(
            f'<text x="{left + (i + 0.5) * bar:.1f}" y="{head + plot_h + 16}" font-size="11" '
            f'text-anchor="middle" fill="#555">{esc(day)}</text>'
        )
    x = left
    for kind in kinds:
        out.append(
            f'<rect x="{x}" y="6" width="12" height="10" fill="{colour(kind, kinds)}"/>'
            f'<text x="{x + 16}" y="15" font-size="11" fill="#333">{esc(kind)} ({sum(rel.timeline[kind])})</text>'
        )
        x += 40 + 7 * len(kind)
    out.append(
        f'<line x1="{left}" y1="{head + plot_h}" x2="{left + plot_w}" y2="{head + plot_h}" stroke="#888"/>'
        f'<text x="{left + plot_w / 2}" y="{height - 4}" font-size="11" text-anchor="middle" fill="#555">'
        f"failures per {esc(unit)}</text></svg>"
    )
    return "".join(out)


def mttf_chart(rel: Reliability) -> str:
    """MTTF (hours) against job size (GPUs), both on log axes."""
    points = [(g, h) for g, h in sorted(rel.mttf_hours.items()) if 0 < h < math.inf]
    if not points:
        why = "no failures to measure a rate from" if rel.rate == 0 else "no failure rate (no node-days)"
        return f'<p class="empty" id="no-mttf">no MTTF chart: {esc(why)}</p>'
    left, right, head, foot, plot_w, plot_h = 64, 24, 16, 44, 880, 300
    width, height = left + plot_w + right, head + plot_h + foot
    gx = [math.log2(g) for g, _ in points]
    hy = [math.log10(h) for _, h in points]
    x0, x1 = min(gx), max(gx)
    y0, y1 = math.floor(min(hy)), math.ceil(max(hy))
    y1 = y1 if y1 > y0 else y0 + 1

    def x(g: float) -> float:
        return left + plot_w * ((math.log2(g) - x0) / (x1 - x0) if x1 > x0 else 0.5)

    def y(h: float) -> float:
        return head + plot_h * (1 - (math.log10(h) - y0) / (y1 - y0))

    out = [
        f'<svg id="mttf-chart" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" role="img" aria-label="MTTF against job size, log axes">'
    ]
    for e in range(y0, y1 + 1):
        h = 10.0**e
        out.append(
            f'<line x1="{left}" y1="{y(h):.1f}" x2="{left + plot_w}" y2="{y(h):.1f}" stroke="#e5e5e5"/>'
            f'<text x="{left - 6}" y="{y(h) + 4:.1f}" font-size="11" text-anchor="end" fill="#555">'
            f"{_hours(h)}</text>"
        )
    for g, _ in points[::2] if len(points) > 8 else points:
        out.append(
            f'<line x1="{x(g):.1f}" y1="{head}" x2="{x(g):.1f}" y2="{head + plot_h}" stroke="#f0f0f0"/>'
            f'<text x="{x(g):.1f}" y="{head + plot_h + 16}" font-size="11" text-anchor="middle" '
            f'fill="#555">{_gpus(g)}</text>'
        )
    line = " ".join(f"{x(g):.1f},{y(h):.1f}" for g, h in points)
    out.append(f'<polyline class="mttf" points="{line}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    for g, h in points:
        out.append(
            f'<circle cx="{x(g):.1f}" cy="{y(h):.1f}" r="3" fill="#1f77b4">'
            f"<title>{g:,} GPUs: MTTF {h:.3g} h</title></circle>"
        )
    out.append(
        f'<text x="{left + plot_w / 2}" y="{height - 6}" font-size="11" text-anchor="middle" fill="#555">'
        f"job size (GPUs, log scale); MTTF in hours (log scale) at r_f = {rel.rate:g} per 1,000 node-days, "
        f"{rel.gpus_per_node} GPUs per node</text></svg>"
    )
    return "".join(out)


def _hours(h: float) -> str:
    return f"{h:g} h" if h >= 1 else f"{h * 60:g} min"


def _gpus(g: int) -> str:
    return f"{g // 1024}k" if g >= 1024 and g % 1024 == 0 else str(g)


def reliability_html(rel: Reliability) -> str:
    """The section's body: the figures, the two charts, the tables."""
    rate = "n/a" if rel.rate is None else f"{rel.rate:.3g}"
    measured = "n/a" if rel.measured_rate is None else f"{rel.measured_rate:.3g}"
    parts = [
        f'<p class="meta" id="reliability-figures">{rel.nodes} nodes, {rel.node_days:,.1f} node-days, '
        f"{rel.failures} failures{_slurm_only(rel)} from {esc(rel.start.date())} to {esc(rel.end.date())}: "
        f"<b>{measured}</b> per 1,000 node-days measured; figures use <b>{rate}</b> ({esc(rel.rate_source)}). "
        f"GPUs per node: {rel.gpus_per_node} ({esc(rel.gpus_per_node_source)}).</p>",
        "<h3>Failures over time by component</h3>",
        failures_chart(rel),
        "<h3>MTTF against job size</h3>",
        mttf_chart(rel),
    ]
    if rel.by_component:
        rows = "".join(
            f"<tr><td>{esc(k)}</td><td>{int(v['count'])}</td><td>{_rate(v['per_1000_node_days'])}</td></tr>"
            for k, v in rel.by_component.items()
        )
        parts.append(
            '<table id="by-component"><thead><tr><th>component</th><th>failures</th>'
            f"<th>per 1,000 node-days</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    if rel.mttf_hours:
        cells = "".join(
            f"<tr><td>{g:,}</td><td>{'∞' if h == math.inf else f'{h:.3g}'}</td></tr>"
            for g, h in rel.mttf_hours.items()
        )
        parts.append(
            '<details id="mttf-table"><summary>MTTF by job size</summary><table><thead><tr><th>GPUs</th>'
            f"<th>MTTF (hours)</th></tr></thead><tbody>{cells}</tbody></table></details>"
        )
    p = rel.plan
    if p.gpus and rel.ettr is not None:
        parts.append(
            f'<p id="ettr">E[ETTR] of a {p.gpus:,}-GPU job, checkpoint every {esc(p.checkpoint)}, restart '
            f"{esc(p.restart)}: <b>{rel.ettr:.3f}</b> ({esc(ETTR_FORMULA)}; {esc(FORMULA_SOURCE)})</p>"
        )
    if rel.top_causes:
        items = "".join(f"<li>{esc(c)}: {n}</li>" for c, n in rel.top_causes)
        parts.append(f'<h3>Top failure causes</h3><ol id="top-causes">{items}</ol>')
    return "".join(parts)


def _slurm_only(rel: Reliability) -> str:
    """How many of the failures only Slurm accounting saw (NODE_FAIL jobs), when it was read."""
    if not rel.slurm_failures:
        return ""
    return f" ({len(rel.slurm_failures)} of them only in Slurm accounting: jobs ended NODE_FAIL)"


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def reliability_section(rel: Reliability) -> Section:
    days = (rel.end - rel.start).total_seconds() / 86400
    return Section(SECTION_ID, f"{TITLE} (last {days:g} days)", reliability_html(rel))


def fleet_section(
    store: FleetStore, rack: str, inventory_dir: Path | None, now: datetime, *, loaded: Rack | None = None
) -> Section:
    """The rack's reliability section for the burn-in report (`burnin report --html`, and the
    nightly's page); from the store alone (Slurm accounting is `burnin reliability`'s).
    ``loaded``: the rack the report already loaded, not read again. The garbage collector waits
    here: beside the report's 200,000 results of 10,000 nodes, its passes over the history
    read here took 2-3 s of CPU; 0.6 s without them."""
    with collector_paused():
        rel = fleet_reliability(store, rack, WINDOW, inventory_dir, now=now, loaded=loaded)
    return reliability_section(rel)
