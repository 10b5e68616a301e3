#!/usr/bin/env python3
"""Reports and exports at fleet size: `burnin golden`, `burnin report` and every export over a
simulated fleet of N nodes, and the HTML report rendered in headless Chromium.

Usage: .venv/bin/python benchmarks/report.py [--nodes 1000,10000] [--html-nodes 1000]
                                             [--keep DIR] [--profile] [--db URL]
       (quick try: --nodes 200 --html-nodes 200)

For each N the fleet store (a fresh SQLite file; with ``--db postgresql://...`` that database,
for one size only, which must be empty: the benchmark refuses a database that holds nodes or
other tables, benchmarks/fleet_sim/bench_db.py; drop it after) is written in bulk through the store's models: N nodes in
burn-in, each with the latest results of all five stages (20 results; unique ibstat evidence
per node, an ib_bandwidth result with 8 ports x 2 rounds of metrics, a 20-iteration NCCL soak),
plus one older run of every check (the latest-result queries must skip it), and faults spread
over about 4% of the nodes (GPU, PCIe and IB port failures, UNKNOWN and WARN preflight checks,
nodes whose ib and nccl stages never ran). Then, in this process, through the library
functions the commands call (a fresh FleetStore for each, so no cache is warm from the last):

- the inventory loaded and validated (`load_valid_rack`);
- `burnin golden`: `select_and_apply` as a dry run, then for real (the first selection after a
  burn-in: a move per node), then again (steady state: no moves) for the hostfile and Slurm
  formats, and once more for json and csv (which read and parse every node's ibstat evidence);
- the exports rendered from that selection: hostfile, Slurm hostlist and exclude list, JSON, CSV;
- `burnin report`: `collect`, the reliability section `--html` adds, `render_html`,
  `render_junit`, and writing both files.

Each step prints its wall time and this process's CPU time (the CPU figure holds when other work
shares the machine; the wall figure does not).

For ``--html-nodes`` (one of the sizes) the HTML report is rendered in headless Chromium
(`--screenshot`), wall time of the whole browser run printed beside that of a blank page (the
browser's own start), the console captured (`--enable-logging=stderr`: any console message is an
error), and the screenshot written where the last line says. Target: under 3 s, no
console message, the excluded nodes grouped by reason and the heat map in the screenshot (the
groups' summaries and the matrix's row count are printed from the rendered DOM).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import insert, select  # noqa: E402

from benchmarks.fleet_sim.bench_db import refuse_unless_fresh, store_bytes  # noqa: E402
from benchmarks.fleet_sim.inventory import write_rack_inventory  # noqa: E402
from bringup.fleet import evidence  # noqa: E402
from bringup.fleet.models import CheckResult, Event, Node, Run, utcnow  # noqa: E402
from bringup.fleet.store import FleetStore  # noqa: E402

SAMPLES = REPO / "tests" / "fixtures" / "samples"
RACK = "bench"
PROFILE = "h100-sxm-8x400g"
RAILS = tuple(f"mlx5_{i}" for i in range(8))
FLOOR = 388.0  # 400 Gb/s x 0.97, the profile's floor
CRIT_GPU = {"severity": "critical", "message": "GPU 3 in HW slowdown under load", "action": "RESEAT"}
CRIT_PCIE = {"severity": "critical", "message": "NIC 0000:3b:00.0 at Gen4 x16", "action": "RESEAT"}
WARN_KLOG = {"severity": "warning", "message": "2 correctable PCIe AER errors", "action": "MONITOR"}
PREFLIGHT = (
    "gpu_inventory",
    "gpu_ecc",
    "gpu_memory",
    "gpu_versions",
    "nvlink",
    "fabric_manager",
    "kernel_log",
    "ib_ports",
    "ofed_version",
    "disk_usage",
    "clock_offset",
    "container_gpu",
    "bmc_event_log",
)
SINGLE = {"gpu": ("dcgm_diag", "gpu_burn", "gpu_clocks", "gpu_power"), "pcie": ("pcie_links",)}


# ---- the simulated fleet -------------------------------------------------------------------------


def write_inventory(inv: Path, nodes: int) -> None:
    hosts = {
        name(i): {
            "rack_unit": i,
            "ansible_host": f"10.{i // 60000}.{i // 250 % 240}.{i % 250 + 1}",
            "bmc_address": f"10.200.{i // 250 % 240}.{i % 250 + 1}",
        }
        for i in range(1, nodes + 1)
    }
    write_rack_inventory(inv, RACK, hosts, PROFILE)


def name(i: int) -> str:
    return f"gpu{i:05d}"


def ibstat_of(i: int) -> str:
    """The sample ibstat with this node's own GUIDs (each node's is a distinct blob, as in life)."""
    text = (SAMPLES / "ibstat_h100_ndr_all_active.txt").read_text()
    return re.sub(r"0x([0-9a-f]{10})[0-9a-f]{6}\b", lambda m: f"0x{m.group(1)}{i:06x}", text)


class Faults:
    """Which nodes carry which fault (seeded: the same fleet every time)."""

    def __init__(self, nodes: int, seed: int = 18) -> None:
        rnd = random.Random(seed)
        picks = rnd.sample(range(1, nodes + 1), max(8, nodes * 5 // 100))
        share = len(picks) // 8 or 1
        self.gpu = set(picks[0:share])
        self.pcie = set(picks[share : 2 * share])
        self.ib_port = {i: rnd.choice(RAILS) for i in picks[2 * share : 3 * share]}
        self.unknown = set(picks[3 * share : 4 * share])
        self.warn = set(picks[4 * share : 6 * share])
        self.no_multi = set(picks[6 * share : 7 * share])
        # the partner of a bad port measured low with it, and passed (blame by agreement)
        self.low_partner = {partner(i): rail for i, rail in self.ib_port.items()}


def partner(i: int) -> int:
    return i + 1 if i % 2 else i - 1


def ib_metrics(i: int, faults: Faults, rnd: random.Random) -> tuple[str, dict[str, Any], list[dict]]:
    ports: dict[str, Any] = {}
    findings: list[dict] = []
    worst = "PASS"
    for n, rail in enumerate(RAILS):
        gbps, verdict = round(rnd.gauss(392.5, 1.2), 1), "PASS"
        if faults.ib_port.get(i) == rail:
            gbps, verdict, worst = round(rnd.uniform(180, 300), 1), "FAIL", "FAIL"
            findings.append(
                {
                    "severity": "critical",
                    "message": f"{rail} port 1: {gbps} Gb/s per direction under load, floor 388",
                    "action": "REPLACE_CABLE",
                    "subject": f"{rail} port 1",
                }
            )
        elif faults.low_partner.get(i) == rail:
            gbps = round(rnd.uniform(180, 300), 1)
        ports[rail] = {
            "port": 1,
            "guid": f"0x{i:06x}{n:010x}",
            "lid": i * 8 + n,
            "state": "Active",
            "switch_port": f"leaf{i // 32:03d}/p{n + 1}",
            "verdict": verdict,
            "status": "bad" if verdict == "FAIL" else "good",
            "gbps": gbps,
            "partner": name(partner(i)),
            "rounds": [
                {
                    "round": r,
                    "retest": False,
                    "partner": f"{name(partner(i) if r == 0 else (i + 7) % 1000 + 1)}/{rail}",
                    "role": "server" if i % 2 else "client",
                    "mode": "bidirectional",
                    "gbps": gbps,
                    "gbps_total": round(gbps * 2, 1),
                    "passed": verdict == "PASS",
                    "problem": None,
                }
                for r in range(2)
            ],
            "counters": {"port_rcv_errors": 0, "symbol_error_counter": 0},
            "saturated_counters": [],
        }
    metrics = {"ports": ports, "floor_gbps": FLOOR, "bidir_floor_gbps": None, "rounds": 2, "retest": False}
    return worst, metrics, findings


def nccl_metrics(rnd: random.Random) -> dict[str, Any]:
    return {
        "iterations": [
            {
                "index": k,
                "busbw_gbps": round(rnd.gauss(372, 3), 1),
                "wrong": 0,
                "seconds": 30.0,
                "verdict": "PASS",
            }
            for k in range(1, 21)
        ]
    }


def result_row(
    rows: list[dict[str, Any]],
    common: dict[str, Any],
    shared: int,
    stage: str,
    check: str,
    verdict: str = "PASS",
    blob: int | None = None,
    **kw: Any,
) -> None:
    rows.append(
        {
            **common,
            "stage": stage,
            "check": check,
            "verdict": verdict,
            "metrics": kw.get("metrics", {}),
            "findings": kw.get("findings", []),
            "evidence_id": blob or shared,
        }
    )


def build_fleet(store: FleetStore, nodes: int) -> Faults:
    """N nodes in burn-in with an older and a latest run of every check (see the docstring)."""
    faults, rnd, now = Faults(nodes), random.Random(7), utcnow()
    with store.session() as s:
        s.execute(
            insert(Node),
            [
                {
                    "name": name(i),
                    "serial": f"SN{i:07d}",
                    "rack": RACK,
                    "profile": PROFILE,
                    "state": "burnin",
                    "rack_unit": i,
                    "ip": f"10.{i // 60000}.{i // 250 % 240}.{i % 250 + 1}",
                    "macs": [],
                    "hardware": {},
                    "ssh_host_keys": [],
                    "created_at": now - timedelta(days=3),
                    "updated_at": now,
                }
                for i in range(1, nodes + 1)
            ],
        )
        ids = dict(s.execute(select(Node.name, Node.id).where(Node.rack == RACK)).all())
    for age in (2, 0):  # an older run, then the latest
        at = now - timedelta(days=age, hours=1)
        with store.session() as s:
            run_id = s.execute(
                insert(Run).returning(Run.id),
                [
                    {
                        "kind": "burnin",
                        "rack": RACK,
                        "actor": "bench",
                        "status": "done",
                        "params": {},
                        "started_at": at,
                        "finished_at": at,
                    }
                ],
            ).scalar_one()
            cache: dict[str, int] = {}
            shared = evidence.put(s, f"run {run_id}: the tool's output\n" * 40, cache)
            rows: list[dict[str, Any]] = []
            for i in range(1, nodes + 1):
                node_id = ids[name(i)]

                add = partial(result_row, rows, {"run_id": run_id, "node_id": node_id, "time": at}, shared)
                latest = age == 0
                for check in PREFLIGHT:
                    if check == "ib_ports":
                        add("preflight", check, blob=evidence.put(s, ibstat_of(i), cache))
                    elif latest and check == "disk_usage" and i in faults.unknown:
                        blob = evidence.put(s, f"{name(i)}: ssh: timed out after 60 s\n", cache)
                        add("preflight", check, "UNKNOWN", blob, metrics={"reason": "timed out after 60 s"})
                    elif latest and check == "kernel_log" and i in faults.warn:
                        blob = evidence.put(
                            s, f"[  12.3] {name(i)} pcieport: AER: corrected error\n" * 2, cache
                        )
                        add("preflight", check, "WARN", blob, findings=[WARN_KLOG])
                    else:
                        add("preflight", check)
                for stage, checks in SINGLE.items():
                    for check in checks:
                        if latest and check == "gpu_burn" and i in faults.gpu:
                            blob = evidence.put(
                                s, f"{name(i)} GPU 3: HW slowdown active, clocks 345 MHz\n", cache
                            )
                            add(stage, check, "FAIL", blob, findings=[CRIT_GPU])
                        elif latest and check == "pcie_links" and i in faults.pcie:
                            blob = evidence.put(s, f"{name(i)} 0000:3b:00.0 LnkSta: Speed 16GT/s\n", cache)
                            add(stage, check, "FAIL", blob, findings=[CRIT_PCIE])
                        else:
                            add(stage, check)
                if i in faults.no_multi:  # in no run, or the older one would stand for it
                    continue
                verdict, metrics, findings = ib_metrics(i, faults, rnd)
                add("ib", "ib_bandwidth", verdict, metrics=metrics, findings=findings)
                add("nccl", "nccl_soak", metrics=nccl_metrics(rnd))
            for k in range(0, len(rows), 20000):
                s.execute(insert(CheckResult), rows[k : k + 20000])
            if latest:
                s.execute(
                    insert(Event),
                    [
                        {
                            "node_id": ids[name(i)],
                            "run_id": run_id,
                            "time": at,
                            "kind": "transition",
                            "from_state": "configured",
                            "to_state": "burnin",
                            "reason": f"burn-in run {run_id}",
                            "actor": "bench",
                            "details": {},
                        }
                        for i in range(1, nodes + 1)
                    ],
                )
    return faults


# ---- timing --------------------------------------------------------------------------------------


class Timer:
    def __init__(self, profile: bool) -> None:
        self.profile = profile
        self.lines: list[tuple[str, float]] = []

    def __call__(self, label: str, fn: Callable[[], Any]) -> Any:
        prof = cProfile.Profile() if self.profile else None
        t0, c0 = time.perf_counter(), time.process_time()
        if prof:
            prof.enable()
        value = fn()
        if prof:
            prof.disable()
        took, cpu = time.perf_counter() - t0, time.process_time() - c0
        self.lines.append((label, took))
        print(f"   {label:<46} {took:7.2f} s wall {cpu:7.2f} s CPU", flush=True)
        if prof and took > 0.5:
            pstats.Stats(prof).sort_stats("cumulative").print_stats(18)
        return value


def measure(nodes: int, work: Path, args: argparse.Namespace) -> Path:
    from bringup.fleet.select import load_valid_rack
    from bringup.local.files import atomic_write
    from burnin.golden import export
    from burnin.golden.select import select_and_apply
    from burnin.report import collect
    from burnin.report.html import render_html
    from burnin.report.junit import render_junit
    from burnin.report.reliability import fleet_section

    db, inv = work / "fleet.db", work / "inventories"
    url = args.db or f"sqlite:///{db}"
    t0 = time.perf_counter()
    write_inventory(inv, nodes)
    store = FleetStore(url)
    print(f"\n== {nodes:,} nodes ({work}; {store.engine.dialect.name})", flush=True)
    faults = build_fleet(store, nodes)
    size = store_bytes(store)
    store.close()
    print(
        f"   built in {time.perf_counter() - t0:.0f} s: store {size / 1e6:.0f} MB; faults on "
        f"{len(faults.gpu) + len(faults.pcie) + len(faults.ib_port) + len(faults.unknown)} node(s), "
        f"{len(faults.warn)} warned, {len(faults.no_multi)} without ib/nccl",
        flush=True,
    )
    timer = Timer(args.profile)
    rack, _ = timer("inventory loaded (load_valid_rack)", lambda: load_valid_rack(RACK, inv))

    def golden(dry_run: bool, hardware: bool) -> Any:
        store = FleetStore(url)
        try:
            return select_and_apply(store, rack, utcnow(), None, None, dry_run=dry_run, hardware=hardware)
        finally:
            store.close()

    timer("golden --dry-run (select_and_apply)", lambda: golden(True, False))
    first = timer("golden, first: a move per golden node", lambda: golden(False, False))
    timer("golden, steady state (hostfile, slurm)", lambda: golden(False, False))
    sel = timer("golden, steady state (json, csv: hardware)", lambda: golden(False, True))
    assert not sel.moves and len(first.moves) == len(first.golden), (len(first.moves), len(sel.moves))
    out = work / "out"
    out.mkdir(exist_ok=True)
    for fmt, excluded in (
        ("hostfile", False),
        ("slurm", False),
        ("slurm", True),
        ("json", False),
        ("csv", False),
    ):
        label = f"export {fmt}{' --excluded' if excluded else ''}"
        text = timer(label, lambda f=fmt, e=excluded: export.render(f, sel.meta, sel.golden, sel.excluded, e))
        atomic_write(out / f"golden.{fmt}{'.excluded' if excluded else ''}", text)

    def report() -> Any:
        store = FleetStore(url)
        try:
            return collect(store, rack, utcnow())
        finally:
            store.close()

    rep = timer("report: collect (store reads, judging)", report)

    def reliability() -> Any:  # `burnin report --html` adds the reliability section (its own reads)
        store = FleetStore(url)
        try:
            return fleet_section(store, RACK, inv, rep.made_at, loaded=rack)
        finally:
            store.close()

    fleet = timer("report: reliability section (fleet_section)", reliability)
    html = timer("report: render_html", lambda: render_html(rep, [fleet]))
    xml = timer("report: render_junit", lambda: render_junit(rep))
    page = out / "report.html"
    timer(
        "report: both files written", lambda: (atomic_write(page, html), atomic_write(out / "junit.xml", xml))
    )
    print(
        f"   golden {len(sel.golden):,} of {sel.total:,}; HTML {len(html) / 1e6:.1f} MB, JUnit {len(xml) / 1e6:.1f} MB",
        flush=True,
    )
    return page


# ---- the browser ---------------------------------------------------------------------------------


def chromium(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("chromium is not installed (scripts/install-system-deps.sh installs it)")
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"]
    t0 = time.perf_counter()
    run = subprocess.run([*base, *args], capture_output=True, text=True, timeout=300)
    return time.perf_counter() - t0, run


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def render_in_chromium(page: Path, nodes: int, shot: Path) -> None:
    print(f"\n== the HTML report of {nodes:,} nodes in headless Chromium", flush=True)
    blank = page.parent / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    size = "--window-size=1400,2400"
    chromium("--dump-dom", blank.as_uri())  # the first start reads the browser from disk
    # the median of three runs each: a browser start varies by a second on a shared machine
    base = statistics.median(
        chromium(size, f"--screenshot={page.parent / 'blank.png'}", blank.as_uri())[0] for _ in range(3)
    )
    runs = sorted(
        (chromium(size, "--hide-scrollbars", f"--screenshot={shot}", page.as_uri()) for _ in range(3)),
        key=lambda r: r[0],
    )
    took, run = runs[1]
    if run.returncode != 0 or not shot.exists():
        raise SystemExit(f"chromium failed ({run.returncode}): {run.stderr[-2000:]}")
    messages = console_messages(run.stderr)
    _, dom = chromium(size, "--dump-dom", page.as_uri())
    cells = dom.stdout.count('class="hm-cell')
    groups = [
        re.sub(r"<[^>]+>", "", g)
        for g in re.findall(r'<details class="ex-group[^>]*><summary>(.*?)</summary>', dom.stdout)
    ]
    matrix = re.search(r'id="matrix-table" data-nodes="(\d+)" data-rows="(\d+)"', dom.stdout)
    print(f"   blank page (the browser's own start):        {base:7.2f} s   (median of 3)")
    print(f"   the report, loaded and screenshot taken:     {took:7.2f} s   (median of 3; target < 3 s)")
    print(f"   the report's own part (the difference):      {took - base:7.2f} s")
    print(f"   console messages: {len(messages)}" + "".join(f"\n     {m}" for m in messages[:10]))
    print(f"   heat map cells in the rendered DOM: {cells:,} (nodes x rails = {nodes * len(RAILS):,})")
    print(
        f"   excluded nodes in {len(groups)} group(s) by reason:"
        + "".join(f"\n     {g}" for g in groups[:12])
    )
    if matrix:
        print(f"   the matrix: {int(matrix[1]):,} nodes in {int(matrix[2]):,} rows (identical rows grouped)")
    print(f"   screenshot: {shot}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000,10000", help="fleet sizes, comma-separated")
    parser.add_argument(
        "--html-nodes", type=int, default=1000, help="render this size's HTML in Chromium (0: none)"
    )
    parser.add_argument("--keep", type=Path, help="build under this directory and keep it")
    parser.add_argument("--profile", action="store_true", help="cProfile every step over 0.5 s")
    parser.add_argument(
        "--db", help="an empty database's SQLAlchemy URL (postgresql://...) instead of SQLite; one size"
    )
    args = parser.parse_args()
    sizes = [int(n) for n in args.nodes.split(",") if n.strip()]
    if args.db:
        if len(sizes) != 1:
            parser.error("--db takes one size (--nodes N): each size needs an empty database")
        refuse_unless_fresh(args.db)
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-report-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    try:
        pages = {}
        for n in sizes:
            work = root / f"n{n}"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            pages[n] = measure(n, work, args)
        if args.html_nodes and args.html_nodes in pages:
            shot = (args.keep or Path(tempfile.gettempdir())) / f"report-{args.html_nodes}.png"
            render_in_chromium(pages[args.html_nodes], args.html_nodes, shot)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
