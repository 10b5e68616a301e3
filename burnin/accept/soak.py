"""The soak: the soak stages again and again until the soak's end, on the nodes still passing.

The loop is the same for 72 hours and for the lab's few minutes. What it has done lives in the
fleet store (one burn-in run per iteration, burnin/accept/ledger.py), so a controller that is
killed and started again continues where the store says: an iteration whose run did not finish
is run again under the same number, and the soak's end stays where the acceptance's start put it.
A node that fails (or cannot be judged) in an iteration is out of every later one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from burnin.accept.decide import ResultRow
from burnin.accept.ledger import IterationRecord
from burnin.result import PASSING, verdict_of


@dataclass(frozen=True)
class SoakPlan:
    start: datetime  # when the acceptance began (the first invocation)
    soak_s: float
    stages: tuple[str, ...]

    @property
    def end(self) -> datetime:
        return self.start + timedelta(seconds=self.soak_s)


def next_iteration(done: Iterable[IterationRecord]) -> int:
    """The soak iteration to run next: one past the last that finished (the first is 1; 0 is the
    order's stages)."""
    return max((i.iteration for i in done if i.finished and i.iteration >= 1), default=0) + 1


def failed_nodes(rows: Iterable[ResultRow]) -> dict[str, int | None]:
    """Node -> the run id of its first result that is not a pass (FAIL or UNKNOWN)."""
    out: dict[str, int | None] = {}
    for r in rows:
        if verdict_of(r.verdict) not in PASSING and r.node not in out:
            out[r.node] = r.run_id
    return out


def still_in(nodes: Sequence[str], rows: Iterable[ResultRow], out_of_run: Iterable[str] = ()) -> list[str]:
    """The nodes that stay in the soak: none of their results so far failed, and nothing else
    took them out (``out_of_run``: no longer in a state burn-in starts from)."""
    gone = set(failed_nodes(rows)) | set(out_of_run)
    return [n for n in nodes if n not in gone]


def should_continue(plan: SoakPlan, now: datetime, done: Sequence[IterationRecord]) -> bool:
    """Another iteration starts while the soak lasts. A restart after the end still runs one
    when no soak iteration finished (a soak with nothing recorded proves nothing), and runs
    again the iteration a killed controller began before the end: an iteration that starts
    before the end runs to its end (docs/acceptance.md)."""
    if plan.soak_s <= 0:
        return False
    if now < plan.end:
        return True
    number = next_iteration(done)
    if number == 1:
        return True
    return any(i.iteration == number and not i.finished and i.started_at < plan.end for i in done)


def run_soak(
    plan: SoakPlan,
    load: Callable[[], tuple[list[IterationRecord], list[str]]],
    run_iteration: Callable[[int, list[str]], None],
    now: Callable[[], datetime],
    on_iteration: Callable[[int, list[str]], None] | None = None,
) -> int:
    """Run soak iterations until the soak is over or no node is left; returns how many ran now.

    ``load()`` reads the store: the acceptance's iterations so far and the nodes still in.
    ``run_iteration(number, nodes)`` runs one (a burn-in run tagged with its number)."""
    ran = 0
    while True:
        done, nodes = load()
        if not nodes or not should_continue(plan, now(), done):
            return ran
        number = next_iteration(done)
        if on_iteration is not None:
            on_iteration(number, nodes)
        run_iteration(number, nodes)
        ran += 1
