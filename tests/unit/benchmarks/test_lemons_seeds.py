"""benchmarks/lemons.py measures on held-out seeds by default: the policy's chance bound
was tuned on seeds 101-103, and docs/reliability.md's table was measured on 301-303, so a plain
run reproduces the table, and the help and the printed header say which seeds tuned the policy."""

from __future__ import annotations

import subprocess
import sys

from benchmarks.lemons import HELD_OUT_SEEDS, TUNING_SEEDS, parse_args, seeds_header
from tests.paths import REPO


def test_the_default_seeds_are_the_held_out_ones_the_docs_quote():
    assert parse_args([]).seeds == "301,302,303"
    assert (TUNING_SEEDS, HELD_OUT_SEEDS) == ((101, 102, 103), (301, 302, 303))
    docs = " ".join((REPO / "docs" / "reliability.md").read_text().split())
    assert "Measured on seeds 301, 302, 303 pooled" in docs and "tuned on 101-103" in docs


def test_help_names_the_tuning_seeds():
    res = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "lemons.py"), "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    text = " ".join(res.stdout.split())
    assert "default: 301,302,303" in text and "tuned on seeds 101,102,103" in text


def test_the_header_says_whether_the_seeds_are_held_out():
    held_out = seeds_header([301, 302, 303], 90, "policy.yml")
    assert held_out.startswith("seeds [301, 302, 303] (held out; the policy was tuned on 101,102,103)")
    tuning = seeds_header([101, 102, 103], 90, "policy.yml")
    assert "the seeds the policy was tuned on: not a held-out measure" in tuning
    assert tuning.endswith("90 days, policy: policy.yml")
