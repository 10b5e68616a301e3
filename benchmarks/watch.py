#!/usr/bin/env python3
"""What `burnin watch` costs on a node: CPU per hour and peak resident memory.

Usage: .venv/bin/python benchmarks/watch.py [--rate 10] [--minutes 10] [--ports 8] [--devices 24]

Simulated time: ``--minutes`` of kernel log at ``--rate`` lines per second (the healthy boot
lines of a real 8x H100 host, cycled, as bytes through the watcher's bounded line splitter),
and a counter reading every 30 s from a sysfs tree of ``--ports`` IB ports and ``--devices``
PCI devices with AER files, whose counters creep up (below every threshold). What is timed is
the watcher's own work (judging, splitting, reading the tree), not the wait between lines, so
CPU per hour = CPU used / simulated seconds x 3600. The kernel-log source (`dmesg --follow-new`)
is a separate process, idle between records, and not counted. Printed: lines/s the judging
sustains, CPU s per hour at ``--rate``, the process's peak RSS (python and the imports
included) and what the run added to it.

A quiet node logs a few lines an hour; a node with a flapping link or an Xid storm logs tens a
second, which the kernel rate-limits (printk_ratelimit).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def sysfs_tree(root: Path, ports: int, devices: int, step: int) -> None:
    for i in range(ports):
        counters = root / f"sys/class/infiniband/mlx5_{i}/ports/1/counters"
        counters.mkdir(parents=True, exist_ok=True)
        for name in ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors"):
            (counters / name).write_text(f"{step if name == 'symbol_error' else 0}\n")
    for d in range(devices):
        dev = root / f"sys/bus/pci/devices/0000:{d + 0x10:02x}:00.0"
        dev.mkdir(parents=True, exist_ok=True)
        for kind, total in (
            ("correctable", "TOTAL_ERR_COR"),
            ("nonfatal", "TOTAL_ERR_NONFATAL"),
            ("fatal", "TOTAL_ERR_FATAL"),
        ):
            n = step if kind == "correctable" else 0
            (dev / f"aer_dev_{kind}").write_text(f"RxErr {n}\nBadTLP 0\n{total} {n}\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=10.0, help="kernel-log lines per second")
    ap.add_argument("--minutes", type=float, default=10.0, help="simulated minutes")
    ap.add_argument("--ports", type=int, default=8)
    ap.add_argument("--devices", type=int, default=24)
    ap.add_argument(
        "--real-seconds", type=float, default=15.0, help="then `burnin watch` itself, this long; 0: not"
    )
    args = ap.parse_args()

    from burnin.service.health_run import HealthOptions
    from burnin.service.watch import INTERVAL_S, LineSplitter, Watcher, WatchOptions, read_counters
    from tests.profiles import shipped

    samples = REPO / "bringup/lab/standins/samples/dmesg_iso_8xh100_boot_DERIVED.txt"
    lines = [ln for ln in samples.read_text().splitlines() if not ln.startswith("#")]
    rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        root = Path(tmp)
        sim = [0.0]
        health = HealthOptions(shipped(), node="bench01", state_dir=root / "state", drain=False)
        watcher = Watcher(WatchOptions(health, sys_root=root), now=lambda: sim[0])
        splitter = LineSplitter()
        total_s = args.minutes * 60
        n_lines = int(args.rate * total_s)
        per_tick = max(1, int(args.rate * INTERVAL_S))
        sysfs_tree(root, args.ports, args.devices, 0)
        cpu0 = time.process_time()
        judge_cpu = 0.0
        done = 0
        step = 0
        while sim[0] < total_s:
            batch = min(per_tick, n_lines - done)
            t0 = time.process_time()
            for i in range(batch):
                for text in splitter.feed((lines[(done + i) % len(lines)] + "\n").encode()):
                    watcher.line(text)
            judge_cpu += time.process_time() - t0
            done += batch
            step += 1
            sysfs_tree(root, args.ports, args.devices, step)  # the counters creep (writing them is not timed)
            t1 = time.process_time()
            sim[0] += INTERVAL_S
            watcher.reading(read_counters(root))
            judge_cpu += time.process_time() - t1
        cpu = judge_cpu
        wall_cpu = time.process_time() - cpu0
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    st = watcher.stats
    print(
        f"simulated {args.minutes:g} min: {st.lines} lines at {args.rate:g}/s, {st.readings} counter readings"
    )
    print(
        f"  ({args.ports} IB ports, {args.devices} PCI devices), {st.failed} failing, actions: {st.actions or 'none'}"
    )
    print(f"watcher CPU: {cpu:.3f} s ({wall_cpu:.3f} s with writing the test tree)")
    if st.lines:
        print(
            f"  per line (readings included): {cpu / max(st.lines, 1) * 1e6:.0f} us (judging sustains ~{st.lines / max(cpu, 1e-9):.0f} lines/s)"
        )
    print(
        f"CPU per hour at {args.rate:g} lines/s: {cpu / total_s * 3600:.1f} s ({cpu / total_s * 100:.3f}% of a core)"
    )
    print(
        f"peak RSS: {rss_peak / 1024:.1f} MiB (after imports {rss_start / 1024:.1f} MiB; the run added {(rss_peak - rss_start) / 1024:.1f} MiB)"
    )
    if args.real_seconds > 0:
        real_process(args.rate, args.real_seconds, samples)


def real_process(rate: float, seconds: float, samples: Path) -> None:
    """`burnin watch` as systemd runs it, fed at ``rate`` lines/s by a source process for
    ``seconds``: its CPU (start-up included) and peak RSS, from the kernel's child accounting."""
    import subprocess

    from tests.profiles import shipped

    with tempfile.TemporaryDirectory(prefix="bench-watch-real-") as tmp:
        source = Path(tmp) / "source.py"
        source.write_text(
            "import sys, time\n"
            f"lines = [l for l in open({str(samples)!r}).read().splitlines() if not l.startswith('#')]\n"
            "i = 0\n"
            "while True:\n"
            "    sys.stdout.write(lines[i % len(lines)] + '\\n'); sys.stdout.flush(); i += 1\n"
            f"    time.sleep({1.0 / rate!r})\n"
        )
        cmd = [
            str(REPO / ".venv/bin/burnin"),
            "watch",
            "--profile",
            str(shipped().path),
            "--node",
            "bench01",
            "--state-dir",
            f"{tmp}/state",
            "--sys-root",
            tmp,
            "--no-drain",
            "--for",
            str(seconds),
            "--source",
            f"{sys.executable} {source}",
        ]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"burnin watch for {seconds:g} s at {rate:g} lines/s: {out.stderr.strip() or out.stdout.strip()}")
    print(
        f"  CPU {cpu:.2f} s (start-up, imports and the source process included); peak RSS {after.ru_maxrss / 1024:.1f} MiB"
    )


if __name__ == "__main__":
    main()
