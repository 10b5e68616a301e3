"""The HTML report at fleet size, in a real browser: a few hundred generated nodes render
in headless Chromium without a console message, the IB heat map has a cell per node and rail, the
matrix shows one page of rows, failures first, and its filters (given in the link) pick the rows."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from bringup.fleet.models import CheckResult
from burnin.golden.rules import GoldenRules, NodeFacts, judge
from burnin.report import build_report
from burnin.report.html import render_html
from burnin.stages import STAGE_ORDER
from tests.unit.burnin.report.test_report import chromium, console_messages

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
NODES, RAILS = 300, 8
GPU_FAIL = {7, 150, 299}  # gpu stage FAIL
IB_FAIL = {42: 3, 201: 0}  # node -> the rail that failed
CRIT = {"message": "GPU 3 in HW slowdown under load", "severity": "critical", "action": "RESEAT"}


def name(i: int) -> str:
    return f"gpu{i:05d}"


def rows_of(i: int) -> list[CheckResult]:
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

    ports = {}
    for p in range(RAILS):
        bad = IB_FAIL.get(i) == p
        ports[f"mlx5_{p}"] = {
            "gbps": 240.0 if bad else 392.0 - (i % 5) * 0.3,
            "partner": name(i ^ 1),
            "verdict": "FAIL" if bad else "PASS",
        }
    iterations = [
        {"index": k, "busbw_gbps": 370.0 + (i % 7), "wrong": 0, "verdict": "PASS"} for k in range(10)
    ]
    return [
        row("preflight", "gpu_inventory"),
        row("gpu", "gpu_stress", *(("FAIL", None, [CRIT]) if i in GPU_FAIL else ())),
        row("pcie", "pcie_links"),
        row("ib", "ib_bandwidth", "FAIL" if i in IB_FAIL else "PASS", {"ports": ports}),
        row("nccl", "nccl_soak", metrics={"iterations": iterations}),
    ]


def fleet_page(tmp_path):
    judged = []
    for i in range(NODES):
        rows = rows_of(i)
        fact = NodeFacts(name(i), None, None, {}, rows)
        judged.append((fact, GoldenRules(), judge(name(i), "burnin", rows, GoldenRules(), NOW)))
    page = tmp_path / "fleet.html"
    page.write_text(render_html(build_report("fleet", judged, NOW, "sqlite:///fleet.db")))
    return page


def rendered(page, fragment: str = "") -> str:
    run = chromium("--window-size=1400,2000", "--dump-dom", page.as_uri() + fragment)
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_messages(run.stderr) == [], console_messages(run.stderr)
    return run.stdout


def visible_rows(dom: str) -> list[str]:
    """The matrix rows the page shows (the script hides the others)."""
    rows = re.findall(r"<tr ([^>]*data-golden[^>]*)>", dom)
    return [re.search(r'data-node="([^"]+)"', r).group(1) for r in rows if "hidden" not in r]


def test_a_fleet_report_renders_with_its_heat_map_and_one_page_of_rows(tmp_path):
    page = fleet_page(tmp_path)
    dom = rendered(page)
    heat = re.search(r'<svg id="ib-heatmap"[^>]*data-nodes="(\d+)" data-rails="(\d+)"', dom)
    assert heat and heat.groups() == (str(NODES), str(RAILS))
    assert dom.count('class="hm-cell') == NODES * RAILS
    assert dom.count('class="hm-cell hm-fail"') == len(IB_FAIL)
    shown = visible_rows(dom)
    assert len(re.findall(r"<tr [^>]*data-golden", dom)) == NODES and len(shown) == 100
    failing = {name(i) for i in GPU_FAIL | set(IB_FAIL)}
    assert set(shown[: len(failing)]) == failing  # failures first
    assert "rows 1-100 of 300 matching (300 nodes)" in dom
    assert 'id="matrix-filters" hidden' not in dom  # the script ran and showed the filters
    # 300 NCCL series: the spread of all, lines for the 12 worst
    assert dom.count('class="nccl-spread"') == 1 and dom.count('class="nccl-series"') == 12


def test_the_matrix_filters_pick_the_rows(tmp_path):
    page = fleet_page(tmp_path)
    assert visible_rows(rendered(page, "#verdict=FAIL&stage=gpu")) == sorted(name(i) for i in GPU_FAIL)
    assert sorted(visible_rows(rendered(page, "#verdict=excluded"))) == sorted(
        name(i) for i in GPU_FAIL | set(IB_FAIL)
    )
    assert visible_rows(rendered(page, "#find=gpu00042")) == [name(42)]
    dom = rendered(page, "#verdict=PASS&stage=ib&size=250")
    assert len(visible_rows(dom)) == 250 and f"of {NODES - len(IB_FAIL)} matching" in dom
    assert "no node matches" in rendered(page, "#find=nothing-like-this")
    # a malformed or unknown filter in the link changes nothing and breaks nothing
    assert len(visible_rows(rendered(page, "#find=%E0%A4%A&size=7&verdict=maybe"))) == 100
    assert set(STAGE_ORDER) <= set(re.findall(r'<option value="(\w+)">\1</option>', dom))
