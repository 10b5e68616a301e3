"""The HTML report at fleet size, in a real browser (headless Chromium, as docs/golden.md says):
racks of 6, 32 and 1,000 generated nodes render without a console message; the excluded nodes
are grouped by reason ("32 nodes: stages ib and nccl never ran"), the matrix groups identical rows
(1,000 nodes in a few rows), its filters (given in the link) pick the rows, and a screenshot of
each rack is taken and checked (its path is printed: `pytest -s` shows it)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from bringup.fleet.models import CheckResult
from burnin.golden.rules import GoldenRules, NodeFacts, judge
from burnin.report import build_report
from burnin.report.html import render_html
from burnin.stages import STAGE_ORDER
from tests.unit.burnin.report.test_report import chromium, console_messages, decode_png

pytestmark = pytest.mark.browser

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
RAILS = 8
PREFLIGHT = ("gpu_inventory", "gpu_ecc", "kernel_log", "ib_ports", "disk_usage")


def name(i: int) -> str:
    return f"gpu{i:05d}"


def gpu_fails(i: int) -> bool:
    return i % 97 == 50


def ib_fails(i: int) -> bool:
    return i % 131 == 42


def rows_of(i: int, stages: tuple[str, ...]) -> list[CheckResult]:
    """One node's latest results: the stages given, in order, stopping at the first failure
    (as `burnin run` does); faults on about 2% of the nodes, a disk warning on 1%."""
    at = NOW - timedelta(hours=2)

    def row(stage, check, verdict="PASS", metrics=None, findings=()):
        return CheckResult(
            stage=stage,
            check=check,
            verdict=verdict,
            time=at,
            run_id=1,
            metrics=metrics or {},
            findings=list(findings),
        )

    out = []
    for stage in stages:
        if stage == "preflight":
            disk = "WARN" if i % 89 == 3 else "PASS"
            out += [row("preflight", c, disk if c == "disk_usage" else "PASS") for c in PREFLIGHT]
        elif stage == "gpu":
            crit = {
                "message": f"GPU {i % 8} in HW slowdown under load",
                "severity": "critical",
                "action": "RESEAT",
            }
            out += [
                row("gpu", "dcgm_diag"),
                row("gpu", "gpu_stress", *(("FAIL", None, [crit]) if gpu_fails(i) else ())),
            ]
            if gpu_fails(i):
                return out
        elif stage == "pcie":
            out.append(row("pcie", "pcie_links"))
        elif stage == "ib":
            ports = {
                f"mlx5_{p}": {
                    "gbps": 240.0 if ib_fails(i) and p == i % RAILS else 392.0 - (i % 5) * 0.3,
                    "partner": name(i ^ 1),
                    "verdict": "FAIL" if ib_fails(i) and p == i % RAILS else "PASS",
                }
                for p in range(RAILS)
            }
            out.append(row("ib", "ib_bandwidth", "FAIL" if ib_fails(i) else "PASS", {"ports": ports}))
            if ib_fails(i):
                return out
        elif stage == "nccl":
            iterations = [
                {"index": k, "busbw_gbps": 370.0 + (i // 8) % 7, "verdict": "PASS"} for k in range(1, 11)
            ]
            out.append(row("nccl", "nccl_soak", metrics={"iterations": iterations, "floor_gbps": 360.0}))
    return out


def fleet_page(tmp_path: Path, nodes: int, ran_all: int) -> Path:
    """``nodes`` nodes; the first ``ran_all`` ran every stage, the rest never ran ib and nccl."""
    judged = []
    for i in range(nodes):
        stages = tuple(STAGE_ORDER) if i < ran_all else ("preflight", "gpu", "pcie")
        rows = rows_of(i, stages)
        node = SimpleNamespace(state="burnin", profile="h100-sxm-8x400g", serial=f"SN{i:05d}")
        fact = NodeFacts(name(i), node, None, {}, rows)
        judged.append((fact, GoldenRules(), judge(name(i), "burnin", rows, GoldenRules(), NOW)))
    page = tmp_path / f"fleet-{nodes}.html"
    page.write_text(render_html(build_report(f"r{nodes}", judged, NOW, "sqlite:///fleet.db")))
    return page


def rendered(page: Path, fragment: str = "") -> str:
    run = chromium("--window-size=1400,2000", "--dump-dom", page.as_uri() + fragment)
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_messages(run.stderr) == [], console_messages(run.stderr)
    return run.stdout


def screenshot(page: Path, out: Path) -> bytes:
    run = chromium("--window-size=1400,1000", "--hide-scrollbars", f"--screenshot={out}", page.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_messages(run.stderr) == [], console_messages(run.stderr)
    print(f"\nscreenshot: {out}")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    return data


def visible_rows(dom: str) -> list[tuple[str, int]]:
    """The matrix rows the page shows (the script hides the others): (first node, nodes in it)."""
    out = []
    for attrs, body in re.findall(r"<tr ([^>]*data-count[^>]*)>(.*?)</tr>", dom, re.S):
        if "hidden" in attrs:
            continue
        first = re.search(r'data-node="([^"]+)"', attrs) or re.search(
            r'class="names">(?:<a [^>]*>)?(gpu\d+)', body
        )
        out.append((first.group(1), int(re.search(r'data-count="(\d+)"', attrs).group(1))))
    return out


def excluded_summaries(dom: str) -> list[str]:
    return [
        re.sub(r"<[^>]+>", "", s)
        for s in re.findall(r'<details class="ex-group[^>]*><summary>(.*?)</summary>', dom)
    ]


def test_32_nodes_that_never_ran_ib_and_nccl_are_one_line_not_32(tmp_path):
    page = fleet_page(tmp_path, 32, ran_all=0)
    dom = rendered(page)
    assert excluded_summaries(dom) == ["32 nodes: stages ib and nccl never ran (state burnin)"]
    assert "Excluded nodes and why (32 in 1 group)" in dom
    # each node keeps its anchor (the matrix links to it) inside its group
    assert all(f'id="excluded-{name(i)}"' in dom for i in range(32))
    assert '<details class="ex-group r1" id="why-stages_ib_and_nccl_never_ran" data-nodes="32">' in dom
    # a link to one of them (the matrix's) opens the group in the browser
    opened = rendered(page, "#excluded-gpu00005")
    assert (
        '<details class="ex-group r1" id="why-stages_ib_and_nccl_never_ran" data-nodes="32" open="">'
        in opened
    )
    assert 'id="matrix-filters" hidden' not in dom and 'id="f-verdict"' in dom and 'id="f-stage"' in dom
    # the matrix: the node with a warning first, then one row for the other 31
    assert visible_rows(dom) == [("gpu00003", 1), ("gpu00000", 31)]
    screenshot(page, tmp_path / "report-32.png")


def test_the_demo_sized_rack(tmp_path):
    """6 nodes, as `make demo`: every node its own group of one, each line open."""
    page = fleet_page(tmp_path, 6, ran_all=6)
    dom = rendered(page)
    assert "none: every node is golden" in dom  # no fault lands in the first 6
    assert sum(n for _, n in visible_rows(dom)) == 6
    assert dom.count('class="nccl-series"') == 1  # one soak, one line: gpu00000 .. gpu00005
    data = screenshot(page, tmp_path / "report-6.png")
    width, height, _, _ = decode_png(data)
    assert (width, height) == (1400, 1000)


def test_1000_nodes_read_as_a_few_groups(tmp_path):
    nodes, ran_all = 1000, 900
    page = fleet_page(tmp_path, nodes, ran_all)
    html = page.read_text()
    dom = rendered(page)
    summaries = excluded_summaries(dom)
    never = [s for s in summaries if s.endswith("stages ib and nccl never ran (state burnin)")]
    healthy_late = sum(1 for i in range(ran_all, nodes) if not gpu_fails(i))
    assert never == [f"{healthy_late} nodes: stages ib and nccl never ran (state burnin)"]
    assert 1 < len(summaries) < 10, summaries  # a few groups, not 1,000 lines
    gpu = [s for s in summaries if "stage gpu FAIL: gpu_stress" in s]
    assert gpu == [
        f"{sum(map(gpu_fails, range(nodes)))} nodes: stage gpu FAIL: gpu_stress; stages pcie, ib and nccl never ran (state burnin)"
    ]
    # the matrix: 1,000 nodes in a few rows, failures first, the healthy ones one row
    rows = visible_rows(dom)
    assert sum(n for _, n in rows) == nodes and len(rows) < 12, rows
    assert max(n for _, n in rows) > 800
    assert re.search(r'<table class="matrix" id="matrix-table" data-nodes="1000" data-rows="\d+"', dom)
    heat = re.search(r'<svg id="ib-heatmap"[^>]*data-nodes="(\d+)" data-rails="(\d+)"', dom)
    assert heat and heat.groups() == (str(nodes), str(RAILS))
    assert len(html) < 3_000_000, len(html)
    screenshot(page, tmp_path / "report-1000.png")


def test_the_matrix_filters_pick_the_rows(tmp_path):
    nodes = 300
    page = fleet_page(tmp_path, nodes, ran_all=nodes)
    gpu_failed = [i for i in range(nodes) if gpu_fails(i)]
    ib_failed = [i for i in range(nodes) if ib_fails(i)]
    shown = visible_rows(rendered(page, "#verdict=FAIL&stage=gpu"))
    assert sum(n for _, n in shown) == len(gpu_failed) and shown[0][0] == name(gpu_failed[0])
    excluded = visible_rows(rendered(page, "#verdict=excluded"))
    assert sum(n for _, n in excluded) == len(gpu_failed) + len(ib_failed)
    dom = rendered(page, "#find=gpu00042")  # its IB failed as gpu00173's did: their row is one
    assert visible_rows(dom) == [(name(42), 2)] and ib_failed == [42, 173]
    # a healthy node is found inside its row of many, which opens
    dom = rendered(page, "#find=gpu00100")
    ((_, many),) = visible_rows(dom)
    assert many > 1 and re.search(r"<details open=\"\"><summary>\d+ nodes</summary>", dom)
    dom = rendered(page, "#verdict=PASS&stage=ib&size=50")
    passed_ib = nodes - len(gpu_failed) - len(ib_failed)
    assert f"rows 1-2 of 2 matching, {passed_ib} of {nodes} nodes" in dom  # the warned and the rest
    assert [n for _, n in visible_rows(dom)] == [4, passed_ib - 4]
    assert "no node matches" in rendered(page, "#find=nothing-like-this")
    # a malformed or unknown filter in the link changes nothing and breaks nothing
    assert sum(n for _, n in visible_rows(rendered(page, "#find=%E0%A4%A&size=7&verdict=maybe"))) == nodes
    assert set(STAGE_ORDER) <= set(re.findall(r'<option value="(\w+)">\1</option>', dom))
