#!/usr/bin/env python3
"""Discovery of 1, 256 and 1,024 simulated BMCs at the CLI's defaults: wall time against one BMC's.

Usage: .venv/bin/python benchmarks/discover.py [--latency 0.2] [--counts 1,256,1024]
       [--fixture dell-idrac9] [--concurrency N] [--repeat 1] [--tls] [--basic-auth]
       [--requests-only] [--profile N]

The BMCs are benchmarks/fleet_sim/redfish.py's (vendor-shaped fake trees, real HTTP, one
loopback port each, every answer after ``--latency``), in a process of their own so the
client's threads do not share a GIL with them. Each BMC is discovered in full by the code
`bringup discover` runs, at the concurrency the CLI would use (``fanout.default_concurrency``:
every BMC up to 1,024) unless ``--concurrency`` says otherwise.

Prints, in order:
- the requests one discovery makes, counted by the fake BMC: as the code runs now (one session,
  ``$expand``), with basic auth on every request, and on the same tree without ``ExpandQuery``;
- for each N: wall time, client CPU seconds and ms per BMC, requests per BMC (counted by the
  BMCs), sessions left open, the ratio to one BMC's time; the targets: 256 BMCs in
  under 1.5x one BMC's time, 1,024 in under 3x;
- the figures recorded before Redfish sessions (the same script at commit aa7ae84, the same machine)
  beside them: they are recorded, not measured by this run.

``--profile N`` discovers one BMC N times in a row, with no latency, and prints the client's
CPU per discovery and where it goes (cProfile on process time, so waiting does not count).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.fleet_sim.redfish import RedfishFleet  # noqa: E402
from bringup.redfish.discovery import discover_endpoint  # noqa: E402
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions  # noqa: E402
from bringup.redfish.fanout import Task, default_concurrency, fan_out  # noqa: E402

PASSWORD = "bench-pw"
# Before Redfish sessions (commit aa7ae84: requests + urllib3 under the DMTF library, basic auth on
# every request, --concurrency 64 by default), this script on the 2-core development machine,
# load average 13.9, 200 ms per request, dell-idrac9: N -> (concurrency, wall s, x 1 BMC,
# client CPU ms per BMC). 17 requests per BMC with $expand, 41 without.
BEFORE_REQUESTS = 17
BEFORE = {
    1: (1, 3.44, 1.00, 20.0),
    256: (256, 4.59, 1.33, 8.5),
    1024: (1024, 15.38, 4.47, 10.8),
    (1024, 64): (64, 56.74, 16.49, 8.8),
}
TARGETS = {256: 1.5, 1024: 3.0}


def options(args: argparse.Namespace, ca: str | None) -> TransportOptions:
    return TransportOptions(connect_timeout=10, read_timeout=30, ca_bundle=ca, sessions=not args.basic_auth)


def request_counts(fixture: str, tls: Path | None) -> None:
    """One discovery per way of asking, counted by the fake BMC."""
    rows = []
    for label, sessions, expand in (
        ("one session, $expand (now)", True, True),
        ("basic auth on every request", False, True),
        ("one session, no ExpandQuery", True, False),
    ):
        with RedfishFleet(1, fixture=fixture, latency=0.0, password=PASSWORD, tls_dir=tls) as fleet:
            url = fleet.urls[0]
            if not expand:
                fleet.set_expand(False)
            opts = TransportOptions(ca_bundle=fleet.ca, sessions=sessions)
            discover_endpoint(BmcEndpoint("node0000", url, "root", PASSWORD), opts)
            rows.append((label, fleet.stats()))
    print(
        f"requests per BMC, fixture {fixture} (counted by the fake BMC; before sessions: {BEFORE_REQUESTS})"
    )
    kinds = sorted({k for _, s in rows for k in s["by_kind"]})
    print(f"  {'':<40}" + "".join(f"{label[:28]:>30}" for label, _ in rows))
    for kind in kinds:
        print(f"  {kind:<40}" + "".join(f"{s['by_kind'].get(kind, 0):>30}" for _, s in rows))
    print(f"  {'total':<40}" + "".join(f"{s['requests']:>30}" for _, s in rows))
    print(f"  {'carried the password':<40}" + "".join(f"{s['basic_auth']:>30}" for _, s in rows))


def run(fleet: RedfishFleet, urls: list[str], concurrency: int, opts: TransportOptions) -> dict[str, float]:
    fleet.reset()
    server0 = fleet.stats()["server_cpu"]
    tasks = [
        Task(
            f"node{i:04d}",
            lambda u=u, i=i: discover_endpoint(BmcEndpoint(f"node{i:04d}", u, "root", PASSWORD), opts),
        )
        for i, u in enumerate(urls)
    ]
    t0, c0 = time.monotonic(), time.process_time()
    outcomes = fan_out(tasks, concurrency)
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    failed = [o for o in outcomes if not o.ok]
    for o in failed[:3]:
        print(f"  {o.name}: {o.error}", file=sys.stderr)
    if failed:
        raise SystemExit(f"{len(failed)} of {len(urls)} discoveries failed")
    seen = fleet.stats()
    return {
        "wall": wall,
        "cpu": cpu,
        "requests": seen["requests"] / len(urls),
        "open_sessions": seen["open_sessions"],
        "connections": seen["connections"] / len(urls),
        "server_cpu": seen["server_cpu"] - server0,
        # The process's peak so far: the counts run in ascending order, so the largest N's.
        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def profile(args: argparse.Namespace, tls: Path | None) -> None:
    with RedfishFleet(1, fixture=args.fixture, latency=0.0, password=PASSWORD, tls_dir=tls) as fleet:
        ep, opts = BmcEndpoint("node0000", fleet.urls[0], "root", PASSWORD), options(args, fleet.ca)
        discover_endpoint(ep, opts)  # warm-up: imports, the TLS context
        c0 = time.process_time()
        for _ in range(args.profile):
            discover_endpoint(ep, opts)
        per = (time.process_time() - c0) / args.profile
        prof = cProfile.Profile(time.process_time)
        prof.enable()
        for _ in range(args.profile):
            discover_endpoint(ep, opts)
        prof.disable()
    print(
        f"client CPU per discovery, one thread, no latency: {per * 1000:.2f} ms ({args.profile} discoveries)"
    )
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds every answer is delayed")
    parser.add_argument("--counts", default="1,256,1024")
    parser.add_argument("--fixture", default="dell-idrac9")
    parser.add_argument("--concurrency", type=int, default=None, help="default: the CLI's (all, up to 1,024)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per N; the median is reported")
    parser.add_argument("--tls", action="store_true", help="HTTPS BMCs (a self-signed CA the client trusts)")
    parser.add_argument("--basic-auth", action="store_true", help="no sessions: basic auth on every request")
    parser.add_argument("--requests-only", action="store_true", help="print the request counts and stop")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="profile N discoveries and stop")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        tls = Path(tmp) if args.tls else None
        if args.profile:
            profile(args, tls)
            return
        request_counts(args.fixture, tls)
        if args.requests_only:
            return
        rows = []
        with RedfishFleet(
            max(counts), fixture=args.fixture, latency=args.latency, password=PASSWORD, tls_dir=tls
        ) as fleet:
            opts = options(args, fleet.ca)
            run(fleet, fleet.urls[:1], 1, opts)  # warm-up: imports, first connections
            for n in counts:
                conc = args.concurrency or default_concurrency(n)
                got = [run(fleet, fleet.urls[:n], conc, opts) for _ in range(args.repeat)]
                rows.append((n, conc, {k: statistics.median(g[k] for g in got) for k in got[0]}))

    single = next((r[2]["wall"] for r in rows if r[0] == 1), None)
    auth = "basic auth on every request" if args.basic_auth else "one session per BMC"
    print(
        f"\nfixture {args.fixture}, {args.latency * 1000:.0f} ms per request, {'HTTPS' if args.tls else 'HTTP'}, "
        f"{auth}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end"
    )
    print(
        f"{'BMCs':>5} {'concurrency':>11} {'wall s':>7} {'x 1 BMC':>8} {'CPU s':>6} {'CPU ms/BMC':>10} "
        f"{'req/BMC':>7} {'conn/BMC':>8} {'open sessions':>13} {'sim CPU s':>9} {'peak RSS MiB':>12}   before: {'conc':>4} {'wall s':>6} "
        f"{'x 1 BMC':>7} {'CPU ms/BMC':>10}"
    )
    verdicts = []
    for n, conc, r in rows:
        ratio = r["wall"] / single if single else float("nan")
        before = BEFORE.get(n) if args.latency == 0.2 and not args.tls else None
        was = f"{before[0]:>12} {before[1]:>6.2f} {before[2]:>7.2f} {before[3]:>10.1f}" if before else ""
        print(
            f"{n:>5} {conc:>11} {r['wall']:>7.2f} {ratio:>8.2f} {r['cpu']:>6.2f} {r['cpu'] / n * 1000:>10.2f} "
            f"{r['requests']:>7.1f} {r['connections']:>8.1f} {r['open_sessions']:>13.0f} {r['server_cpu']:>9.2f} {r['rss_mib']:>12.0f}   {was}"
        )
        if n in TARGETS and single:
            met = "met" if ratio < TARGETS[n] else "NOT met"
            verdicts.append(f"target: {n} BMCs in under {TARGETS[n]:g}x one BMC's time: {met} ({ratio:.2f}x)")
    if args.latency == 0.2 and not args.tls:
        b = BEFORE[(1024, 64)]
        print(f"before, 1024 BMCs at the old default --concurrency 64: {b[1]:.2f} s, {b[2]:.2f}x one BMC")
    for line in verdicts:
        print(line)


if __name__ == "__main__":
    main()
