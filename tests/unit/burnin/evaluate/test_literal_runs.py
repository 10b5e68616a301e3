"""The runs of literal text a pattern requires (burnin/evaluate/literal_runs.py): only those every
match holds; none for a case-folding pattern."""

from __future__ import annotations

import re

import pytest

from burnin.evaluate.literal_runs import required_runs


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
