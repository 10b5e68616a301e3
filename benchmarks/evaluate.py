#!/usr/bin/env python3
"""How long `burnin evaluate` takes to recognise and judge a handed-in output.

Usage: .venv/bin/python benchmarks/evaluate.py [--what corpus,kernel,sizes] [--files N]
       [--kernel-lines 100000] [--mb 1,8,32,64] [--repeat 3]

- corpus: every file of tests/fixtures/samples and bringup/lab/standins/samples (the sample
  corpus, the '# SOURCE:' line left in, as an operator hands a file in) judged as `burnin
  evaluate FILE` does (burnin.evaluate.handed_in.evaluate_evidence): CPU milliseconds per file,
  median and p99 (``--files N``: the first N only).
- kernel: a kernel log of ``--kernel-lines`` lines built from the real lines of the corpus's
  kernel-log samples (each recognised as dmesg / journalctl -k), cycled, judged whole: CPU
  seconds to recognise and judge it (docs/burnin.md wants under 1 s for 100,000 lines).
- sizes: real captures repeated up to each ``--mb`` size (a healthy dmesg, an `nvidia-smi -q` of
  8 H100s repeated as one long output, random printable text nobody recognises): the wall time
  to read the bytes (binary and size guards), to recognise the tool (burnin.evaluate.recognise
  reads a long text's head and tail only) and to judge it, the median of ``--repeat`` runs. The
  size bound is burnin.evaluate.handed_in.MAX_BYTES (64 MiB).
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
from burnin.evaluate.handed_in import evaluate_evidence, evaluate_text, read_evidence  # noqa: E402
from burnin.evaluate.recognise import recognise  # noqa: E402

SAMPLES = REPO / "tests" / "fixtures" / "samples"
CORPUS_DIRS = (SAMPLES, REPO / "bringup" / "lab" / "standins" / "samples")
NOT_SAMPLES = {"INDEX.md", "index.tsv"}
KERNEL_LOG = "dmesg / journalctl -k"


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


def corpus_files(limit: int | None = None) -> list[Path]:
    files = sorted(p for d in CORPUS_DIRS for p in d.iterdir() if p.is_file() and p.name not in NOT_SAMPLES)
    return files[:limit] if limit else files


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def bench_corpus(profile, limit: int | None) -> None:
    per_file: list[tuple[float, str, str]] = []
    for path in corpus_files(limit):
        data = path.read_bytes()
        start = time.process_time()
        evaluation = evaluate_evidence(data, profile, source=str(path))
        per_file.append(((time.process_time() - start) * 1000, path.name, evaluation.verdict.value))
    ms = [t for t, _, _ in per_file]
    print(
        f"corpus: {len(ms)} files, CPU ms per file: median {statistics.median(ms):.2f}, "
        f"p99 {_percentile(ms, 99):.2f}, max {max(ms):.2f} ({max(per_file)[1]}), total {sum(ms) / 1000:.2f} s"
    )


def kernel_log_lines(count: int) -> list[str]:
    """``count`` lines cycled from the corpus's kernel-log samples, each recognised as one."""
    lines: list[str] = []
    for path in corpus_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        first, _, rest = text.partition("\n")
        body = rest if first.startswith("# SOURCE:") else text
        if recognise(body).tool is not None and recognise(body).tool.name == KERNEL_LOG:
            lines += [line for line in body.splitlines() if line.strip()]
    if not lines:
        raise SystemExit("no kernel-log sample in the corpus")
    return [lines[i % len(lines)] for i in range(count)]


def bench_kernel(profile, count: int) -> None:
    text = "\n".join(kernel_log_lines(count)) + "\n"
    start = time.process_time()
    recognise(text)
    recognised = time.process_time() - start
    start = time.process_time()
    evaluation = evaluate_text(text, profile)
    cpu = time.process_time() - start
    print(
        f"kernel log: {count} lines ({len(text) / 1e6:.1f} MB) from the corpus's kernel-log samples: "
        f"{cpu:.2f} s CPU to recognise and judge ({recognised:.2f} s of it recognising) -> "
        f"{evaluation.tool} {evaluation.verdict.value} ({len(evaluation.findings())} findings)"
    )


def bench_sizes(profile, sizes: list[int], repeat: int) -> None:
    rng = random.Random(15)
    noise = "".join(rng.choice(string.ascii_letters + string.digits + " \n") for _ in range(1 << 20))
    inputs = {
        "dmesg": _capture("dmesg_boot_mlx5_pcie_bw_nvswitch_h100.txt"),
        "nvidia-smi -q": _capture("nvidia_smi_q_8xh100_535_183.txt"),
        "random text": noise,
    }
    print(f"{'input':14} {'MiB':>4} {'read s':>7} {'recognise s':>12} {'judge s':>8}  tool -> verdict")
    for label, text in inputs.items():
        for mb in sizes:
            big = _sized(text, (mb << 20) - 1)
            data = big.encode()
            read = _median(lambda data=data: read_evidence(data, "bench"), repeat)
            rec = _median(lambda big=big: recognise(big), repeat)
            start = time.perf_counter()
            evaluation = evaluate_text(big, profile)
            judged = time.perf_counter() - start - rec  # evaluate_text recognises, then judges
            print(
                f"{label:14} {mb:>4} {read:7.2f} {rec:12.2f} {max(judged, 0.0):8.2f}  "
                f"{evaluation.tool or '(none)'} -> {evaluation.verdict.value}"
            )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--what", default="corpus,kernel,sizes", help="which of corpus, kernel, sizes")
    ap.add_argument("--files", type=int, default=None, help="corpus: the first N files only")
    ap.add_argument("--kernel-lines", type=int, default=100_000)
    ap.add_argument("--mb", default="1,8,32,64")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    what = {w.strip() for w in args.what.split(",") if w.strip()}
    if odd := what - {"corpus", "kernel", "sizes"}:
        ap.error(f"unknown --what: {', '.join(sorted(odd))}")
    profile, _ = load_profile("h100-sxm-8x400g", REPO / "inventories" / "profiles")
    if "corpus" in what:
        bench_corpus(profile, args.files)
    if "kernel" in what:
        bench_kernel(profile, args.kernel_lines)
    if "sizes" in what:
        bench_sizes(profile, [int(x) for x in args.mb.split(",")], args.repeat)


if __name__ == "__main__":
    main()
