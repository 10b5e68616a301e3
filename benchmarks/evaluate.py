#!/usr/bin/env python3
"""How long `burnin evaluate` takes to recognise and judge a handed-in output, by size.

Usage: .venv/bin/python benchmarks/evaluate.py [--mb 1,8,32,64] [--repeat 3]

Inputs are real captures from tests/fixtures/samples repeated up to each size: a healthy dmesg
(judged by kernel_log), an `nvidia-smi -q` of 8 H100s repeated as one long output (its GPU
count then disagrees with the profile: judged all the same), and random printable text (nobody
recognises it). Printed per input and size: the time to read the bytes (binary and size
guards), to recognise the tool (burnin.evaluate.recognise reads a long text's head and tail only), and to
judge it, the median of ``--repeat`` runs. The size bound is burnin.evaluate.handed_in.MAX_BYTES (64 MiB).
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bringup.profiles.load import load_profile  # noqa: E402
from burnin.evaluate.handed_in import evaluate_text, read_evidence  # noqa: E402
from burnin.evaluate.recognise import recognise  # noqa: E402

SAMPLES = REPO / "tests" / "fixtures" / "samples"


def _capture(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8").split("\n", 1)[1]


def _sized(text: str, size: int) -> str:
    return (text * (size // len(text) + 1))[:size].rsplit("\n", 1)[0] + "\n"


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", default="1,8,32,64")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    profile, _ = load_profile("h100-sxm-8x400g", REPO / "inventories" / "profiles")
    rng = random.Random(15)
    noise = "".join(rng.choice(string.ascii_letters + string.digits + " \n") for _ in range(1 << 20))
    inputs = {
        "dmesg": _capture("dmesg_boot_mlx5_pcie_bw_nvswitch_h100.txt"),
        "nvidia-smi -q": _capture("nvidia_smi_q_8xh100_535_183.txt"),
        "random text": noise,
    }
    print(f"{'input':14} {'MiB':>4} {'read s':>7} {'recognise s':>12} {'judge s':>8}  tool -> verdict")
    for label, text in inputs.items():
        for mb in (int(x) for x in args.mb.split(",")):
            big = _sized(text, (mb << 20) - 1)
            data = big.encode()
            read = _median(lambda data=data: read_evidence(data, "bench"), args.repeat)
            rec = _median(lambda big=big: recognise(big), args.repeat)
            start = time.perf_counter()
            evaluation = evaluate_text(big, profile)
            judged = time.perf_counter() - start - rec  # evaluate_text recognises, then judges
            print(
                f"{label:14} {mb:>4} {read:7.2f} {rec:12.2f} {max(judged, 0.0):8.2f}  "
                f"{evaluation.tool or '(none)'} -> {evaluation.verdict.value}"
            )


if __name__ == "__main__":
    main()
