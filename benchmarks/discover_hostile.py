#!/usr/bin/env python3
"""Discovery of a rack with hostile BMCs in it: the client's peak memory and wall time, and
which nodes were discovered (docs/redfish.md, "Bounds").

Usage: .venv/bin/python benchmarks/discover_hostile.py [--healthy 16] [--latency 0.05]
       [--bomb-mib 1024] [--big-mib 100] [--drip-interval 1.0]
       [--read-timeout 5] [--request-deadline 10] [--node-deadline 60]

The rack: ``--healthy`` fake Dell iDRAC 9s (benchmarks/fleet_sim/redfish.py, a process of
their own, every answer ``--latency`` late) and four hostile BMCs
(tests/doubles/hostile_bmc.py, another process), each misbehaving on the system resource:
a gzip bomb (``--bomb-mib`` of JSON, about 1 MB on the wire for 1 GiB), a ``--big-mib`` body
(announced by its Content-Length), the same body unannounced (it ends with the connection, so
only what has arrived can stop it), and one sending a byte every ``--drip-interval`` seconds. Discovery runs as `bringup discover`
runs it (``fanout.fan_out`` of ``discovery.discover_endpoint``, the CLI's other defaults) in a
fresh child process, which reports its peak RSS (``ru_maxrss``) before and after discovery;
the deadlines are shorter than the CLI's (120 s, 300 s) so that the slow BMC is given up in
seconds rather than minutes: they change when it is given up, not how much memory it costs.

Target: peak RSS under 200 MB, every healthy node discovered, each hostile one its own error.
Recorded before the bounds (the same probes by hand): the gzip bomb took discovery to 3.2 GB
RSS, the 100 MB body to 391 MB, and the slow BMC was still being read after 150 s.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MiB = 1 << 20
PASSWORD = "bench-pw"
SYSTEM = "/redfish/v1/Systems/System.Embedded.1"
TARGET_RSS_MB = 200


def serve_hostile(args: argparse.Namespace) -> None:
    """Child: the four hostile BMCs, until stdin closes; prints {name: url} when ready."""
    from tests.doubles.hostile_bmc import HostileBmc, gzip_bomb

    gzip_bomb(args.bomb_mib * MiB)  # built before the first request (about 10 s for 1 GiB)
    bmcs = {
        "bomb": HostileBmc("gzip_bomb", SYSTEM, size=args.bomb_mib * MiB, serial_suffix="B"),
        "big": HostileBmc("big_body", SYSTEM, size=args.big_mib * MiB, serial_suffix="G"),
        "big-unannounced": HostileBmc("big_stream", SYSTEM, size=args.big_mib * MiB, serial_suffix="U"),
        "drip": HostileBmc("drip_body", SYSTEM, interval=args.drip_interval, serial_suffix="D"),
    }
    for bmc in bmcs.values():
        bmc.__enter__()
    print(json.dumps({name: bmc.url for name, bmc in bmcs.items()}), flush=True)
    sys.stdin.read()
    for bmc in bmcs.values():
        bmc.__exit__(None, None, None)


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kB


def discover_child(args: argparse.Namespace) -> None:
    """Child: discover the rack given on stdin ({name: url}); prints one JSON line of results."""
    from bringup.redfish.discovery import discover_endpoint
    from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
    from bringup.redfish.fanout import Task, fan_out

    urls = json.loads(sys.stdin.readline())
    options = TransportOptions(
        read_timeout=args.read_timeout,
        request_deadline=args.request_deadline,
        node_deadline=args.node_deadline,
    )
    endpoints = [BmcEndpoint(name, url, "root", PASSWORD) for name, url in urls.items()]
    tasks = [Task(e.name, lambda e=e: discover_endpoint(e, options), e.redact) for e in endpoints]
    before = rss_mb()
    t0 = time.monotonic()
    outcomes = fan_out(tasks)
    wall = time.monotonic() - t0
    nodes = {
        o.name: {"ok": o.ok, "seconds": round(o.seconds, 2), "error": str(o.error) if o.error else None}
        for o in outcomes
    }
    print(json.dumps({"rss_before_mb": before, "rss_peak_mb": rss_mb(), "wall_s": wall, "nodes": nodes}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--healthy", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--bomb-mib", type=int, default=1024)
    parser.add_argument("--big-mib", type=int, default=100)
    parser.add_argument("--drip-interval", type=float, default=1.0)
    parser.add_argument("--read-timeout", type=float, default=5.0)
    parser.add_argument("--request-deadline", type=float, default=10.0)
    parser.add_argument("--node-deadline", type=float, default=60.0)
    parser.add_argument("--serve-hostile", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--discover", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_hostile:
        serve_hostile(args)
        return 0
    if args.discover:
        discover_child(args)
        return 0

    from benchmarks.fleet_sim.redfish import RedfishFleet

    passed = [a for a in sys.argv[1:]]
    hostile = subprocess.Popen(
        [sys.executable, __file__, "--serve-hostile", *passed],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert hostile.stdout is not None and hostile.stdin is not None
    try:
        bad = json.loads(hostile.stdout.readline())
        with RedfishFleet(args.healthy, latency=args.latency, password=PASSWORD) as fleet:
            rack = {f"good{i:02d}": url for i, url in enumerate(fleet.urls, start=1)}
            rack.update({f"bad-{name}": url for name, url in bad.items()})
            child = subprocess.run(
                [sys.executable, __file__, "--discover", *passed],
                cwd=REPO,
                input=json.dumps(rack) + "\n",
                capture_output=True,
                text=True,
                check=False,
            )
    finally:
        hostile.stdin.close()
        hostile.wait(30)
    if child.returncode != 0:
        print(child.stderr, file=sys.stderr)
        return 1
    got = json.loads(child.stdout.splitlines()[-1])
    nodes = got["nodes"]
    healthy_ok = sum(1 for n, r in nodes.items() if n.startswith("good") and r["ok"])
    print(
        f"rack: {args.healthy} healthy BMCs ({args.latency * 1000:g} ms per answer) + a gzip bomb of "
        f"{args.bomb_mib} MiB + a {args.big_mib} MiB body (announced, and not) + one byte every {args.drip_interval:g} s"
    )
    print(
        f"options: read timeout {args.read_timeout:g} s, request deadline {args.request_deadline:g} s, "
        f"node deadline {args.node_deadline:g} s; body cap and the rest at their defaults"
    )
    print(
        f"client peak RSS: {got['rss_peak_mb']:.0f} MB (after imports, before discovery: {got['rss_before_mb']:.0f} MB)"
    )
    print(f"wall time: {got['wall_s']:.1f} s")
    print(f"healthy nodes discovered: {healthy_ok} of {args.healthy}")
    for name in sorted(n for n in nodes if n.startswith("bad-")):
        r = nodes[name]
        print(f"  {name}: {'DISCOVERED' if r['ok'] else 'failed'} after {r['seconds']:.1f} s: {r['error']}")
    ok = (
        got["rss_peak_mb"] < TARGET_RSS_MB
        and healthy_ok == args.healthy
        and not any(r["ok"] for n, r in nodes.items() if n.startswith("bad-"))
    )
    print(
        f"target (peak RSS < {TARGET_RSS_MB} MB, every healthy node discovered, every hostile one failed): "
        f"{'met' if ok else 'NOT met'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
