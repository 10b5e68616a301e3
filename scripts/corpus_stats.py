"""Print the sample corpus's figures: files, sources, share showing a fault, GPU models and HCA
generations, and the rows marked as known misses (tests/fixtures/samples/index.tsv).

Usage: .venv/bin/python scripts/corpus_stats.py

A file shows a fault when its `burnin evaluate` row's labelled verdict is FAIL or WARN. GPU models
and HCA generations are read from the files' text (nvidia-smi product names, PCI device names,
ibstat CA types and rates), so a model counts only where a file shows it.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import sample_index  # noqa: E402

# GPU models as nvidia-smi, lspci or a capture names them; the first pattern that matches a file
# names the model (a file may show several).
GPU_MODELS = {
    "A100": r"A100",
    "A10": r"\bA10\b",
    "A800": r"\bA800\b|-a800-",
    "H100": r"H100",
    "H200": r"H200",
    "B200 / GB200": r"\bG?B200\b|10de:2941|Device 2941",
    "B300 / GB300": r"\bG?B300\b",
    "MI300X / MI300A (AMD)": r"\bMI300[XA]?\b",
    "L40S / L4 (PCIe)": r"\bL40S\b|\bL4\b",
    "V100": r"V100",
    "T400 / Titan V (workstation)": r"\bT400\b|TITAN V",
    "GeForce (consumer)": r"GeForce|RTX \d{4}",
}
# HCA generations: ibstat CA types (MT4123 ConnectX-6, MT4125 ConnectX-6 Dx, MT4129 ConnectX-7),
# names, and the IB rate names (perftest / ibstatus print them).
HCA_GENERATIONS = {
    "ConnectX-7 / NDR 400": r"ConnectX-7|MT4129|\bNDR\b|Rate: 400",
    "ConnectX-6 / HDR 200": r"ConnectX-6(?! Dx)|MT4123|\bHDR\b|Rate: 200\b",
    "ConnectX-6 Dx (Ethernet)": r"ConnectX-6 Dx|MT4125",
    "EDR 100": r"\bEDR\b",
    "QDR / older": r"\bQDR\b|\bFDR\b",
}


def source_of(row: sample_index.Row) -> str:
    """The source a row's file comes from: a repository, an issue thread's repository, a page."""
    text = row.source
    if m := re.search(r"github\.com/([\w.-]+/[\w.-]+)", text):
        return m.group(1)
    m = re.match(r"(?:github )([\w.-]+/[\w.-]+)\b", text)
    if m and not m.group(1).startswith(("sys/", "dev/")):
        return m.group(1)
    return " ".join(text.split()[:3])


def main() -> int:
    rows = sample_index.rows()
    evaluate = {r.file: r for r in sample_index.evaluate_rows()}
    files = sample_index.sample_files()
    faulty = [f for f in files if f in evaluate and evaluate[f].verdict in ("FAIL", "WARN")]
    texts = {f: (sample_index.REPO / f).read_text(encoding="utf-8", errors="replace") for f in files}
    models = Counter(m for m, pat in GPU_MODELS.items() for f in files if re.search(pat, texts[f]))
    hcas = Counter(h for h, pat in HCA_GENERATIONS.items() for f in files if re.search(pat, texts[f]))
    sources = Counter(source_of(evaluate[f]) for f in files if f in evaluate)
    kinds = Counter(evaluate[f].kind for f in files if f in evaluate)
    tools = Counter(evaluate[f].tool or "(none)" for f in files if f in evaluate)
    misses = [r for r in rows if r.known_miss]

    print(f"files: {len(files)}")
    print(f"index rows: {len(rows)} ({len(evaluate)} burnin evaluate, {len(rows) - len(evaluate)} per check)")
    print(f"sources: {len(sources)}")
    print(f"showing a fault (FAIL or WARN labelled): {len(faulty)} = {100 * len(faulty) / len(files):.0f}%")
    print("kinds: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    print(f"GPU models ({len(models)}): " + ", ".join(f"{m} {n}" for m, n in models.most_common()))
    print(f"HCA generations ({len(hcas)}): " + ", ".join(f"{h} {n}" for h, n in hcas.most_common()))
    print("tools: " + ", ".join(f"{t} {n}" for t, n in tools.most_common()))
    from burnin.evaluate.recognise import TOOLS

    print(
        "tools the product reads with no file: "
        + (", ".join(t.name for t in TOOLS if t.name not in tools) or "none")
    )
    wrong_pass = [r for r in misses if r.verdict != "PASS" and "says PASS" in r.why]
    print(f"known misses: {len(misses)} rows, {len(wrong_pass)} of them a wrong PASS")
    for r in misses:
        flag = "WRONG PASS " if r in wrong_pass else ""
        print(f"  {flag}{r.id()}: labelled {r.verdict}; {r.why[:160]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
