"""A marker's literal runs: text every match of its pattern holds, tested with `in` before the regex
runs (burnin/evaluate/markers.py). A run the pattern does not require would hide a tool."""

from __future__ import annotations

import re

import pytest

from burnin.evaluate.markers import TOOLS, mark, required_runs
from tests import sample_index


@pytest.mark.parametrize(
    ("pattern", "flags", "runs"),
    [
        (r"^=+NVSMI LOG=+\s*$", 0, ("NVSMI LOG",)),
        (r"^\s+Link \d+: (?:[\d.]+ GB/s|<inactive>)", 0, ("Link ",)),
        (r"\bNCCL (?:INFO|WARN)\b", 0, ("NCCL ",)),
        (r"^(?:CA|SW)\s+\d+", 0, ()),  # an alternation first: nothing required at the top
        (r"proc'd:", 0, ("proc'd:",)),
        (r"^# nThread \d+ nGpus \d+", 0, ("# nThread ", " nGpus ")),
        (r"NVML: Unable to retrieve NVLink information", re.IGNORECASE, ()),  # case-folded: not a plain `in`
        (r"(?i)all pools are healthy", 0, ()),
        (r"^GPU \d+: .+ \(UUID: GPU-[0-9a-fA-F-]+\)\s*$", 0, ("GPU ", " (UUID: GPU-")),
    ],
)
def test_the_runs_a_pattern_requires(pattern: str, flags: int, runs: tuple[str, ...]) -> None:
    assert required_runs(pattern, flags) == runs
    assert mark(pattern, 3, "x", flags).needs == runs


def _texts() -> list[str]:
    return [row.output() for row in sample_index.evaluate_rows()]


def test_every_match_in_the_corpus_holds_its_markers_runs() -> None:
    """Over every sample: wherever a marker's pattern matches, the match holds each of its runs (so
    testing them first never changes what is recognised)."""
    missed = []
    for text in _texts():
        for tool in TOOLS:
            for mk in tool.markers:
                for m in mk.pattern.finditer(text):
                    missed += [(tool.name, mk.what, run) for run in mk.needs if run not in m.group(0)]
    assert missed == []


def test_most_markers_have_a_run_to_test_first() -> None:
    markers = [mk for tool in TOOLS for mk in tool.markers]
    assert sum(bool(mk.needs) for mk in markers) > 0.8 * len(markers)
