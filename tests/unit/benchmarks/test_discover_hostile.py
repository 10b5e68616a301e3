"""benchmarks/discover_hostile.py on a small rack: the healthy nodes discovered, each hostile one
its own error, and the figures printed (no timing asserted; the memory target is the script's)."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import REPO


def test_a_small_hostile_rack_is_discovered_but_for_its_hostile_bmcs() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/discover_hostile.py",
            "--healthy",
            "2",
            "--latency",
            "0",
            "--bomb-mib",
            "32",
            "--big-mib",
            "32",
            "--drip-interval",
            "0.2",
            "--read-timeout",
            "1",
            "--request-deadline",
            "2",
            "--node-deadline",
            "30",
        ],  # fmt: skip
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "client peak RSS:" in out and "healthy nodes discovered: 2 of 2" in out
    assert "bad-bomb: failed" in out and "decompressed is over the 8 MiB cap" in out
    assert "bad-big: failed" in out and "bad-big-unannounced: failed" in out
    assert "bad-drip: failed" in out and "deadline exceeded" in out
    assert "target (peak RSS < 200 MB, every healthy node discovered, every hostile one failed): met" in out
