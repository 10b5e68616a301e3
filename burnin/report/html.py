"""The rack report as one self-contained HTML page: inline CSS, inline SVG drawn here, one small
inline script (the matrix's filters and paging, admitted by its hash), nothing fetched.

Sections, failures first: the excluded nodes and why; each group stage's section, in stage
order, as the stage asks (burnin.stages.group: the InfiniBand heat map, nodes against rails
coloured by bandwidth against the floor; NCCL bus bandwidth over the soak); the node-by-stage
matrix (filters, paging); every failure's findings and evidence; then any
``EXTRA_SECTIONS``. The page shell (``burnin.report.page``) is shared with other reports.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bringup.fleet.reads import collector_paused
from burnin.report import RackReport
from burnin.report.excluded import EXCLUDED_CSS, excluded_section
from burnin.report.heatmap import HEATMAP_CSS, heat_map
from burnin.report.matrix import MATRIX_CSS, matrix_section
from burnin.report.nccl import nccl_chart
from burnin.report.page import CSS, Section, esc, render_page
from burnin.report.problems import links, problems_section
from burnin.stages.group import GROUP_STAGES, PORT_CHART, SOAK_CHART

__all__ = ["CSS", "EXTRA_SECTIONS", "render_html"]

# What draws each chart a group stage's report section asks for (burnin.stages.group), from the
# report's figures for that stage's results.
CHARTS: dict[str, Callable[[RackReport], str]] = {
    PORT_CHART: lambda report: heat_map(report.ib, report.ib_missing, [n.name for n in report.nodes]),
    SOAK_CHART: lambda report: nccl_chart(report.nccl),
}

# Sections other modules add to the page, after the built-in ones and in this order: each takes
# the report and returns its Section, or None to add nothing (the reliability section goes here).
EXTRA_SECTIONS: list[Callable[[RackReport], Section | None]] = []


def _cards(report: RackReport) -> str:
    golden, total = len(report.golden), len(report.nodes)
    counts = {v: sum(1 for _, r in report.problems if r.verdict == v) for v in ("FAIL", "UNKNOWN", "WARN")}
    return (
        f'<div class="cards"><div class="card" id="count-golden"><b>{golden} / {total}</b>qualify as golden</div>'
        f'<div class="card"><b>{total - golden}</b>excluded</div>'
        f'<div class="card"><b>{counts["FAIL"]}</b>failed checks</div>'
        f'<div class="card"><b>{counts["UNKNOWN"]}</b>unknown checks</div>'
        f'<div class="card"><b>{counts["WARN"]}</b>warnings</div></div>'
    )


def render_html(report: RackReport, extra: Sequence[Section] = ()) -> str:
    """The page; ``extra`` sections go last, after ``EXTRA_SECTIONS``."""
    with collector_paused():  # a fleet's report holds 200,000 results the collector would walk
        return _render(report, extra)


def _render(report: RackReport, extra: Sequence[Section]) -> str:
    made = report.made_at.isoformat(timespec="seconds")
    header = (
        f'<p class="meta">made {esc(made)} from store <code>{esc(report.store)}</code></p>{_cards(report)}'
    )
    sections = [
        excluded_section(report),
        *(Section(s.name, s.report.title, CHARTS[s.report.chart](report)) for s in GROUP_STAGES if s.report),
        matrix_section(report, links(report)),
        problems_section(report),
    ]
    sections += [s for build in EXTRA_SECTIONS if (s := build(report)) is not None]
    sections += list(extra)
    footer = (
        '<p class="meta">burnin report · latest result of every check per node · golden rules as '
        "<code>burnin golden</code> applies them</p>"
    )
    return render_page(
        f"Burn-in report: rack {report.rack}",
        header,
        sections,
        footer,
        extra_css=HEATMAP_CSS + MATRIX_CSS + EXCLUDED_CSS,
    )
