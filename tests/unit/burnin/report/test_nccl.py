"""The NCCL soak chart: small figures keep their digits, the floor's label stays clear of the
lines, and the nodes of one soak group (which share one soak, so one line) are drawn once."""

from __future__ import annotations

import re

from burnin.report import NcclPoint, NcclSeries
from burnin.report.nccl import nccl_chart
from burnin.report.page import fmt

# The demo: four healthy nodes in one soak group over the lab's TCP links, floor 0.04 GB/s.
DEMO = [0.19, 0.155, 0.155, 0.198]


def demo_series(node: str) -> NcclSeries:
    return NcclSeries(node, tuple(NcclPoint(i, v, verdict="PASS") for i, v in enumerate(DEMO, 1)), 0.04)


def test_small_figures_keep_their_significant_digits():
    assert fmt(0.04) == "0.04" and fmt(0.155) == "0.155" and fmt(0.05) == "0.05"
    assert fmt(388.0) == "388" and fmt(2.5) == "2.5" and fmt(0.0) == "0" and fmt(12.25) == "12.2"


def test_the_demo_chart_labels_its_floor_and_ticks_as_they_are():
    svg = nccl_chart([demo_series(n) for n in ("node01", "node03", "node04", "node06")])
    assert "floor 0.04 GB/s" in svg and "0.0 GB/s" not in svg
    ticks = re.findall(r'text-anchor="end" fill="#555">([^<]+)</text>', svg)
    assert len(ticks) == len(set(ticks)) >= 3, ticks  # no two ticks read the same ("0.1", "0.1")


def test_one_soak_group_is_one_line_its_nodes_named_once():
    svg = nccl_chart([demo_series(n) for n in ("node01", "node03", "node04", "node06")])
    assert svg.count("<polyline") == 1 and svg.count('class="nccl-series"') == 1
    assert "node01, node03, node04, node06" in svg


def test_the_floor_label_sits_outside_the_plot_clear_of_the_lines():
    svg = nccl_chart([demo_series("node01")])
    plot_right = max(float(x) for x in re.findall(r'<line x1="[\d.]+" y1="[\d.]+" x2="([\d.]+)"', svg))
    label = re.search(r'<text x="([\d.]+)"[^>]*>floor', svg)
    assert label and float(label.group(1)) > plot_right, (label, plot_right)
    width = float(re.search(r'<svg [^>]*width="(\d+)"', svg).group(1))
    assert float(label.group(1)) + 60 <= width  # and inside the picture
