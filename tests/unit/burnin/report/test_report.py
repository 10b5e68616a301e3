"""Reports: the HTML page (content, self-containment, and a real render in headless Chromium)
and the JUnit XML (one test case per node and stage)."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zlib
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bringup.fleet.models import CheckResult
from burnin.report import IbPortBar, RackReport, build_report, ib_bars, ib_unmeasured, nccl_series
from burnin.report.heatmap import SCALE, heat_map
from burnin.report.html import render_html
from burnin.report.junit import render_junit
from burnin.report.nccl import nccl_chart
from tests.conftest import unavailable
from tests.unit.burnin.golden.test_rules import CRIT, RACK, FleetRack

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
PASS_RGB, FAIL_RGB = (0x2E, 0x7D, 0x32), (0xC6, 0x28, 0x28)


@pytest.fixture
def rack(tmp_path) -> FleetRack:
    """gpu001 golden (IB and NCCL charts), gpu002 fails its GPU stage, gpu003 fails the NCCL soak
    (one bad iteration) and has an UNKNOWN IB stage, gpu004 never ran."""
    fleet = FleetRack(tmp_path)
    fleet.results("gpu001")
    fleet.results("gpu002", fail="gpu")
    fleet.results("gpu003", fail="nccl")
    run = fleet.store.start_run("burnin", RACK)
    fleet.store.add_result(
        "gpu003",
        "ib",
        "ib_bandwidth",
        "UNKNOWN",
        run_id=run.id,
        metrics={"reason": "ib_write_bw timed out", "mlx5_0": {"gbps": 201.5, "partner": "gpu001/mlx5_0"}},
        evidence="<script>alert(1)</script>\x1b[31m\x00 raw & <tool> output",
    )
    fleet.store.finish_run(run.id, "done")
    assert fleet.run("golden", "--rack", RACK).exit_code == 0
    return fleet


def write_report(fleet: FleetRack, tmp_path: Path) -> tuple[str, str]:
    html, junit = tmp_path / "out" / "report.html", tmp_path / "out" / "junit.xml"
    res = fleet.run("report", "--rack", RACK, "--html", str(html), "--junit", str(junit))
    assert res.exit_code == 0, res.output
    assert res.stdout == "" and "1 of 4 node(s) qualify as golden" in res.stderr
    return html.read_text(), junit.read_text()


# ---- HTML content ---------------------------------------------------------------------------------


class Page(HTMLParser):
    """What a test wants from a page: matrix cells, elements by id, SVG shapes, text."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.cells: dict[tuple[str, str], str] = {}  # (node, stage) -> the stage's verdict in its row
        self.checks: dict[tuple[str, str, str], tuple[str, str]] = {}  # (node, stage, check) -> verdict, text
        self.tags: dict[str, int] = {}
        self.external: list[str] = []
        self.text: list[str] = []
        self._row: str | None = None
        self._cell: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if a.get("id"):
            self.ids.add(a["id"])
        for key in ("src", "href"):
            if a.get(key) and not a[key].startswith("#"):
                self.external.append(a[key])
        if tag == "tr" and (a.get("data-node") or a.get("data-members")):
            members = [a["data-node"]] if a.get("data-node") else a["data-members"].split()
            self._row = a.get("data-node")  # a grouped row's cells hold no one node's checks
            for kv in (a.get("data-sv") or "").split():
                stage, _, verdict = kv.partition("=")
                for node in members:
                    self.cells[(node, stage)] = verdict
        if tag == "td" and self._row and a.get("data-check") is not None:
            self._cell = (a["data-stage"], a["data-check"], a.get("data-v", ""))

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None
        if tag == "tr":
            self._row = None

    def handle_data(self, data):
        self.text.append(data)
        if self._row and self._cell and data.strip():
            stage, check, verdict = self._cell
            self.checks[(self._row, stage, check)] = (verdict, data.strip())


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def test_html_content(rack, tmp_path):
    html, _ = write_report(rack, tmp_path)
    page = parse(html)
    assert page.cells[("gpu001", "nccl")] == "PASS"
    assert page.cells[("gpu002", "gpu")] == "FAIL"
    assert page.cells[("gpu003", "ib")] == "UNKNOWN" and page.cells[("gpu003", "nccl")] == "FAIL"
    assert not any(node == "gpu004" for node, _ in page.cells)  # never ran: no verdict cells
    assert page.checks[("gpu002", "gpu", "gpu_stress")] == ("FAIL", "F")  # one cell per check, lettered
    assert not any(node == "gpu004" for node, *_ in page.checks)
    assert {"ib-heatmap", "nccl-chart", "problems-gpu002", "excluded-gpu004"} <= page.ids
    text = " ".join(page.text)
    # gpu004 never ran anything: its group's one line says so, the stages named once
    assert (
        "stages preflight, gpu, pcie, ib and nccl never ran" in text
        and "GPU 3 in HW slowdown under load" in text
    )
    # the heat map: 4 nodes x 2 rails; gpu003's UNKNOWN result measured one port, gpu004 none
    assert html.count('class="hm-cell') == 8 and html.count('class="hm-cell hm-none"') == 3
    assert "gpu004 mlx5_0: no ib_bandwidth result" in html and "gpu003 mlx5_1: no such port" in html
    assert 'data-node="gpu003" data-port="mlx5_0"' in html
    # gpu001 and gpu002 soaked with the same figures: one line, named by both
    assert html.count('class="nccl-series"') == 2 and html.count('class="bad"') == 1
    assert 'data-node="gpu001, gpu002"' in html
    assert "floor 388 Gb/s" in html and "floor 360 GB/s" in html  # 400 x 0.97; the profile's NCCL floor


def test_html_is_self_contained_and_escaped(rack, tmp_path):
    html, _ = write_report(rack, tmp_path)
    page = parse(html)
    assert page.external == []  # no src or href leaves the page
    # one script, the matrix's filters, which the CSP admits by its hash (and nothing else)
    assert page.tags.get("script", 0) == 1 and "<script>alert" not in html
    (script,) = re.findall(r"<script>(.*?)</script>", html, re.S)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in html and "unsafe-inline'; img" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&amp; &lt;tool&gt;" in html
    assert "\x1b" not in html and "\x00" not in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"url\(|@import|https?://(?!www\.w3\.org/2000/svg)", html)


def test_charts_without_results():
    assert 'id="no-ib"' in heat_map([]) and "no IB results" in heat_map([])
    assert 'id="no-nccl"' in nccl_chart([]) and "no NCCL soak results" in nccl_chart([])
    empty = RackReport("r", NOW, "sqlite:///x", ("preflight",), [], [], [])
    html = render_html(empty)
    assert "no IB results" in html and "no NCCL soak results" in html and "0 / 0" in html
    assert ET.fromstring(render_junit(empty)).get("tests") == "0"


def test_heat_map_tells_a_low_port_that_was_not_blamed_from_one_that_failed():
    bars = [
        IbPortBar("n1", "mlx5_0", 390.0, "n2 mlx5_0", 388.0, "PASS"),
        IbPortBar("n1", "mlx5_3", 230.0, "n2 mlx5_3", 388.0, "FAIL"),  # the bad port
        IbPortBar("n2", "mlx5_3", 231.0, "n1 mlx5_3", 388.0, "PASS"),  # its partner, cleared
        IbPortBar("n2", "mlx5_0", 380.0, "n1 mlx5_0", 388.0, "PASS"),  # 2% low
    ]
    assert [(b.below_floor, b.low_not_blamed) for b in bars[:3]] == [
        (False, False),
        (True, False),
        (False, True),
    ]
    svg = heat_map(bars, [("n3", "mlx5_0", "UNKNOWN untested")])
    cells = re.findall(
        r'<rect class="hm-cell([^"]*)" [^>]*data-node="(\S+)" data-port="(\S+)" fill="([^"]+)"', svg
    )
    green, yellow, _, red = (c for _, c, _ in SCALE)
    assert sorted((node, port, kind.strip(), fill) for kind, node, port, fill in cells) == [
        ("n1", "mlx5_0", "", green),
        ("n1", "mlx5_3", "hm-fail", red),  # 59% of the floor, failed: red, outlined
        ("n2", "mlx5_0", "hm-low", yellow),  # 2% low and passed: its partner was blamed
        ("n2", "mlx5_3", "hm-low", red),  # as low, but passed: red, dotted
        ("n3", "mlx5_0", "hm-fail", "#9e9e9e"),  # judged without a figure: grey, outlined
        ("n3", "mlx5_3", "hm-none", "#e0e0e0"),  # no such port
    ]
    assert (
        "n2 mlx5_3: 231.0 Gb/s, 60% of the floor 388 Gb/s with n1 mlx5_3; PASS (below the floor, but" in svg
    )
    assert "n3 mlx5_0: not measured (UNKNOWN untested)" in svg
    assert 'data-nodes="3" data-rails="2"' in svg and "<b>1</b> failed their check" in svg


def test_heat_map_at_fleet_size_is_one_cell_per_port_in_bands():
    bars = [
        IbPortBar(f"gpu{n:05d}", f"mlx5_{p}", 392.0, "", 388.0, "PASS") for n in range(250) for p in range(8)
    ]
    svg = heat_map(bars)
    assert svg.count('class="hm-cell') == 2000 and svg.count("<title>") == 2000
    assert "gpu00000 … gpu00099" in svg and "gpu00200 … gpu00249" in svg  # three bands of up to 100
    rails = re.findall(r'text-anchor="end">(mlx5_\d+)</text>', svg)
    assert rails[:8] == [f"mlx5_{p}" for p in range(8)]  # natural order (mlx5_10 after mlx5_9)


def test_chart_data_tolerates_odd_metrics():
    def r(stage, check, metrics):
        return CheckResult(stage=stage, check=check, verdict="PASS", time=NOW, run_id=1, metrics=metrics)

    rows = [
        r(
            "ib",
            "ib_bandwidth",
            {"reason": "x", "rounds": 2, "mlx5_1": {"gbps": "fast"}, "mlx5_0": {"gbps": 390}},
        ),
        r(
            "nccl",
            "nccl_soak",
            {"iterations": [{"index": 1, "busbw_gbps": None}, "junk", {"busbw_gbps": 300}]},
        ),
    ]
    (bar,) = ib_bars("n", rows, 388.0)
    assert (bar.port, bar.gbps, bar.below_floor) == ("mlx5_0", 390.0, False)
    nested = [
        r(
            "ib",
            "ib_bandwidth",
            {
                "ports": {
                    "mlx5_2": {"gbps": 100.0, "verdict": "FAIL"},
                    "mlx5_5": {"gbps": None, "verdict": "UNKNOWN", "status": "untested"},
                }
            },
        )
    ]
    assert [b.port for b in ib_bars("n", nested, None)] == ["mlx5_2"] and ib_bars("n", nested, None)[
        0
    ].below_floor
    assert (
        ib_unmeasured("n", nested) == [("n", "mlx5_5", "UNKNOWN untested")] and ib_unmeasured("n", rows) == []
    )
    series = nccl_series("n", rows, 360.0)
    assert [(p.index, p.busbw_gbps, p.bad) for p in series.points] == [(1, None, True), (2, 300.0, False)]
    assert nccl_series("n", [], None) is None and ib_bars("n", [], None) == []
    assert "<polyline" in nccl_chart([series])  # one point with a value still draws


def test_the_nccl_chart_draws_the_floor_the_soak_was_judged_against():
    # The demo judges its loopback NCCL against `--set floors.nccl_busbw_multi_node_gbps=0.04`;
    # its chart drew the profile file's 360 GB/s, so every passing node looked far below its floor.
    soak = CheckResult(
        stage="nccl",
        check="nccl_soak",
        verdict="PASS",
        time=NOW,
        run_id=1,
        metrics={"floor_gbps": 0.04, "iterations": [{"index": 0, "busbw_gbps": 0.05, "verdict": "PASS"}]},
    )
    assert nccl_series("n", [soak], 360.0).floor_gbps == 0.04
    older = CheckResult(
        stage="nccl",
        check="nccl_soak",
        verdict="PASS",
        time=NOW,
        run_id=1,
        metrics={"iterations": [{"index": 0}]},
    )
    assert nccl_series("n", [older], 360.0).floor_gbps == 360.0  # a result that did not record one


def test_build_report_orders_problems_worst_first():
    def r(stage, check, verdict, findings=()):
        return CheckResult(
            stage=stage, check=check, verdict=verdict, time=NOW, run_id=1, findings=list(findings)
        )

    from burnin.golden.rules import GoldenRules, NodeFacts, judge

    rows = [
        r("preflight", "disk_usage", "WARN"),
        r("gpu", "gpu_stress", "FAIL", [CRIT]),
        r("ib", "x", "UNKNOWN"),
    ]
    fact = NodeFacts("n1", None, None, {}, rows)
    report = build_report(
        "r", [(fact, GoldenRules(), judge("n1", "burnin", rows, GoldenRules(), NOW))], NOW, "s"
    )
    assert [res.verdict for _, res in report.problems] == ["FAIL", "UNKNOWN", "WARN"]


# ---- JUnit ----------------------------------------------------------------------------------------


def test_junit(rack, tmp_path):
    _, xml = write_report(rack, tmp_path)
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "20",
        "2",
        "1",
        "5",
    )
    suites = {s.get("hostname"): s for s in root.findall("testsuite")}
    assert set(suites) == {"gpu001", "gpu002", "gpu003", "gpu004"}
    cases = {(c.get("classname"), c.get("name")): c for s in suites.values() for c in s.findall("testcase")}
    assert len(cases) == 20
    failure = cases[(f"burnin.{RACK}.gpu002", "gpu")].find("failure")
    assert failure.get("message") == "gpu_stress: GPU 3 in HW slowdown under load -> RESEAT"
    assert "RESEAT" in failure.text and "gpu_stress output" in failure.text
    error = cases[(f"burnin.{RACK}.gpu003", "ib")].find("error")
    assert error.get("type") == "UNKNOWN" and "ib_write_bw timed out" in error.get("message")
    assert "\x1b" not in error.text and "<script>" in error.text  # text, escaped by the XML writer
    skipped = cases[(f"burnin.{RACK}.gpu004", "ib")].find("skipped")
    assert skipped.get("message") == "stage ib never ran (required for golden)"
    ok = cases[(f"burnin.{RACK}.gpu001", "preflight")]
    assert ok.find("failure") is None and ok.find("error") is None and ok.find("skipped") is None
    props = {p.get("name"): p.get("value") for p in suites["gpu001"].find("properties")}
    assert props["golden"] == "true" and props["state"] == "golden"
    assert suites["gpu002"].get("failures") == "1"


def test_report_needs_an_output(rack):
    res = rack.run("report", "--rack", RACK)
    assert res.exit_code == 2 and "--html" in res.output


# ---- a real browser ----------------------------------------------------------------------------------


def decode_png(data: bytes) -> tuple[int, int, list[bytes], int]:
    """(width, height, RGB(A) rows, bytes per pixel) of an 8-bit, non-interlaced RGB/RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(b"".join(idat)), width * bpp
    prev, rows = bytearray(stride), []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev, strict=True))
        elif kind == 3:
            for i in range(stride):
                line[i] = (line[i] + (((line[i - bpp] if i >= bpp else 0) + prev[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a, b = (line[i - bpp] if i >= bpp else 0), prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows, bpp


def chromium(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        unavailable("Debian's chromium is not installed (make test installs it)")
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"]
    # nothing fetched from the network, and a profile of its own: tests run in parallel (xdist)
    quiet = [
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
    ]
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        return subprocess.run(
            [*base, *quiet, "--disable-sync", f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )


def console_messages(stderr: str) -> list[str]:
    """The page's console output (JavaScript errors, CSP violations, failed loads)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def test_renders_in_headless_chromium(rack, tmp_path):
    html, _ = write_report(rack, tmp_path)
    page = tmp_path / "out" / "report.html"
    shot = tmp_path / "shot.png"

    dom = chromium("--window-size=1400,2000", "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert console_messages(dom.stderr) == []
    rendered = parse(dom.stdout)
    assert rendered.cells[("gpu002", "gpu")] == "FAIL" and rendered.cells[("gpu001", "ib")] == "PASS"
    assert rendered.checks[("gpu002", "gpu", "gpu_stress")] == ("FAIL", "F")
    assert {"matrix-table", "ib-heatmap", "nccl-chart", "count-golden"} <= rendered.ids
    assert rendered.tags.get("rect", 0) >= 5 and rendered.tags.get("polyline", 0) == 2
    assert rendered.tags.get("details", 0) >= 3

    run = chromium("--window-size=1400,2000", "--hide-scrollbars", f"--screenshot={shot}", page.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_messages(run.stderr) == []
    data = shot.read_bytes()
    assert len(data) > 20_000
    width, height, rows, bpp = decode_png(data)
    assert (width, height) == (1400, 2000)
    pixels = [tuple(row[i : i + 3]) for row in rows[::4] for i in range(0, len(row), bpp * 4)]
    distinct = len(set(pixels))
    luma = [0.299 * r + 0.587 * g + 0.114 * b for r, g, b in pixels]
    mean = sum(luma) / len(luma)
    variance = sum((v - mean) ** 2 for v in luma) / len(luma)
    assert distinct > 50 and variance > 100, (distinct, variance)  # not a blank page

    def near(p, q):
        return all(abs(a - b) <= 12 for a, b in zip(p, q, strict=True))

    # the verdict colours are on screen: PASS cells and bars in green, FAIL cells in red
    assert sum(near(p, PASS_RGB) for p in pixels) > 200
    assert sum(near(p, FAIL_RGB) for p in pixels) > 20


def test_the_console_check_catches_a_broken_page(tmp_path):
    """The console capture works: a page that breaks the CSP (an inline script, a remote image)
    produces console messages that the render test would fail on."""
    page = tmp_path / "bad.html"
    html = render_html(RackReport("r", NOW, "s", ("preflight",), [], [], []))
    page.write_text(
        html.replace("<body>", '<body><img src="http://example.invalid/x.png"><script>1</script>')
    )
    run = chromium("--dump-dom", page.as_uri())
    messages = console_messages(run.stderr)
    assert len(messages) >= 2 and any("Content Security Policy" in m for m in messages), run.stderr[-2000:]


def test_old_results_still_render(tmp_path):
    """A report of results past the maximum age says so (and nothing qualifies)."""
    fleet = FleetRack(tmp_path)
    fleet.results("gpu001", at=datetime.now(timezone.utc) - timedelta(days=9))
    html, _ = write_report_any(fleet, tmp_path)
    assert "results older than 7 d" in html


def write_report_any(fleet: FleetRack, tmp_path: Path) -> tuple[str, str]:
    html, junit = tmp_path / "r.html", tmp_path / "r.xml"
    res = fleet.run("report", "--rack", RACK, "--html", str(html), "--junit", str(junit))
    assert res.exit_code == 0, res.output
    return html.read_text(), junit.read_text()
