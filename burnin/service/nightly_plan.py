"""What the nightly re-test does, decided from facts (pure): which nodes it tests, which golden
nodes stand beside them as partners, what it does with drains a dead nightly left, and how each
node goes back to Slurm afterwards.

Selection (``plan_night``):

- a node in ``repair`` (an operator ran ``bringup nodes mark-repaired``, typically after a health
  check drained it and ``burnin sync`` failed it) is tested;
- a node drained by a nightly run that is no longer alive (``bringup nightly run N``, run N not
  running) is the dead run's leftover: tested again when it was mid-test (``burnin``/``repair``),
  given back when it is ``golden`` (a partner or a revalidated node the dead run never finished;
  when something is tested it may stand as a partner first), left drained otherwise (a finding
  keeps it out; a ``failed`` node with the bare reason gets its finding added: ``keep``);
- with ``revalidate_pct``, that share of the golden pool (at least one node when the share is
  above 0), the nodes proven longest ago first, among those Slurm shows in service (not drained);
- partners: golden nodes Slurm shows idle and not drained (or drained only by a dead nightly),
  only when something is tested: the ib stage pairs the tested nodes' ports with theirs and the
  nccl stage soaks each tested node beside them as proven-good anchors. Per hardware profile
  among the tested nodes (the nccl stage soaks each profile on its own, and rails and rates are
  the profile's), nodes of that profile in rack order, up to ``partners`` for that profile (by
  default one per tested node of it, at least two: ``partner_count``); a profile with too few
  free gets what there is, and ``NightPlan.notes`` says so.

Return (``return_action``): a node is resumed only when it is golden after the night and its drain
is one this project set (``bringup: ...`` by a health check, ``bringup ...`` by a nightly): never
an operator's (NHC's rule). A failed node stays drained, the reason rewritten to its finding.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

from burnin.parsers.slurm import SlurmNode
from burnin.plan.partners import Candidate, choose_partners
from burnin.service.reasons import DrainOrigin, drain_origin, fit_reason

NIGHTLY_PREFIX = "bringup nightly run "
_NIGHTLY = re.compile(r"bringup nightly run (\d+)\b")
BUSY_STATES = frozenset({"allocated", "mixed", "completing", "draining"})


def nightly_reason(run_id: int, finding: str = "") -> str:
    """The Slurm reason of a nightly's drain: ``bringup nightly run N`` (``: finding`` after a fail)."""
    return fit_reason(f"{NIGHTLY_PREFIX}{run_id}" + (f": {finding}" if finding else ""))


def nightly_run_of(reason: str) -> int | None:
    """N of a ``bringup nightly run N`` reason, None for any other reason."""
    m = _NIGHTLY.match(reason)
    return int(m.group(1)) if m else None


def is_busy(node: SlurmNode) -> bool:
    """Jobs still run on it (a drained node with jobs is DRAINING until they end)."""
    return node.state in BUSY_STATES


@dataclass(frozen=True)
class NodeView:
    """One node of the rack: its lifecycle state, Slurm's view (None: Slurm does not know it),
    when its newest result was recorded (None: never), and its hardware profile (the inventory
    host's ``profile``: partners are chosen among the nodes of the tested node's own)."""

    name: str
    state: str
    slurm: SlurmNode | None
    proven_at: datetime | None = None
    profile: str = ""


class Why(str, Enum):
    REPAIRED = "repaired"  # in repair: marked repaired by an operator
    LEFTOVER = "left by a dead run"  # drained mid-test by a nightly that died
    REVALIDATE = "revalidate"  # golden, proven longest ago
    PARTNER = "partner"  # golden, beside the tested nodes
    IDLE = "idle"  # golden and idle: re-tested as a preemptible job (--idle)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Pick:
    node: str
    why: Why
    note: str = ""


@dataclass
class NightPlan:
    tested: list[Pick] = field(default_factory=list)
    partners: list[Pick] = field(default_factory=list)
    give_back: list[Pick] = field(default_factory=list)  # golden, drained by a dead nightly: resume
    keep: list[Pick] = field(default_factory=list)  # failed, a dead nightly's bare drain: add the finding
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (node, why not)
    notes: list[str] = field(default_factory=list)  # the night as a whole: a profile short of partners

    @property
    def nodes(self) -> list[str]:
        """Every node the night holds: tested, then partners."""
        return [p.node for p in (*self.tested, *self.partners)]


def outside_reservation(plan: NightPlan, reserved: Collection[str]) -> list[str]:
    """The nodes the night would hold (tested, partners) that the reservation does not cover.
    Inside a reservation the night drains nothing, so a user's job could land on these mid-test."""
    covered = set(reserved)
    return [n for n in plan.nodes if n not in covered]


def revalidation_count(pool: int, pct: float) -> int:
    """How many golden nodes a night revalidates: ``pct`` % of the pool, at least 1 above 0 %."""
    if pct <= 0 or pool <= 0:
        return 0
    return min(pool, max(1, math.floor(pool * pct / 100)))


def plan_night(
    views: Sequence[NodeView],
    live_runs: Collection[int],
    *,
    revalidate_pct: float = 0.0,
    partners: int | None = None,
) -> NightPlan:
    """Which nodes the night tests, which stand beside them, and what a dead run left (see above)."""
    plan = NightPlan()
    taken: set[str] = set()
    for v in views:
        s = v.slurm
        run = nightly_run_of(s.reason) if s is not None and s.drain else None
        if run is not None and run in live_runs:
            plan.skipped.append((v.name, f"held by the live nightly run {run}"))
            taken.add(v.name)
            continue
        if run is not None:
            note = f"drained by nightly run {run}, which is gone"
            if v.state in ("burnin", "repair"):
                plan.tested.append(Pick(v.name, Why.LEFTOVER, note))
            elif v.state == "golden":
                plan.give_back.append(Pick(v.name, Why.LEFTOVER, note))
            elif v.state == "failed" and s is not None and s.reason == nightly_reason(run):
                plan.keep.append(Pick(v.name, Why.LEFTOVER, f"{note}; failed: stays drained"))
            else:
                plan.skipped.append((v.name, f"{note}; {v.state}: stays drained"))
            taken.add(v.name)
            continue
        if v.state == "repair":
            note = ""
            if s is not None and s.drain and drain_origin(s.reason) is DrainOrigin.OPERATOR:
                note = f"drained by an operator ({s.reason}): tested, never resumed"
            plan.tested.append(Pick(v.name, Why.REPAIRED, note))
            taken.add(v.name)
    in_service = [
        v
        for v in views
        if v.name not in taken and v.state == "golden" and v.slurm is not None and not v.slurm.drain
    ]
    count = revalidation_count(
        len([v for v in views if v.state == "golden" and v.name not in taken]), revalidate_pct
    )
    oldest = sorted(in_service, key=lambda v: (v.proven_at is not None, v.proven_at or datetime.min))
    for v in oldest[:count]:
        plan.tested.append(
            Pick(v.name, Why.REVALIDATE, f"proven {v.proven_at:%Y-%m-%d %H:%M}" if v.proven_at else "")
        )
        taken.add(v.name)
    if plan.tested:
        # A golden node a dead night left drained is proven and free: it stands beside the
        # re-test (the night gives it back at its end) rather than leave a leftover alone.
        free_names = {p.node for p in plan.give_back} | {v.name for v in in_service if v.name not in taken}
        free = [v for v in views if v.name in free_names and not is_busy(v.slurm)]  # type: ignore[arg-type]
        chosen = _partners(plan, free, {v.name: v.profile for v in views}, partners)
        plan.partners = [Pick(v.name, Why.PARTNER) for v in free if v.name in chosen]  # rack order
        plan.give_back = [p for p in plan.give_back if p.node not in chosen]
    return plan


def _partners(
    plan: NightPlan, free: Sequence[NodeView], profiles: dict[str, str], cap: int | None
) -> set[str]:
    """The free golden nodes that stand beside ``plan.tested`` (burnin/plan/partners.py: of each
    tested node's profile, in rack order); a profile with too few free gets what there is, and
    ``plan.notes`` says so."""
    tested = [Candidate(p.node, profiles.get(p.node, "")) for p in plan.tested]
    choice = choose_partners(tested, [Candidate(v.name, v.profile) for v in free], cap)
    plan.notes.extend(choice.notes)
    return set(choice.chosen)


def plan_idle(views: Sequence[NodeView], revalidate_pct: float = 0.0) -> list[Pick]:
    """``--idle``: golden nodes Slurm shows idle and not drained, proven longest ago first; all of
    them, or ``revalidate_pct`` % of the golden pool when given."""
    idle = [
        v
        for v in views
        if v.state == "golden" and v.slurm is not None and not v.slurm.drain and v.slurm.state == "idle"
    ]
    idle.sort(key=lambda v: (v.proven_at is not None, v.proven_at or datetime.min))
    if revalidate_pct > 0:
        idle = idle[: revalidation_count(sum(1 for v in views if v.state == "golden"), revalidate_pct)]
    return [Pick(v.name, Why.IDLE) for v in idle]


# ---- giving nodes back -------------------------------------------------------------------------


class Return(str, Enum):
    RESUME = "resume"  # golden again, drained by this project: back in service
    KEEP = "keep drained"  # failed or not proven: drained, with the finding as the reason
    LEAVE = "left alone"  # an operator's drain, or Slurm does not know the node
    NOTHING = "-"  # not drained and nothing to drain

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ReturnAction:
    action: Return
    reason: str = ""  # the drain reason to set (KEEP), or why LEAVE
    note: str = ""


def return_action(state: str, slurm: SlurmNode | None, run_id: int, finding: str = "") -> ReturnAction:
    """What to do in Slurm with a node the night held, from its lifecycle state after the night and
    Slurm's view now. ``finding``: why it failed (or was not proven)."""
    if slurm is None:
        return ReturnAction(Return.LEAVE, note="not in Slurm")
    if slurm.drain and drain_origin(slurm.reason) is DrainOrigin.OPERATOR:
        who = f" ({slurm.user})" if slurm.user else ""
        return ReturnAction(
            Return.LEAVE, note=f"drained by an operator{who}: {slurm.reason}; never resumed here"
        )
    if state == "golden":
        return ReturnAction(Return.RESUME) if slurm.drain else ReturnAction(Return.NOTHING)
    if state == "failed":
        return ReturnAction(Return.KEEP, nightly_reason(run_id, finding or "failed"))
    if state == "retired":
        return ReturnAction(Return.LEAVE, note="retired")
    # burnin / repair: not proven this night (UNKNOWN, skipped stage): out until a night proves it
    return ReturnAction(Return.KEEP, nightly_reason(run_id, f"not proven: {finding or state}"))
