#!/usr/bin/env python3
"""Concurrent discovery of N emulated BMCs that answer every request after a fixed latency.

Usage: .venv/bin/python benchmarks/discover.py [--latency 0.2] [--counts 1,64,256]
       [--fixture dell-idrac9] [--concurrency N] [--repeat 1]

The fake BMCs (tests/doubles/redfish_server.py, vendor-shaped trees, basic auth, real HTTP) run in a
process of their own, one loopback port each, so the client's threads do not share a GIL
with them. Each BMC is discovered in full (service root, credentials check, system,
manager, chassis, NICs, firmware inventory, event log) by the same code `bringup discover`
runs. Prints the wall time for each N, the ratio to one BMC's time, and the ratio to N x that
time; the target is 256 BMCs in under 3x the time of one. ``--concurrency`` defaults to N
(every BMC at once); the CLI's default bound of 64 is timed too, for comparison.

First it prints the requests one discovery makes, counted by the fake BMC itself
(``FakeBmc.calls``), on the fixture as it is and with ``ExpandQuery`` taken out of its
service root: what ``$expand`` saves where a BMC advertises it. ``--requests-only`` stops
there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bringup.redfish.discovery import discover_endpoint  # noqa: E402
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions  # noqa: E402
from bringup.redfish.fanout import DEFAULT_CONCURRENCY, Task, fan_out  # noqa: E402

PASSWORD = "bench-pw"


def request_counts(fixture: str) -> dict[str, dict[str, int]]:
    """{"with $expand" | "without $expand": {GET path prefix: requests}} for one discovery of
    ``fixture``, counted by the fake BMC (in this process, no latency)."""
    from tests.doubles.redfish_server import FakeBmc, serving

    with_expand = FakeBmc.from_fixture(fixture, password=PASSWORD)
    without = FakeBmc.from_fixture(fixture, password=PASSWORD)
    features = without.resources["/redfish/v1"].get("ProtocolFeaturesSupported") or {}
    if not features.pop("ExpandQuery", None):
        raise SystemExit(f"fixture {fixture} does not advertise $expand: nothing to compare")
    out = {}
    with serving(with_expand, without):
        for label, bmc in (("with $expand", with_expand), ("without $expand", without)):
            discover_endpoint(BmcEndpoint("node000", bmc.url, "root", PASSWORD), TransportOptions())
            kinds: dict[str, int] = {}
            for call in bmc.calls():
                parts = call.path.split("/")
                kind = "/".join(parts[3:5]) if len(parts) > 4 else "/".join(parts[3:]) or "(root)"
                kinds[kind] = kinds.get(kind, 0) + 1
            out[label] = {"total": len(bmc.calls()), **dict(sorted(kinds.items()))}
    return out


def print_request_counts(fixture: str) -> None:
    counts = request_counts(fixture)
    a, b = counts["with $expand"], counts["without $expand"]
    print(f"requests per BMC, fixture {fixture}: {a['total']} with $expand, {b['total']} without")
    for kind in sorted(set(a) | set(b) - {"total"}):
        if kind != "total":
            print(f"  {kind:<45} {a.get(kind, 0):>4} {b.get(kind, 0):>4}")


def start_bmcs(fixture: str, count: int, latency: float) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.doubles.redfish_server", "--fixture", fixture, "--count", str(count)]
        + ["--latency", str(latency), "--password", PASSWORD],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        raise SystemExit("fake BMC server did not start")
    return proc, json.loads(line)["urls"]


def run(urls: list[str], concurrency: int) -> tuple[float, float, int, int]:
    """(wall seconds, client CPU seconds, failures, requests made) for one concurrent discovery."""
    options = TransportOptions(connect_timeout=10, read_timeout=30)
    made = []

    def one(url: str, i: int):
        d = discover_endpoint(BmcEndpoint(f"node{i:03d}", url, "root", PASSWORD), options)
        made.append(d.requests)
        return d

    tasks = [Task(f"node{i:03d}", lambda u=u, i=i: one(u, i)) for i, u in enumerate(urls)]
    t0, c0 = time.monotonic(), time.process_time()
    outcomes = fan_out(tasks, concurrency)
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    failed = [o for o in outcomes if not o.ok]
    for o in failed[:3]:
        print(f"  {o.name}: {o.error}", file=sys.stderr)
    return wall, cpu, len(failed), sum(made)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds every answer is delayed")
    parser.add_argument("--counts", default="1,64,256")
    parser.add_argument("--fixture", default="dell-idrac9")
    parser.add_argument("--concurrency", type=int, default=None, help="default: N (all at once)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per N; the median is reported")
    parser.add_argument("--requests-only", action="store_true", help="print the request counts and stop")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    print_request_counts(args.fixture)
    if args.requests_only:
        return

    proc, urls = start_bmcs(args.fixture, max(counts), args.latency)
    try:
        run(urls[:1], 1)  # warm-up: imports, first connections
        rows = []
        plans = [(n, args.concurrency or n) for n in counts]
        if args.concurrency is None and max(counts) > DEFAULT_CONCURRENCY:
            plans.append((max(counts), DEFAULT_CONCURRENCY))
        for n, conc in plans:
            walls, cpus = [], []
            for _ in range(args.repeat):
                wall, cpu, failed, requests = run(urls[:n], conc)
                if failed:
                    raise SystemExit(f"{failed} of {n} discoveries failed")
                walls.append(wall)
                cpus.append(cpu)
            rows.append((n, conc, statistics.median(walls), statistics.median(cpus), requests))
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)

    single = next(r[2] for r in rows if r[0] == 1)
    print(
        f"fixture {args.fixture}, {args.latency * 1000:.0f} ms per request, {rows[0][4]} requests per BMC, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end"
    )
    print(
        f"{'BMCs':>5} {'concurrency':>11} {'wall s':>8} {'client CPU s':>12} {'x 1 BMC':>8} {'/ (N x 1 BMC)':>14}"
    )
    for n, conc, wall, cpu, _ in rows:
        print(
            f"{n:>5} {conc:>11} {wall:>8.2f} {cpu:>12.2f} {wall / single:>8.2f} {wall / (n * single):>14.4f}"
        )
    biggest = max((r for r in rows if r[1] == r[0]), key=lambda r: r[0])
    verdict = "met" if biggest[2] < 3 * single else "NOT met"
    print(f"target: {biggest[0]} BMCs in under 3x one BMC's time: {verdict} ({biggest[2] / single:.2f}x)")


if __name__ == "__main__":
    main()
