"""The remediation ladder (pure): a failed node's failure, what was tried, the budget -> the next step
(docs/in-service.md, "Remediation").

The rungs, cheapest first: reset the GPU (``nvidia-smi -r``, only on an idle node), RECONFIGURE
(the configure roles), a power cycle through the BMC, then a person (RMA, reseat, a cable). A
finding's action picks the first rung; a rung that was tried for the same check (its ``tries``)
and the same check failed again is spent, and the next one up is taken, as gpud escalates to
hardware inspection after two reboots for the same Xid (https://github.com/leptonai/gpud).

Nothing acts past the budget: at most ``node_max`` actions on one node within ``node_window_s``,
and at most ``fleet_max`` nodes acted on within ``fleet_window_s`` fleet-wide. A check whose
circuit breaker is tripped is suspect: its failures are not remediated (docs/in-service.md, "The
circuit breaker"). A node with a job on it is not touched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum

from burnin.result import Action


class Rung(str, Enum):
    RESET_GPU = "reset_gpu"
    RECONFIGURE = "reconfigure"
    POWER_CYCLE = "power_cycle"
    PERSON = "person"  # RMA or a person's hands: the ladder stops and says so

    def __str__(self) -> str:
        return self.value


LADDER: tuple[Rung, ...] = (Rung.RESET_GPU, Rung.RECONFIGURE, Rung.POWER_CYCLE, Rung.PERSON)

# The rung a finding's action starts at; every other action (RESEAT, REPLACE_CABLE, RMA,
# UPDATE_FIRMWARE, MONITOR) needs a person.
START: Mapping[Action, Rung] = {
    Action.RESET_GPU: Rung.RESET_GPU,
    Action.RECONFIGURE: Rung.RECONFIGURE,
    Action.REBOOT: Rung.POWER_CYCLE,
}


class Decision(str, Enum):
    ACT = "act"  # carry out the rung now
    WAIT = "wait"  # not now (a job on it, over budget): the next run looks again
    HELD = "held"  # the check's circuit breaker is tripped: not remediated
    PERSON = "person"  # the ladder is spent, or the finding needs hands: stop and say so

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Failure:
    """What a failed node failed: the check, and the actions its critical findings name."""

    check: str
    actions: tuple[Action, ...]


@dataclass(frozen=True)
class Attempt:
    """A rung carried out on a node (a ``remediation`` event), whether its command worked or not."""

    node: str
    time: datetime
    check: str
    rung: Rung


@dataclass(frozen=True)
class Policy:
    node_max: int = 2  # actions on one node within node_window_s
    node_window_s: float = 86400.0
    fleet_max: int = 5  # nodes acted on within fleet_window_s, fleet-wide
    fleet_window_s: float = 3600.0
    # How often a rung is tried for the same check before the next one up: gpud reboots twice.
    tries: Mapping[Rung, int] = field(
        default_factory=lambda: {Rung.RESET_GPU: 1, Rung.RECONFIGURE: 1, Rung.POWER_CYCLE: 2}
    )
    history_s: float = 7 * 86400.0  # attempts older than this no longer count for escalation


@dataclass(frozen=True)
class Step:
    node: str
    decision: Decision
    rung: Rung | None  # the rung to carry out (ACT), or the one it would be (WAIT); None: HELD
    why: str
    check: str = ""


def start_rung(actions: Iterable[Action]) -> Rung:
    """The highest start rung the findings name (a finding that needs a person wins); no action
    at all: a person (nothing says what would fix it)."""
    rungs = [START.get(a, Rung.PERSON) for a in actions]
    return max(rungs, key=LADDER.index) if rungs else Rung.PERSON


def next_rung(failure: Failure, tried: Sequence[Attempt], policy: Policy) -> tuple[Rung, str]:
    """The rung for this failure given the node's attempts for the same check, and why."""
    first = start_rung(failure.actions)
    counts = {r: sum(1 for a in tried if a.rung is r) for r in LADDER}
    spent = [r for r in LADDER[:-1] if counts[r] >= policy.tries.get(r, 1)]
    for rung in LADDER[LADDER.index(first) :]:
        if rung is Rung.PERSON or rung not in spent:
            break
    if rung is Rung.PERSON:
        if first is Rung.PERSON:
            named = ", ".join(sorted({a.value for a in failure.actions})) or "no action"
            return rung, f"{failure.check}: the finding needs a person ({named})"
        done = ", ".join(f"{r.value} x{counts[r]}" for r in LADDER[:-1] if counts[r])
        return rung, f"{failure.check} failed again after {done}: RMA or a person"
    if any(counts[r] for r in LADDER[:-1]):
        done = ", ".join(f"{r.value} x{counts[r]}" for r in LADDER[:-1] if counts[r])
        return rung, f"{failure.check} failed again after {done}: escalate to {rung.value}"
    return rung, f"{failure.check}: the finding says {first.value}"


def decide(
    node: str,
    failure: Failure,
    attempts: Sequence[Attempt],
    now: datetime,
    *,
    busy: str = "",
    tripped: frozenset[str] = frozenset(),
    policy: Policy | None = None,
) -> Step:
    """The next step for one failed node. ``attempts`` are the fleet's (every node's: the fleet
    budget counts them); ``busy`` says why the node may not be touched now ('' : it may)."""
    policy = policy or Policy()
    if failure.check in tripped:
        return Step(
            node,
            Decision.HELD,
            None,
            f"{failure.check}: its circuit breaker is tripped (the check is suspect): not remediated",
            failure.check,
        )
    since = now - timedelta(seconds=policy.history_s)
    same = [a for a in attempts if a.node == node and a.check == failure.check and a.time >= since]
    rung, why = next_rung(failure, same, policy)
    if rung is Rung.PERSON:
        return Step(node, Decision.PERSON, rung, why, failure.check)
    node_since = now - timedelta(seconds=policy.node_window_s)
    mine = sum(1 for a in attempts if a.node == node and a.time >= node_since)
    if mine >= policy.node_max:
        return Step(
            node,
            Decision.WAIT,
            rung,
            f"{why}; node budget spent ({mine} of {policy.node_max} within {_span(policy.node_window_s)})",
            failure.check,
        )
    fleet_since = now - timedelta(seconds=policy.fleet_window_s)
    acted = {a.node for a in attempts if a.time >= fleet_since}
    if node not in acted and len(acted) >= policy.fleet_max:
        return Step(
            node,
            Decision.WAIT,
            rung,
            f"{why}; fleet budget spent ({len(acted)} of {policy.fleet_max} nodes within "
            f"{_span(policy.fleet_window_s)})",
            failure.check,
        )
    if busy:
        return Step(node, Decision.WAIT, rung, f"{why}; {busy}", failure.check)
    return Step(node, Decision.ACT, rung, why, failure.check)


def plan(
    failed: Sequence[tuple[str, Failure, str]],
    attempts: Sequence[Attempt],
    now: datetime,
    *,
    tripped: frozenset[str] = frozenset(),
    policy: Policy | None = None,
) -> list[Step]:
    """One step per (node, failure, busy), in order; each ACT counts toward the budgets of the
    nodes after it, so a run never passes the fleet budget however many nodes failed."""
    seen = list(attempts)
    steps = []
    for node, failure, busy in failed:
        step = decide(node, failure, seen, now, busy=busy, tripped=tripped, policy=policy)
        if step.decision is Decision.ACT and step.rung is not None:
            seen.append(Attempt(node, now, failure.check, step.rung))
        steps.append(step)
    return steps


def _span(seconds: float) -> str:
    if seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    return f"{seconds:g} s"
