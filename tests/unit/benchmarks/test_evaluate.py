"""benchmarks/evaluate.py runs over a few corpus files and a short kernel log and prints its
figures (no timing asserted)."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import REPO


def test_it_prints_the_corpus_and_kernel_log_figures() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/evaluate.py",
            "--what",
            "corpus,kernel",
            "--files",
            "4",
            "--kernel-lines",
            "300",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    corpus, kernel = done.stdout.splitlines()
    assert corpus.startswith("corpus: 4 files, CPU ms per file: median ") and " p99 " in corpus
    assert kernel.startswith("kernel log: 300 lines ") and "-> dmesg / journalctl -k " in kernel


def test_an_unknown_part_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/evaluate.py", "--what", "corpus,nonsense"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "unknown --what: nonsense" in done.stderr
