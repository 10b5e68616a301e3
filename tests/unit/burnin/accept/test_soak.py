"""The soak loop: iterations until the soak's end, a failed node out of the rest, and a restart
that continues from what the store holds (here a list standing in for the run ledger)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from burnin.accept.decide import ResultRow
from burnin.accept.ledger import IterationRecord
from burnin.accept.soak import SoakPlan, failed_nodes, next_iteration, run_soak, should_continue, still_in

T0 = datetime(2026, 5, 1, 8, 0, tzinfo=timezone.utc)


def it(number: int, status: str = "done", run_id: int | None = None) -> IterationRecord:
    return IterationRecord(number, run_id or 100 + number, status, T0, T0, ("n1", "n2"))


def row(node: str, verdict: str, run_id: int = 1, rid: int = 1) -> ResultRow:
    return ResultRow(rid, node, run_id, "gpu", "gpu_stress", verdict, (), {}, T0, False)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


class Ledger:
    """What the store would hold: iterations and results; ``fail_at`` fails a node from then on."""

    def __init__(self, nodes, clock: Clock, step: timedelta, fail_at: dict[str, int] | None = None):
        self.nodes, self.clock, self.step, self.fail_at = list(nodes), clock, step, fail_at or {}
        self.done: list[IterationRecord] = []
        self.rows: list[ResultRow] = []
        self.ran: list[tuple[int, list[str]]] = []
        self.kill_after: int | None = None

    def load(self):
        return list(self.done), still_in(self.nodes, self.rows)

    def run(self, number: int, nodes: list[str]) -> None:
        self.ran.append((number, list(nodes)))
        run_id = 1000 + len(self.ran)
        self.clock.now += self.step
        if self.kill_after is not None and len(self.ran) > self.kill_after:
            started = self.clock.now - self.step
            self.done.append(IterationRecord(number, run_id, "abandoned", started, None, tuple(nodes)))
            raise KeyboardInterrupt("controller killed")
        for n in nodes:
            bad = n in self.fail_at and number >= self.fail_at[n]
            self.rows.append(row(n, "FAIL" if bad else "PASS", run_id, len(self.rows) + 1))
        self.done.append(
            IterationRecord(
                number,
                run_id,
                "failed" if any(r.verdict == "FAIL" for r in self.rows if r.run_id == run_id) else "done",
                T0,
                T0,
                tuple(nodes),
            )
        )


def test_next_iteration_runs_again_the_one_that_did_not_finish():
    assert next_iteration([]) == 1
    assert next_iteration([it(0), it(1), it(2, "failed")]) == 3
    assert next_iteration([it(0), it(1), it(2, "interrupted")]) == 2
    assert next_iteration([it(0), it(1), it(2, "abandoned"), it(2, "done", 9)]) == 3


def test_a_node_that_failed_or_could_not_be_judged_is_out():
    rows = [row("n1", "PASS"), row("n2", "FAIL", 7), row("n3", "UNKNOWN", 8), row("n4", "WARN")]
    assert failed_nodes(rows) == {"n2": 7, "n3": 8}
    assert still_in(["n1", "n2", "n3", "n4", "n5"], rows, ["n5"]) == ["n1", "n4"]


def test_no_soak_runs_nothing_and_a_late_restart_still_runs_one_iteration():
    plan = SoakPlan(T0, 3600, ("gpu",))
    late = T0 + timedelta(hours=2)
    assert not should_continue(SoakPlan(T0, 0, ("gpu",)), T0, [])
    assert should_continue(plan, late, [it(0)])  # nothing soaked yet
    assert not should_continue(plan, late, [it(0), it(1)])
    assert should_continue(plan, T0 + timedelta(minutes=59), [it(0), *map(it, range(1, 6))])


def test_a_late_restart_runs_again_the_iteration_cut_off_before_the_end_and_no_other():
    plan = SoakPlan(T0, 3600, ("gpu",))
    late = T0 + timedelta(hours=2)
    before_end = IterationRecord(2, 7, "abandoned", T0 + timedelta(minutes=50), None, ("n1",))
    after_end = IterationRecord(2, 7, "abandoned", T0 + timedelta(minutes=61), None, ("n1",))
    assert should_continue(plan, late, [it(0), it(1), before_end])  # it started before the end
    assert not should_continue(plan, late, [it(0), it(1), after_end])
    # one that was cut off and then ran to its end is no reason to go on
    assert not should_continue(plan, late, [it(0), it(1), before_end, it(2, "done", 9)])
    assert not should_continue(SoakPlan(T0, 0, ("gpu",)), late, [it(0), before_end])


def test_the_soak_repeats_until_its_end_and_a_node_failing_mid_soak_leaves_it():
    clock = Clock()
    store = Ledger(["n1", "n2", "n3"], clock, timedelta(minutes=10), fail_at={"n2": 3})
    ran = run_soak(SoakPlan(T0, 3600, ("gpu", "ib", "nccl")), store.load, store.run, clock)
    assert ran == 6  # 10-minute iterations over one hour
    assert [n for n, _ in store.ran] == [1, 2, 3, 4, 5, 6]
    assert store.ran[2][1] == ["n1", "n2", "n3"]  # n2 fails in iteration 3...
    assert all(nodes == ["n1", "n3"] for _, nodes in store.ran[3:])  # ...and is out of 4, 5, 6
    assert failed_nodes(store.rows) == {"n2": 1003}


def test_a_restart_continues_the_iteration_the_killed_controller_was_running():
    clock = Clock()
    store = Ledger(["n1", "n2"], clock, timedelta(minutes=10))
    store.kill_after = 2
    plan = SoakPlan(T0, 3600, ("gpu",))
    with pytest.raises(KeyboardInterrupt):
        run_soak(plan, store.load, store.run, clock)
    assert [n for n, _ in store.ran] == [1, 2, 3]  # killed during iteration 3
    store.kill_after = None
    run_soak(plan, store.load, store.run, clock)  # the same command again
    finished = [i.iteration for i in store.done if i.finished]
    # Iteration 3 ran again (the killed attempt's ten minutes count against the soak): no
    # iteration lost, none finished twice.
    assert [n for n, _ in store.ran] == [1, 2, 3, 3, 4, 5]
    assert finished == [1, 2, 3, 4, 5]


def test_a_restart_after_the_end_finishes_the_iteration_the_killed_controller_began_before_it():
    clock = Clock()
    store = Ledger(["n1", "n2"], clock, timedelta(minutes=25))
    store.kill_after = 2
    plan = SoakPlan(T0, 3600, ("gpu",))
    with pytest.raises(KeyboardInterrupt):
        run_soak(plan, store.load, store.run, clock)  # iteration 3 began at 0:50, before the end
    clock.now = T0 + timedelta(hours=5)  # the controller is started again long after the end
    store.kill_after = None
    assert run_soak(plan, store.load, store.run, clock) == 1
    assert [n for n, _ in store.ran] == [1, 2, 3, 3]
    assert [i.iteration for i in store.done if i.finished] == [1, 2, 3]


def test_the_soak_stops_when_no_node_is_left():
    clock = Clock()
    store = Ledger(["n1"], clock, timedelta(minutes=1), fail_at={"n1": 2})
    assert run_soak(SoakPlan(T0, 3600, ("gpu",)), store.load, store.run, clock) == 2
