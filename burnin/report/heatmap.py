"""The InfiniBand heat map: nodes against rails (HCA ports), one cell per port, coloured by the
bandwidth it measured against the profile's floor. 8,000 ports of 1,000 nodes stay one picture.

Nodes run left to right in rack order, in bands of ``BAND`` nodes; each band has a row per rail.
The fill says how far below the floor a port measured; the outline says what its check decided:
black, the port failed (or was UNKNOWN); dotted, it measured low only with a partner that was
blamed, and passed. Every cell's tooltip (an SVG <title>) has the figures.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from burnin.report import IbPortBar
from burnin.report.page import esc, fmt

BAND = 100  # nodes per band
# (lowest ratio to the floor, colour, legend): the first whose ratio the port reaches
SCALE = (
    (1.0, "#2e7d32", "at or above the floor"),
    (0.95, "#f9c74f", "up to 5% below"),
    (0.8, "#f3722c", "5-20% below"),
    (0.0, "#c62828", "more than 20% below"),
)
NO_FIGURE, NO_PORT = "#9e9e9e", "#e0e0e0"  # measured nothing (UNKNOWN, untested); no such port
LEFT, TITLE_H, LABEL_H, GAP = 84, 18, 16, 10
HEATMAP_CSS = """
svg#ib-heatmap .hm-fail { stroke: #111; stroke-width: 2; }
svg#ib-heatmap .hm-low { stroke: #111; stroke-width: 1.2; stroke-dasharray: 2 2; }
svg#ib-heatmap rect.hm-cell:hover { stroke: #1565c0; stroke-width: 2; }
"""


def _natural(text: str) -> list[object]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def colour(bar: IbPortBar) -> str:
    floor = bar.floor_gbps
    if floor is None or floor <= 0:
        return SCALE[-1][1] if bar.below_floor else SCALE[0][1]
    ratio = bar.gbps / floor
    return next(c for low, c, _ in SCALE if ratio >= low)


def _title(bar: IbPortBar) -> str:
    partner = f" with {bar.partner}" if bar.partner else ""
    floor = ""
    if bar.floor_gbps:
        floor = f", {100 * bar.gbps / bar.floor_gbps:.0f}% of the floor {fmt(bar.floor_gbps)} Gb/s"
    verdict = f"; {bar.verdict}" if bar.verdict else ""
    note = " (below the floor, but the other end was blamed)" if bar.low_not_blamed else ""
    return f"{bar.node} {bar.port}: {bar.gbps:.1f} Gb/s{floor}{partner}{verdict}{note}"


def heat_map(
    bars: Sequence[IbPortBar], missing: Sequence[tuple[str, str, str]] = (), nodes: Sequence[str] = ()
) -> str:
    """The SVG and its legend. ``missing``: (node, port, why) of ports with no figure (a port its
    check could not measure), drawn grey; ``nodes``: the columns, in order (the rack's nodes: one
    without an IB result shows as an empty column); nodes only in ``bars`` follow."""
    if not bars and not missing:
        return '<p class="empty" id="no-ib">no IB results (stage ib, check ib_bandwidth)</p>'
    cells: dict[tuple[str, str], IbPortBar | str] = {}
    columns: dict[str, None] = dict.fromkeys(nodes)
    for b in bars:
        columns.setdefault(b.node)
        cells[(b.node, b.port)] = b
    for node, port, why in missing:
        columns.setdefault(node)
        cells.setdefault((node, port), why)
    rails = sorted({port for _, port in cells}, key=_natural)
    names = list(columns)
    tested = {node for node, _ in cells}
    per_band = min(len(names), BAND)
    cw = max(8, min(64, 1000 // per_band))
    ch = 12 if len(names) > 40 else 20
    label_w = 6.5 * max(len(n) for n in names)
    step = max(1, math.ceil(label_w / cw))
    band_h = TITLE_H + ch * len(rails) + LABEL_H + GAP
    bands = math.ceil(len(names) / per_band)
    width, height = LEFT + per_band * cw + 24, bands * band_h
    out = [
        f'<svg id="ib-heatmap" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" role="img" aria-label="IB bandwidth: nodes against rails" '
        f'data-nodes="{len(names)}" data-rails="{len(rails)}">'
    ]
    for b in range(bands):
        band = names[b * per_band : (b + 1) * per_band]
        y0 = b * band_h
        out.append(
            f'<text x="{LEFT}" y="{y0 + 13}" font-size="11" fill="#555">'
            f"{esc(band[0])} … {esc(band[-1])}</text>"
        )
        for r, rail in enumerate(rails):
            y = y0 + TITLE_H + r * ch
            out.append(
                f'<text x="{LEFT - 6}" y="{y + ch - 3}" font-size="{min(ch - 2, 12)}" '
                f'text-anchor="end">{esc(rail)}</text>'
            )
            for c, node in enumerate(band):
                cell = cells.get((node, rail), "" if node in tested else None)
                out.append(_cell(cell, node, rail, LEFT + c * cw, y, cw, ch))
        label_y = y0 + TITLE_H + ch * len(rails) + 12
        for c in range(0, len(band), step):
            out.append(
                f'<text x="{LEFT + c * cw + 1}" y="{label_y}" font-size="10" fill="#555">{esc(band[c])}</text>'
            )
    out.append("</svg>")
    return "".join(out) + _legend(bars)


def _cell(cell: IbPortBar | str | None, node: str, rail: str, x: float, y: float, w: float, h: float) -> str:
    """``cell``: the port's figure; a string: judged without a figure (why); "": no such port on
    a node with IB results; None: the node has no IB result."""
    where = (
        f'x="{x}" y="{y}" width="{w - 1}" height="{h - 1}" data-node="{esc(node)}" data-port="{esc(rail)}"'
    )
    if not cell:
        what = "no such port" if cell == "" else "no ib_bandwidth result"
        return f'<rect class="hm-cell hm-none" {where} fill="{NO_PORT}"><title>{esc(node)} {esc(rail)}: {what}</title></rect>'
    if isinstance(cell, str):
        return (
            f'<rect class="hm-cell hm-fail" {where} fill="{NO_FIGURE}">'
            f"<title>{esc(node)} {esc(rail)}: not measured ({esc(cell)})</title></rect>"
        )
    kind = " hm-fail" if cell.below_floor else " hm-low" if cell.low_not_blamed else ""
    return (
        f'<rect class="hm-cell{kind}" {where} fill="{colour(cell)}"><title>{esc(_title(cell))}</title></rect>'
    )


def _legend(bars: Sequence[IbPortBar]) -> str:
    failed = sum(b.below_floor for b in bars)
    low = sum(b.low_not_blamed for b in bars)
    scale = "".join(f'<span class="swatch" style="background:{c}"></span>{text}' for _, c, text in SCALE)
    floors = sorted({b.floor_gbps for b in bars if b.floor_gbps})
    floor = f"floor {' / '.join(fmt(f) for f in floors)} Gb/s per direction; " if floors else ""
    return (
        f'<p class="legend-chart">{floor}ib_write_bw per port, the worst of its rounds:{scale}'
        f'<span class="swatch" style="background:{NO_FIGURE}"></span>not measured'
        f'<span class="swatch" style="background:{NO_PORT}"></span>no such port, or no IB result</p>'
        f'<p class="legend-chart" id="ib-summary">{len(bars)} port(s) measured; '
        f"<b>{failed}</b> failed their check (black outline); {low} measured low only with a partner "
        "that was blamed, and passed (dotted outline). Hover a cell for its figures; click it to find "
        "its node in the matrix.</p>"
    )
