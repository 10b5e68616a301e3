"""The run ledger on SQLite and PostgreSQL: claims (atomic, under real concurrency), endings
(however the run ends), abandoned runs (pid gone, heartbeat stale), aborting, queueing."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import subprocess
import time
from datetime import timedelta

import pytest
from sqlalchemy import update

from bringup.core.errors import UserError
from bringup.fleet import run_list, runs
from bringup.fleet.models import Run, utcnow
from bringup.fleet.store import FleetStore

NODES = ("n1", "n2", "n3")


@pytest.fixture
def store(store_url) -> FleetStore:
    s = FleetStore(store_url)
    for name in NODES:
        s.enroll(name, "r1", "p")
    return s


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_run_claims_its_nodes_and_a_second_run_on_any_of_them_refuses(store):
    first = runs.start_run(store, "burnin", "r1", nodes=["n1", "n2"])
    assert first.controller_pid == os.getpid() and first.controller_host == runs.this_host()
    with pytest.raises(runs.NodesBusy) as refused:
        runs.start_run(store, "configure", "r1", nodes=["n2", "n3"])
    message = str(refused.value)
    assert f"n2 is held by burnin run {first.id} (controller {runs.this_host()} pid {os.getpid()}" in message
    assert "started 0 s ago" in message and f"burnin runs abort {first.id}" in message
    assert "n3" not in message  # only what is taken is named
    # All or nothing: the refused run left no run and no claim behind (n3 is free).
    assert [h.nodes for h in runs.holders(store)] == [("n1", "n2")]
    other = runs.start_run(store, "burnin", "r1", nodes=["n3"])
    assert runs.live_holders(store, ["n3"])["n3"].run_id == other.id


def test_a_refusal_logs_nothing(store, caplog):
    """psycopg's pipeline (executemany) logged 'error ignored terminating ... pipeline aborted' on
    every refused claim, on the operator's terminal."""
    runs.start_run(store, "burnin", "r1", nodes=list(NODES))
    caplog.set_level(logging.DEBUG, logger="psycopg")
    with pytest.raises(runs.NodesBusy):
        runs.start_run(store, "burnin", "r1", nodes=list(NODES))
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_claim_dies_with_its_run(store):
    run = runs.start_run(store, "burnin", "r1", nodes=["n1"])
    assert runs.end_run(store, run.id, "done")
    assert runs.holders(store) == []
    assert store.get_run(run.id).status == "done" and store.get_run(run.id).finished_at is not None
    runs.start_run(store, "burnin", "r1", nodes=["n1"])  # free again


def test_a_claim_left_by_a_run_ended_elsewhere_holds_nothing(store):
    """A run ended by the store's plain finish_run (an older caller) left its claims behind."""
    run = runs.start_run(store, "burnin", "r1", nodes=["n1"])
    store.finish_run(run.id, "done")
    fresh = runs.start_run(store, "burnin", "r1", nodes=["n1"])
    assert [(h.run_id, h.nodes) for h in runs.holders(store)] == [(fresh.id, ("n1",))]


def test_unknown_nodes_are_refused(store):
    with pytest.raises(UserError, match="no node nope"):
        runs.start_run(store, "burnin", "r1", nodes=["n1", "nope"])
    assert runs.holders(store) == []


def _race(url: str, barrier, results) -> None:
    store = FleetStore(url)
    barrier.wait()
    try:
        run = runs.start_run(store, "burnin", "r1", nodes=list(NODES))
        results.put(("won", run.id))
    except runs.NodesBusy as exc:
        results.put(("refused", str(exc)))
    barrier.wait()  # the winner stays alive until every racer has tried: its pid holds the claim


@pytest.mark.parametrize("racers", [2, 4])
def test_racing_processes_exactly_one_wins(store, store_url, racers):
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(racers), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(store_url, barrier, results)) for _ in range(racers)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    won = [o for o in outcomes if o[0] == "won"]
    assert len(won) == 1, outcomes
    assert all(f"held by burnin run {won[0][1]}" in o[1] for o in outcomes if o[0] == "refused")
    with store.reading() as s:
        assert s.query(Run).count() == 1  # the refused runs left no record


def test_a_block_that_ends_normally_records_the_outcome(store):
    with runs.run_ledger(store, "burnin", "r1", nodes=["n1"]) as run:
        run.finish("failed")
    assert store.get_run(run.id).status == "failed" and runs.holders(store) == []
    with runs.run_ledger(store, "burnin", "r1", nodes=["n1"]) as run:
        pass
    assert store.get_run(run.id).status == "done"
    with pytest.raises(ValueError, match="abandoned"):
        run.finish("abandoned")  # the ledger's word, not the caller's


def test_an_exception_is_recorded_as_error_with_its_one_line(store):
    with pytest.raises(RuntimeError), runs.run_ledger(store, "burnin", "r1", nodes=["n1"]) as run:
        raise RuntimeError("ssh fan-out broke\nsecond line")
    ended = store.get_run(run.id)
    assert (ended.status, ended.end_reason) == ("error", "RuntimeError: ssh fan-out broke")
    assert runs.holders(store) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_ends_the_run_interrupted_and_the_old_handler_comes_back(store, sig):
    before = signal.getsignal(sig)
    with pytest.raises(KeyboardInterrupt), runs.run_ledger(store, "burnin", "r1", nodes=["n1"]) as run:
        os.kill(os.getpid(), sig)
        time.sleep(30)  # the handler raises long before
    ended = store.get_run(run.id)
    assert (ended.status, ended.end_reason) == ("interrupted", signal.Signals(sig).name)
    assert signal.getsignal(sig) is before and runs.holders(store) == []


def test_a_run_whose_pid_is_gone_on_this_host_is_marked_abandoned_by_the_next_run(store):
    stale = runs.start_run(store, "burnin", "r1", nodes=["n1", "n2"])
    pid = dead_pid()
    with store.session() as s:
        s.execute(update(Run).where(Run.id == stale.id).values(controller_pid=pid))
    fresh = runs.start_run(store, "burnin", "r1", nodes=["n1"])  # takes n1 over
    ended = store.get_run(stale.id)
    assert ended.status == "abandoned" and f"pid {pid} on {runs.this_host()}) is gone" in ended.end_reason
    for node in ("n1", "n2"):  # one event on each node it held
        (event,) = [e for e in store.history(node) if e.kind == "run-abandoned"]
        assert event.run_id == stale.id and "is gone" in event.reason
    assert [(h.run_id, h.nodes) for h in runs.holders(store)] == [(fresh.id, ("n1",))]


def test_a_run_whose_pid_now_names_another_process_is_abandoned(store):
    """A pid is reused after its process ends; the process's start time tells them apart."""
    run = runs.start_run(store, "burnin", "r1", nodes=["n1"])
    assert run.params["controller_started"] == runs.process_start(os.getpid())
    assert runs.sweep_abandoned(store) == []  # this very process: alive
    with store.session() as s:
        params = {**run.params, "controller_started": run.params["controller_started"] - 1}
        s.execute(update(Run).where(Run.id == run.id).values(params=params))
    (marked,) = runs.sweep_abandoned(store)
    assert "that pid is another process now" in store.get_run(marked.id).end_reason


def test_another_hosts_run_is_abandoned_only_when_its_heartbeat_is_stale(store):
    run = runs.start_run(store, "burnin", "r1", nodes=["n1"], heartbeat_s=10)
    with store.session() as s:
        s.execute(update(Run).where(Run.id == run.id).values(controller_host="elsewhere", controller_pid=1))
    assert runs.sweep_abandoned(store) == []  # heartbeat fresh: alive, wherever it runs
    with store.session() as s:
        old = utcnow() - timedelta(seconds=31)
        s.execute(update(Run).where(Run.id == run.id).values(heartbeat_at=old))
    (marked,) = runs.sweep_abandoned(store)
    assert marked.id == run.id
    reason = store.get_run(run.id).end_reason
    assert "elsewhere pid 1) stopped renewing its heartbeat 31 s ago (grace 30 s)" in reason


def test_a_run_from_an_older_bringup_without_controller_is_left_alone(store):
    legacy = store.start_run("burnin", "r1")
    assert runs.sweep_abandoned(store) == [] and store.get_run(legacy.id).status == "running"


def test_the_heartbeat_is_renewed(store):
    with runs.run_ledger(store, "burnin", "r1", nodes=["n1"], heartbeat_s=0.05) as run:
        first = store.get_run(run.id).heartbeat_at
        deadline = time.monotonic() + 30
        while store.get_run(run.id).heartbeat_at == first and time.monotonic() < deadline:
            time.sleep(0.02)
        assert store.get_run(run.id).heartbeat_at > first


def test_abort_ends_a_run_with_an_event_per_node_and_frees_them(store):
    run = runs.start_run(store, "provision", "r1", nodes=["n1", "n2"])
    aborted = runs.abort_run(store, run.id, "wrong rack", actor="ops@h")
    assert aborted.status == "aborted" and aborted.end_reason == "aborted by ops@h: wrong rack"
    for node in ("n1", "n2"):
        (event,) = [e for e in store.history(node) if e.kind == "run-aborted"]
        assert event.actor == "ops@h" and "wrong rack" in event.reason
    assert runs.holders(store) == []
    with pytest.raises(UserError, match=f"run {run.id} already ended: aborted"):
        runs.abort_run(store, run.id, "again")
    with pytest.raises(UserError, match="no run 999"):
        runs.abort_run(store, 999, "x")
    with pytest.raises(UserError, match="--reason"):
        runs.abort_run(store, run.id, "  ")


def test_a_live_controller_whose_run_was_aborted_stops_and_the_abort_stands(store):
    ledger = runs.run_ledger(store, "burnin", "r1", nodes=["n1"], heartbeat_s=0.05)
    with pytest.raises(runs.RunInterrupted) as stopped, ledger as run:
        runs.abort_run(store, run.id, "operator says stop", actor="ops@h")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(0.02)
    assert "aborted by ops@h: operator says stop" in stopped.value.why
    ended = store.get_run(run.id)
    assert ended.status == "aborted" and ended.end_reason == "aborted by ops@h: operator says stop"


def test_wait_queues_behind_the_holder_until_it_ends(store):
    holder = runs.start_run(store, "burnin", "r1", nodes=["n1"])
    naps = []

    def sleep(seconds: float) -> None:  # the holder ends while the second run waits
        naps.append(seconds)
        runs.end_run(store, holder.id, "done")

    told = []
    queued = runs.start_run(
        store, "burnin", "r1", nodes=["n1"], wait=timedelta(minutes=5), sleep=sleep, on_wait=told.append
    )
    assert len(naps) == 1 and queued.id != holder.id
    assert len(told) == 1 and told[0].startswith(f"n1 is held by burnin run {holder.id} (controller ")
    assert runs.live_holders(store, ["n1"])["n1"].run_id == queued.id


def test_wait_runs_out_with_the_refusal(store):
    runs.start_run(store, "burnin", "r1", nodes=["n1"])
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(runs.NodesBusy, match="n1 is held by burnin run"):
        runs.start_run(
            store, "burnin", "r1", nodes=["n1"], wait=timedelta(seconds=5), clock=lambda: now[0], sleep=sleep
        )
    assert now[0] >= 5


def test_list_runs_marks_abandoned_ones_and_shows_what_each_holds(store):
    gone = runs.start_run(store, "burnin", "r1", nodes=["n1"])
    with store.session() as s:
        s.execute(update(Run).where(Run.id == gone.id).values(controller_pid=dead_pid()))
    live = runs.start_run(store, "configure", "r1", nodes=["n2", "n3"])
    views = {v.id: v for v in run_list.list_runs(store)}
    assert views[gone.id].status == "abandoned" and views[gone.id].held == ()
    assert views[live.id].status == "running" and views[live.id].held == ("n2", "n3")
    assert [v.id for v in run_list.list_runs(store, "other-rack")] == []
    assert run_list.list_runs(store, limit=1)[0].id == live.id  # running runs always shown


def test_the_heartbeat_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(runs.HEARTBEAT_ENV, "2.5")
    assert runs.heartbeat_interval() == 2.5
    monkeypatch.setenv(runs.HEARTBEAT_ENV, "soon")
    with pytest.raises(UserError, match="BRINGUP_HEARTBEAT_S='soon'"):
        runs.heartbeat_interval()
