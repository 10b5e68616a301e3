"""Which tool printed this text? (pure) The answer `burnin evaluate` gives before judging a file.

Each tool has markers: patterns of lines it prints, each with a weight. 3 is a line only that
tool prints (``==============NVSMI LOG==============``, ``CA 'mlx5_0'``, ``# nccl-tests
version``), 2 a characteristic line (a counter line ``PortXmitData:......``, a ``LnkSta:``), 1 a
weak sign. A tool's score is the sum of the weights of the distinct markers found. The tool
with the highest score wins (an operator's paste often holds a prompt or a second tool's lines:
the stronger evidence wins); two tools with the same best score are ambiguous, and an ambiguous
or unrecognised text is judged by nobody (UNKNOWN, never a pass). A tool is recognised only
with a marker of weight 2 or more: weak signs alone are not enough.

The tools and their markers are burnin.evaluate.markers; the checks that judge each are those that
declare they read it (Check.reads), joined to the tools here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from burnin.checks import REGISTRY
from burnin.evaluate import markers as tool_markers
from burnin.evaluate.markers import Tool

__all__ = ["TOOLS", "Candidate", "Recognition", "Tool", "find_tool", "recognise", "tool_names"]

# Every tool with the checks that read it, in the order they are registered ('nvidia-smi -q':
# gpu_inventory, gpu_ecc, gpu_memory, gpu_versions).
TOOLS: tuple[Tool, ...] = tuple(replace(t, checks=REGISTRY.readers(t.name)) for t in tool_markers.TOOLS)


def tool_names() -> list[str]:
    return [t.name for t in TOOLS]


def find_tool(name: str) -> Tool | None:
    return next((t for t in TOOLS if t.name == name), None)


MIN_STRONGEST = 2  # a tool needs at least one marker of this weight to be recognised
# Recognition reads a long text's head and tail only: a 64 MiB dmesg is recognised as fast as a
# 1 MiB one (about 0.5 s), where every marker over all of it took ~15 s for 20 MB (benchmarks/evaluate.py).
HEAD_CHARS = 1 << 20
TAIL_CHARS = 256 << 10


@dataclass(frozen=True)
class Candidate:
    tool: Tool
    score: int
    strongest: int
    found: tuple[str, ...]  # the markers found, strongest first

    def reason(self) -> str:
        return ", ".join(self.found[:3]) + (f" and {len(self.found) - 3} more" if len(self.found) > 3 else "")


@dataclass(frozen=True)
class Recognition:
    tool: Tool | None  # None: not recognised, or ambiguous
    confidence: float  # 0..1: how sure (the strongest marker, and the margin over the runner-up)
    reason: str  # "the 'NVSMI LOG' banner, 'Attached GPUs'" or why nothing was recognised
    candidates: tuple[Candidate, ...] = ()  # every tool with a marker, best first


def _candidate(tool: Tool, text: str) -> Candidate | None:
    found: list[tuple[int, str]] = [(mk.weight, mk.what) for mk in tool.markers if mk.found_in(text)]
    if tool.detect is not None:
        found += tool.detect(text)
    if not found:
        return None
    found.sort(key=lambda wf: -wf[0])
    return Candidate(tool, sum(w for w, _ in found), found[0][0], tuple(what for _, what in found))


def _excerpt(text: str) -> str:
    """What recognition reads: all of a text up to HEAD_CHARS + TAIL_CHARS, else its head and
    tail (a tool says what it is at its start, and how it ended at its end)."""
    if len(text) <= HEAD_CHARS + TAIL_CHARS:
        return text
    head = text[:HEAD_CHARS].rsplit("\n", 1)[0]
    tail = text[-TAIL_CHARS:].split("\n", 1)[-1]
    return f"{head}\n{tail}"


def recognise(text: str) -> Recognition:
    """The tool that printed ``text``, with a confidence and the markers that say so."""
    text = _excerpt(text)
    candidates = sorted(
        (c for t in TOOLS if (c := _candidate(t, text)) is not None and c.strongest >= MIN_STRONGEST),
        key=lambda c: (-c.score, -c.strongest),
    )
    if not candidates:
        return Recognition(None, 0.0, f"not recognised: looks like none of {', '.join(tool_names())}")
    best = candidates[0]
    runner_up = candidates[1] if len(candidates) > 1 else None
    if runner_up and (runner_up.score, runner_up.strongest) == (best.score, best.strongest):
        tied = [c for c in candidates if (c.score, c.strongest) == (best.score, best.strongest)]
        looks = " or ".join(f"{c.tool.name} ({c.reason()})" for c in tied)
        return Recognition(None, 0.0, f"ambiguous: looks like {looks}", tuple(candidates))
    margin = best.score / (best.score + (runner_up.score if runner_up else 0))
    confidence = round(min(1.0, best.strongest / 3) * margin, 2)
    return Recognition(best.tool, confidence, best.reason(), tuple(candidates))
