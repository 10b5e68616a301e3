"""The excluded nodes grouped by why: at fleet size the same reason holds for hundreds of nodes
("stage ib never ran" on every node of a rack whose IB stage was not run), and one row per node
buries the few that failed. Nodes whose reasons have the same gist form one group, one line
("32 nodes: stages ib and nccl never ran"), that opens (``<details>``) to list them; a group whose
nodes differ in the detail (which GPU failed, which run) lists each node with its own reasons.

Groups come worst first (a failure before an unknown before anything else), then the biggest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from burnin.report import NodeReport, RackReport
from burnin.report.page import Section, anchor, esc

# "stage gpu FAIL (run 12): gpu_stress: GPU 3 in HW slowdown ... -> RESEAT" (burnin.golden.rules.judge)
_STAGE_VERDICT = re.compile(r"^stage (\S+) (FAIL|UNKNOWN|WARN|PASS) \(run [^)]*\): ([^:]+)")
_NEVER_RAN = re.compile(r"^stage (\S+) never ran$")
# The other reasons' gist: the words before their detail (a state's why, a run's name, a date).
_GISTS = (
    (re.compile(r"^(state \S+)"), r"\1"),
    (re.compile(r"^(results older than [^(]+?)\s*\("), r"\1"),
    (re.compile(r"^in burn-in now"), "in burn-in now"),
    (re.compile(r"^flagged a lemon"), "flagged a lemon"),
    (re.compile(r"^not in the inventory of rack"), "not in the inventory of its rack"),
)
_RANK = {"FAIL": 3, "UNKNOWN": 2}


def gist(reason: str) -> str:
    """A reason without what differs between nodes: 'stage gpu FAIL: gpu_stress'."""
    if m := _STAGE_VERDICT.match(reason):
        return f"stage {m[1]} {m[2]}: {m[3]}"
    for pattern, repl in _GISTS:
        if m := pattern.match(reason):
            return m.expand(repl)
    return reason


def _words(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def headline(gists: Sequence[str]) -> str:
    """The group's reasons in one line, the stages that never ran said once:
    'stage gpu FAIL: gpu_stress; stages ib and nccl never ran'."""
    never = [m[1] for g in gists if (m := _NEVER_RAN.match(g))]
    out = [g for g in gists if not _NEVER_RAN.match(g)]
    if never:
        out.append(f"stage{'s' if len(never) > 1 else ''} {_words(never)} never ran")
    return "; ".join(out) or "no reason recorded"


@dataclass(frozen=True)
class ExcludedGroup:
    gists: tuple[str, ...]
    nodes: tuple[NodeReport, ...]

    @property
    def headline(self) -> str:
        return headline(self.gists)

    @property
    def rank(self) -> int:
        """How bad: 3 a failure, 2 an unknown, 1 anything else."""
        verdicts = (m[1] for g in self.gists if (m := re.match(r"stage \S+ (\w+):", g)))
        return max((_RANK.get(v, 1) for v in verdicts), default=1)

    @property
    def same_detail(self) -> bool:
        """Every node's reasons are the gist itself: listing the names says it all."""
        return all(n.reasons == self.gists for n in self.nodes)

    @property
    def id(self) -> str:
        """A stable anchor: the headline's words (each group's headline is distinct)."""
        return anchor("why", self.headline)[:120]


def group_excluded(nodes: Sequence[NodeReport]) -> list[ExcludedGroup]:
    """The nodes that do not qualify, grouped by the gist of their reasons, worst and biggest first."""
    groups: dict[tuple[str, ...], list[NodeReport]] = {}
    for n in nodes:
        if not n.golden:
            groups.setdefault(tuple(gist(r) for r in n.reasons), []).append(n)
    out = [ExcludedGroup(k, tuple(v)) for k, v in groups.items()]
    return sorted(out, key=lambda g: (-g.rank, -len(g.nodes), g.nodes[0].name))


def _states(nodes: Sequence[NodeReport]) -> str:
    counts: dict[str, int] = {}
    for n in nodes:
        counts[n.state] = counts.get(n.state, 0) + 1
    if len(counts) == 1:
        return f"state {next(iter(counts))}"
    return "states " + ", ".join(f"{s} {c}" for s, c in sorted(counts.items(), key=lambda sc: -sc[1]))


def _members(group: ExcludedGroup) -> str:
    if group.same_detail:  # names only, each its own anchor (the matrix links to it)
        names = "".join(
            f'<li id="{anchor("excluded", n.name)}" title="{esc(n.state)}">{esc(n.name)}</li>'
            for n in group.nodes
        )
        return f'<ul class="ex-nodes">{names}</ul>'
    rows = "".join(
        f'<tr id="{anchor("excluded", n.name)}"><th>{esc(n.name)}</th><td>{esc(n.state)}</td>'
        f'<td><ul class="reasons">{"".join(f"<li>{esc(r)}</li>" for r in n.reasons)}</ul></td></tr>'
        for n in group.nodes
    )
    return (
        '<table class="excluded"><thead><tr><th>node</th><th>state</th><th>why</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


EXCLUDED_CSS = """
details.ex-group { border-left-color: var(--none); }
details.ex-group.r3 { border-left-color: var(--fail); } details.ex-group.r2 { border-left-color: var(--unknown); }
details.ex-group > summary .count { font-weight: 600; }
ul.ex-nodes { display: flex; flex-wrap: wrap; gap: 2px 10px; list-style: none; padding: 0; margin: 6px 0;
              font: 12px/1.5 ui-monospace, Menlo, Consolas, monospace; max-height: 260px; overflow-y: auto; }
ul.ex-nodes li:target, table.excluded tr:target { background: #fff3c4; }
"""


def excluded_section(report: RackReport) -> Section:
    """One line per group of nodes excluded for the same reasons, each opening to its nodes."""
    groups = group_excluded(report.nodes)
    total = sum(len(g.nodes) for g in groups)
    if not groups:
        return Section(
            "excluded", "Excluded nodes and why (0)", '<p class="empty">none: every node is golden</p>'
        )
    out = []
    for g in groups:
        count = len(g.nodes)
        who = f"{count} nodes" if count > 1 else esc(g.nodes[0].name)
        said = any(x.startswith("state ") for x in g.gists)  # the headline names the state already
        states = "" if said else f' <span class="meta">({esc(_states(g.nodes))})</span>'
        out.append(
            f'<details class="ex-group r{g.rank}" id="{esc(g.id)}" data-nodes="{count}"'
            f"{' open' if count == 1 and len(groups) <= 12 else ''}>"
            f'<summary><span class="count">{who}</span>: {esc(g.headline)}{states}</summary>'
            f"{_members(g)}</details>"
        )
    title = f"Excluded nodes and why ({total} in {len(groups)} group{'s' if len(groups) > 1 else ''})"
    return Section("excluded", title, "".join(out))
