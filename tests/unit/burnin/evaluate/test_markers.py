"""A marker's literal runs: text every match of its pattern holds, tested with `in` before the regex
runs (burnin/evaluate/markers.py). A run the pattern does not require would hide a tool."""

from __future__ import annotations

from burnin.evaluate.markers import TOOLS, mark
from tests import sample_index


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


def test_a_marker_tests_the_runs_its_pattern_requires() -> None:
    assert mark(r"^# nThread \d+ nGpus \d+", 3, "x").needs == ("# nThread ", " nGpus ")


def test_most_markers_have_a_run_to_test_first() -> None:
    markers = [mk for tool in TOOLS for mk in tool.markers]
    assert sum(bool(mk.needs) for mk in markers) > 0.8 * len(markers)
