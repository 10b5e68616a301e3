"""NCCL bus bandwidth over the soak, as an SVG chart: one line per soak (the nodes of one soak
group share its figures, so they share one line, named once), bad iterations as red circles.
Over ``MAX_LINES`` lines a line each is noise, so the chart draws the spread of every node (min
to max per iteration, and the median) and lines only for the worst: those with a bad iteration
first, then the lowest bandwidth. The floor's label sits in the right margin, clear of the lines.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from burnin.report import NcclSeries
from burnin.report.page import esc, fmt, nice_step

MAX_LINES = 12
# Line colours (distinguishable, and none of them the failure red).
PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
BAD = "#c62828"


def _worst_first(series: Sequence[NcclSeries]) -> list[NcclSeries]:
    def key(s: NcclSeries) -> tuple[int, float, str]:
        values = [p.busbw_gbps for p in s.points if p.busbw_gbps is not None]
        return (-sum(p.bad for p in s.points), min(values) if values else -1.0, s.node)

    return sorted(series, key=key)


def one_line_per_soak(series: Sequence[NcclSeries]) -> list[NcclSeries]:
    """Series with the same figures (the nodes of one soak group) merged into one, named by all
    of its nodes: drawn one over another they read as one line with a legend of several."""
    merged: dict[tuple, list[NcclSeries]] = {}
    for s in series:
        key = (s.floor_gbps, tuple((p.index, p.busbw_gbps, p.wrong, p.verdict) for p in s.points))
        merged.setdefault(key, []).append(s)
    return [
        NcclSeries(names([s.node for s in same]), same[0].points, same[0].floor_gbps)
        for same in merged.values()
    ]


def names(nodes: Sequence[str], shown: int = 6) -> str:
    more = len(nodes) - shown
    return ", ".join(nodes[:shown]) + (f" and {more} more" if more > 0 else "")


def nccl_chart(series: Sequence[NcclSeries]) -> str:
    """Bus bandwidth per soak iteration; the spread of all nodes when there are many lines."""
    if not series:
        return '<p class="empty" id="no-nccl">no NCCL soak results (stage nccl, check nccl_soak)</p>'
    lines = one_line_per_soak(series)
    drawn = lines if len(lines) <= MAX_LINES else _worst_first(lines)[:MAX_LINES]
    left, right, top, bottom, plot_w, plot_h = 64, 104, 20, 48, 860, 300
    width, height = left + plot_w + right, top + plot_h + bottom
    indexes = [p.index for s in series for p in s.points]
    values = [p.busbw_gbps for s in series for p in s.points if p.busbw_gbps is not None]
    floors = [s.floor_gbps for s in series if s.floor_gbps is not None]
    lo_i, hi_i = min(indexes), max(indexes)
    top_value = (max(values + floors, default=0.0) or 1.0) * 1.1  # the lab's 0.2 GB/s fills the plot too
    step = nice_step(top_value)
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
            f"{fmt(tick)}</text>"
        )
        tick += step
    x_step = max(1, int(nice_step(hi_i - lo_i, 8))) if hi_i > lo_i else 1
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
    if len(drawn) < len(lines):
        out.append(_spread(series, x, y))
    if floors:
        fy = y(max(floors))
        out.append(
            f'<line class="floor" x1="{left}" y1="{fy:.1f}" x2="{left + plot_w}" y2="{fy:.1f}" '
            'stroke="#c62828" stroke-dasharray="6 4" stroke-width="1.5"/>'
            f'<text x="{left + plot_w + 6}" y="{fy + 4:.1f}" font-size="11" text-anchor="start" fill="#c62828">'
            f"floor {fmt(max(floors))} GB/s</text>"
        )
    for n, s in enumerate(drawn):
        out.append(_line(s, PALETTE[n % len(PALETTE)], n >= len(PALETTE), x, y))
    out.append(
        f'<text x="{left + plot_w / 2}" y="{height - 8}" font-size="12" text-anchor="middle">soak iteration</text>'
        f'<text x="14" y="{top + plot_h / 2}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2})">bus bandwidth (GB/s)</text></svg>'
    )
    legend = "".join(
        f'<span class="swatch" style="background:{PALETTE[n % len(PALETTE)]}"></span>{esc(s.node)}'
        for n, s in enumerate(drawn)
    )
    if len(drawn) < len(lines):
        legend = (
            f"{len(series)} nodes in {len(lines)} soaks: the grey band spans every node's lowest to highest "
            f"per iteration, the dashed grey line is the median; lines for the {len(drawn)} worst:" + legend
        )
    bad = (
        f'<span class="swatch" style="background:{BAD}"></span>bad iteration (wrong results, failed or none)'
    )
    return "".join(out) + f'<p class="legend-chart">{legend}{bad}</p>'


def _spread(series: Sequence[NcclSeries], x, y) -> str:  # noqa: ANN001 (the chart's scales)
    per: dict[int, list[float]] = {}
    for s in series:
        for p in s.points:
            if p.busbw_gbps is not None:
                per.setdefault(p.index, []).append(p.busbw_gbps)
    if not per:
        return ""
    idx = sorted(per)
    upper = " ".join(f"{x(i):.1f},{y(max(per[i])):.1f}" for i in idx)
    lower = " ".join(f"{x(i):.1f},{y(min(per[i])):.1f}" for i in reversed(idx))
    median = " ".join(f"{x(i):.1f},{y(statistics.median(per[i])):.1f}" for i in idx)
    return (
        f'<g class="nccl-spread" data-nodes="{len(series)}"><polygon points="{upper} {lower}" '
        'fill="#cfd8dc" fill-opacity="0.7" stroke="none"/>'
        f'<polyline points="{median}" fill="none" stroke="#607d8b" stroke-width="1.5" stroke-dasharray="5 3"/></g>'
    )


def _line(s: NcclSeries, colour: str, dashed: bool, x, y) -> str:  # noqa: ANN001
    pts = " ".join(f"{x(p.index):.1f},{y(p.busbw_gbps):.1f}" for p in s.points if p.busbw_gbps is not None)
    out = [f'<g class="nccl-series" data-node="{esc(s.node)}">']
    if pts:
        dash = ' stroke-dasharray="4 2"' if dashed else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
    for p in s.points:
        v = p.busbw_gbps if p.busbw_gbps is not None else 0.0
        what = f"{fmt(p.busbw_gbps)} GB/s" if p.busbw_gbps is not None else "no result"
        extra = (f", {p.wrong} wrong" if p.wrong else "") + (f", {p.verdict}" if p.verdict else "")
        fill, r = (BAD, 5) if p.bad else (colour, 3)
        cls = ' class="bad"' if p.bad else ""
        out.append(
            f'<circle cx="{x(p.index):.1f}" cy="{y(v):.1f}" r="{r}" fill="{fill}"{cls}>'
            f"<title>{esc(s.node)} iteration {p.index}: {what}{esc(extra)}</title></circle>"
        )
    out.append("</g>")
    return "".join(out)
