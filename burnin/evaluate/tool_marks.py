"""What a tool's output is known by (pure): a Marker is one weighted line pattern, a Tool a
name with its markers (burnin/evaluate/markers.py lists them; burnin.evaluate.recognise scores a
text against them)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from burnin.evaluate.literal_runs import required_runs


@dataclass(frozen=True)
class Marker:
    pattern: re.Pattern[str]
    weight: int  # 3: only this tool prints it; 2: characteristic; 1: a weak sign
    what: str  # how the reason names it: "the 'NVSMI LOG' banner"
    # Text every match holds (burnin.evaluate.literal_runs): a text without one of them is not
    # searched, as most texts are not most tools' output (a 1 MiB dmesg was searched by every pattern).
    needs: tuple[str, ...] = ()

    def found_in(self, text: str) -> bool:
        return all(run in text for run in self.needs) and self.pattern.search(text) is not None


def mark(pattern: str, weight: int, what: str, flags: int = 0) -> Marker:
    return Marker(re.compile(pattern, re.MULTILINE | flags), weight, what, required_runs(pattern, flags))


@dataclass(frozen=True)
class Tool:
    name: str  # 'nvidia-smi -q', as the answer names it
    markers: tuple[Marker, ...] = ()
    # Extra signs that a pattern cannot express (a kernel log is a proportion of its lines).
    detect: Callable[[str], list[tuple[int, str]]] | None = None
    instead: str = ""  # for a tool no check judges: what to run to get a judged output
    section: str = ""  # wrap a bare output in this burnin section before judging it
    includes: tuple[str, ...] = ()  # tools whose lines this tool prints too (gpu-burn: nvidia-smi -L's)
    # The checks that judge its output, filled by burnin.evaluate.recognise from the checks' declarations
    # (Check.reads); () here, and () there for a tool recognised but judged by no check.
    checks: tuple[str, ...] = ()
