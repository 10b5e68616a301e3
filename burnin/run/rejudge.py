"""`burnin rejudge --run N [--set KEY=VALUE]`: judge every result of a saved run again from its
stored evidence, without running anything on any node.

Each node is judged with its profile, with the run's own ``--set`` items applied and then the
new ones (``bringup.profiles.load.apply_overrides``, as `burnin run --set` applies them), so what
changes is what the new items change. Single-node checks judge their kept output again
(stdout, stderr and a non-zero exit status, as burnin.stages.runner keeps them); a group stage
judges its own results again from the records its nodes keep (``GroupStage.replay`` in
burnin/stages/group.py: the ib stage as a whole, the nccl stage per soak group). A result
that cannot be judged again (its evidence pruned or never kept, a run from before the records
were kept, an nccl group the stage localised with trials, a check the first run could not
judge) says why and is never a pass.

The re-judged verdicts are recorded as new results of a new run of kind ``rejudge`` (params:
``of_run``, ``set``, ``run_set``), through the run ledger; it claims no node (it runs nothing
on them), and the original results are left as they are. Each new result keeps the original's
time (when it was measured); a result that could not be re-judged is carried as it was; a
result the node has measured again since is not recorded. The store does with the new results
what it does with any: a golden node with a FAIL among them leaves golden. No other state moves.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bringup.core.errors import UserError
from bringup.fleet.models import CheckResult, Node
from bringup.fleet.runs import RUNNING, run_ledger
from bringup.fleet.store import FleetStore
from bringup.profiles.load import Profile, apply_overrides, find_profile
from burnin.checks.base import CommandOutput, judge
from burnin.checks.cut import told_of_cut
from burnin.evaluate.handed_in import judging_checks
from burnin.result import Finding, Result, Verdict, verdict_of
from burnin.stages import is_group_stage
from burnin.stages.group import GROUP_STAGES, GroupStage, owner
from burnin.stages.runner import EXIT_MARK, STDERR_MARK, result_row

_CUT = re.compile(r"\[\.\.\. (output cut at [^\n]*?), the head and the tail are \.\.\.\]")
_EXIT = re.compile(re.escape(EXIT_MARK) + r"(-?\d+) ---\n\Z")


class NotRejudgeable(UserError):
    """A run that cannot be judged again as a whole (still running, or no results)."""


@dataclass(frozen=True)
class Rejudged:
    """One result of the run, judged again (``new``), or why it could not be (``cannot``)."""

    node: str
    stage: str
    check: str
    result_id: int
    old: Verdict
    old_findings: tuple[dict[str, Any], ...]
    new: Result | None = None
    cannot: str = ""
    evidence: str | None = None  # the text it was judged from (recorded again with the new result)
    time: datetime | None = None  # when it was measured: the new result keeps it
    metrics: dict[str, Any] = field(default_factory=dict)  # the original's (carried when not re-judged)
    superseded: bool = False  # the node has a newer measurement of this check: shown, not recorded

    @property
    def changed(self) -> bool:
        return self.new is not None and (self.new.verdict is not self.old or any(self.changed_findings()))

    @property
    def worse(self) -> bool:
        return self.new is not None and self.new.verdict.rank > self.old.rank

    @property
    def better(self) -> bool:
        return self.new is not None and self.new.verdict.rank < self.old.rank

    def changed_findings(self) -> tuple[list[str], list[str]]:
        """(findings new now, findings gone), by message, non-info ones."""
        if self.new is None:
            return [], []
        before = [f.get("message", "") for f in self.old_findings if f.get("severity") != "info"]
        after = [f.message for f in self.new.findings if f.severity.value != "info"]
        return [m for m in after if m not in before], [m for m in before if m not in after]

    def to_dict(self) -> dict[str, Any]:
        added, gone = self.changed_findings()
        return {
            "node": self.node,
            "stage": self.stage,
            "check": self.check,
            "result": self.result_id,
            "old": self.old.value,
            "new": self.new.verdict.value if self.new else None,
            "cannot_rejudge": self.cannot or None,
            "changed": self.changed,
            "superseded": self.superseded,
            "new_findings": added,
            "gone_findings": gone,
            "reason": self.new.reason if self.new else self.cannot,
        }


@dataclass
class Rejudgement:
    of_run: int
    overrides: tuple[str, ...]
    run_set: tuple[str, ...]  # the run's own --set items, applied first
    items: list[Rejudged] = field(default_factory=list)
    run_id: int | None = None  # the rejudge run that recorded the new results (None: not recorded)

    @property
    def worse(self) -> list[Rejudged]:
        return [i for i in self.items if i.worse]

    def summary(self) -> dict[str, int]:
        judged = [i for i in self.items if i.new is not None]
        return {
            "results": len(self.items),
            "rejudged": len(judged),
            "changed": sum(i.changed for i in judged),
            "worse": sum(i.worse for i in judged),
            "better": sum(i.better for i in judged),
            "cannot_rejudge": len(self.items) - len(judged),
            "superseded": sum(i.superseded for i in self.items),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "of_run": self.of_run,
            "run": self.run_id,
            "set": list(self.overrides),
            "run_set": list(self.run_set),
            "summary": self.summary(),
            "results": [i.to_dict() for i in self.items],
        }


# ---- pure: one output judged again --------------------------------------------------------------


def output_of(evidence: str) -> tuple[CommandOutput, str]:
    """The command output a single-node check's evidence was kept from, and what was cut of it
    ('' when nothing): the inverse of burnin.stages.runner.judge_stage's joining."""
    rc = 0
    found = _EXIT.search(evidence)
    if found:
        rc, evidence = int(found.group(1)), evidence[: found.start()]
    stdout, _, stderr = evidence.partition(STDERR_MARK)
    cut = _CUT.search(evidence)
    return CommandOutput(stdout=stdout, stderr=stderr, rc=rc), cut.group(1) if cut else ""


def rejudge_output(check_name: str, evidence: str, profile: Profile) -> Result:
    """A single-node check's kept output judged again against ``profile``."""
    check = judging_checks().get(check_name)
    if check is None:
        return Result.unknown(check_name, f"no check named {check_name!r} in this burnin")
    output, cut = output_of(evidence)
    result = judge(check, output, profile)
    return told_of_cut(result, cut) if cut else result


# ---- the run ------------------------------------------------------------------------------------


def _rows(store: FleetStore, run_id: int) -> list[tuple[CheckResult, str, str]]:
    with store.reading() as s:
        rows = s.execute(
            select(CheckResult, Node.name, Node.profile)
            .join(Node, Node.id == CheckResult.node_id)
            .where(CheckResult.run_id == run_id)
            .order_by(CheckResult.id)
        ).all()
        return [(r, name, profile) for r, name, profile in rows]


def _profiles(
    names: dict[str, str], profiles_dir: Path, run_set: Sequence[str], overrides: Sequence[str]
) -> dict[str, Profile | str]:
    """Node -> its profile with the run's items and the new ones applied, or why there is none.
    A bad new item raises BadInput before anything is judged or recorded."""
    out: dict[str, Profile | str] = {}
    loaded: dict[str, Profile | str] = {}
    for node, name in names.items():
        if name not in loaded:
            try:
                base = apply_overrides(find_profile(name, profiles_dir), run_set)
            except UserError as exc:
                loaded[name] = f"profile {name!r}: {exc}"
            else:
                loaded[name] = apply_overrides(base, overrides)
        out[node] = loaded[name]
    return out


def _cannot_single(row: CheckResult, evidence: str | None) -> str:
    if row.evidence_pruned_at is not None:
        return f"evidence pruned {row.evidence_pruned_at:%Y-%m-%d %H:%M} UTC (`bringup store prune`)"
    if evidence is None:
        return "no evidence was kept with this result"
    if verdict_of(row.verdict) is Verdict.UNKNOWN:
        # Why it could not be judged (no SSH, a timeout, a crash) is not in its evidence: judging
        # what little came back again could pass what never ran.
        why = (row.metrics or {}).get("reason", "")
        return "the run could not judge it either" + (f" ({why})" if why else "")
    return ""


def rejudge_run(
    store: FleetStore,
    profiles_dir: Path,
    run_id: int,
    overrides: Sequence[str] = (),
    *,
    record: bool = True,
) -> Rejudgement:
    """Judge run ``run_id``'s results again (see the module docstring); with ``record`` the new
    verdicts are saved as a ``rejudge`` run's results."""
    run = store.get_run(run_id)
    if run.status == RUNNING:
        raise NotRejudgeable(f"run {run_id} is still running: re-judge it once it has ended")
    rows = _rows(store, run_id)
    if not rows:
        raise NotRejudgeable(f"run {run_id} ({run.kind}) has no check results to judge again")
    params = run.params or {}
    # A rejudge run's results were judged with its run_set, then its set.
    run_set = tuple(str(x) for x in [*(params.get("run_set") or ()), *(params.get("set") or ())])
    profiles = _profiles({name: prof for _, name, prof in rows}, profiles_dir, run_set, overrides)
    texts = store.evidence_of([r for r, _, _ in rows])
    out = Rejudgement(run_id, tuple(overrides), run_set)
    newest = _newest_times(store, {node for _, node, _ in rows})
    group_rows: list[tuple[GroupStage, CheckResult]] = []
    for row, node, _ in rows:
        evidence = None if row.evidence_pruned_at else texts.get(row.id)
        item = Rejudged(
            node,
            row.stage,
            row.check,
            row.id,
            verdict_of(row.verdict),
            tuple(row.findings or ()),
            evidence=evidence,
            time=row.time,
            metrics=dict(row.metrics or {}),
            superseded=newest.get((node, row.stage, row.check), row.time) > row.time,
        )
        profile = profiles[node]
        if isinstance(profile, str):
            out.items.append(_with(item, cannot=profile))
        elif (stage := owner(row.stage, row.check)) is not None:
            group_rows.append((stage, row))
            out.items.append(item)  # judged below, by its stage, with the other nodes' records
        elif is_group_stage(row.stage):
            out.items.append(_with(item, cannot=f"no rejudge for the {row.stage} stage's {row.check}"))
        elif why := _cannot_single(row, evidence):
            out.items.append(_with(item, cannot=why))
        else:
            assert evidence is not None
            out.items.append(_with(item, new=rejudge_output(row.check, evidence, profile)))
    _rejudge_groups(out, group_rows, profiles)
    if record and any(i.new is not None and not i.superseded for i in out.items):
        _record(store, run.rack, out)
    return out


def _newest_times(store: FleetStore, nodes: set[str]) -> dict[tuple[str, str, str], datetime]:
    """(node, stage, check) -> when the node's latest result of it was measured."""
    return {(n, r.stage, r.check): r.time for n in nodes for r in store.latest_results(n)}


def _with(item: Rejudged, **changes: Any) -> Rejudged:
    return Rejudged(**{**item.__dict__, **changes})


def _rejudge_groups(
    out: Rejudgement, rows: list[tuple[GroupStage, CheckResult]], profiles: dict[str, Profile | str]
) -> None:
    """Each group stage's results judged again by the stage, from every node's record at once
    (an ib session spans two nodes, an nccl record holds its soak group)."""
    usable = {n: p for n, p in profiles.items() if not isinstance(p, str)}
    at = {item.result_id: index for index, item in enumerate(out.items)}
    for stage in GROUP_STAGES:
        mine = [row for of, row in rows if of is stage]
        evidence: dict[str, str] = {}
        for row in mine:
            item = out.items[at[row.id]]
            if item.evidence is None:
                out.items[at[row.id]] = _with(item, cannot=_cannot_single(row, None))
            else:
                evidence[item.node] = item.evidence
        judged = stage.replay(evidence, usable) if evidence else {}
        for row in mine:
            item = out.items[at[row.id]]
            if item.cannot:
                continue
            new = judged.get(item.node, f"no {stage.name} record for this node")
            out.items[at[row.id]] = _with(item, cannot=new) if isinstance(new, str) else _with(item, new=new)


def _record(store: FleetStore, rack: str | None, out: Rejudgement) -> None:
    params = {"of_run": out.of_run, "set": list(out.overrides), "run_set": list(out.run_set)}
    with run_ledger(store, "rejudge", rack, nodes=(), params=params) as ledger:
        out.run_id = ledger.id
        by_node: dict[str, list[dict[str, Any]]] = {}
        for item in out.items:
            if not item.superseded:
                by_node.setdefault(item.node, []).append(_row(item))
        for node, rows in by_node.items():
            store.add_results(node, rows, run_id=ledger.id)
        failed = any(i.new is not None and i.new.verdict is Verdict.FAIL for i in out.items)
        ledger.finish("failed" if failed else "done")


def _row(item: Rejudged) -> dict[str, Any]:
    """The new result, measured when the original was (golden's --max-age counts from then); a
    result that could not be re-judged is carried as it was, so the rejudge run holds each
    node's whole stage (golden reads a stage from one run)."""
    row: dict[str, Any] = {
        "stage": item.stage,
        "check": item.check,
        "evidence": item.evidence,  # the same text: stored once (the blob is shared)
        "time": item.time,
    }
    if item.new is None:
        metrics = {**item.metrics, "carried_from": item.result_id, "not_rejudged": item.cannot}
        return {**row, "verdict": item.old.value, "metrics": metrics, "findings": list(item.old_findings)}
    new = result_row(item.stage, item.new, item.evidence)
    return {**new, "time": item.time, "metrics": {**new["metrics"], "rejudged_from": item.result_id}}


def first_finding(item: Rejudged) -> str:
    """The line that says why the verdict is what it is now."""
    if item.new is None:
        return item.cannot
    added, _ = item.changed_findings()
    if added:
        return added[0]
    worst: Finding | None = next((f for f in item.new.findings if f.severity.value != "info"), None)
    return worst.message if worst else item.new.reason
