"""Node failures only Slurm saw: NODE_FAIL jobs (the real sacct/sacctmgr capture) the store has no
failure of, counted once in `burnin reliability` with the sacct rows they came from; a NODE_FAIL
job the store also has as a failure is counted from the store alone."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from bringup.fleet.store import FleetStore
from burnin.history.fleet import fleet_reliability
from burnin.history.jobs import job_signals
from burnin.history.node_fail import KIND, slurm_only_failures
from burnin.history.signals import Failure, NodeSignals, Repair, Source
from burnin.parsers.sacct import parse_node_events, parse_sacct
from burnin.service.slurm import SlurmError
from tests.unit.burnin.history.writer import PastWriter
from tests.unit.burnin.parsers._samples import load

UTC = timezone.utc
JOBS = parse_sacct(load("slurm_22_05_sacct_parsable2_node_fail_requeued.txt"))
EVENTS = parse_node_events(load("slurm_22_05_sacctmgr_list_event_node_down.txt"))
NOW = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)


def _utc(records):
    return [
        dataclasses.replace(
            r, **{k: getattr(r, k).replace(tzinfo=UTC) for k in ("start", "end") if getattr(r, k)}
        )
        for r in records
    ]


def at(hh_mm_ss: str) -> datetime:
    return datetime.fromisoformat(f"2026-11-24T{hh_mm_ss}").replace(tzinfo=UTC)


def _jobs():
    return job_signals(_utc(JOBS), _utc(EVENTS), NOW - timedelta(days=28), NOW)


def _failed(node: str, when: datetime, repaired: datetime | None = None) -> NodeSignals:
    sig = NodeSignals(node, failures=[Failure(when, "gpu_health: GPU 2", Source("events", 9))])
    if repaired:
        sig.repairs = [Repair(repaired, "GPU 2 replaced", Source("events", 10))]
    return sig


def test_a_node_fail_the_store_also_has_is_not_counted_again():
    # node03's jobs 4 and 5 ended NODE_FAIL at 09:30:38 and 09:36:14; the store failed node03 at
    # 09:40 (burnin sync read the drain): the same failure. node02's job 7 (09:36:30, blamed on
    # node02 by its DOWN event) has no store failure: only Slurm saw it.
    signals = {
        "node01": NodeSignals("node01"),
        "node02": NodeSignals("node02"),
        "node03": _failed("node03", at("09:40:00")),
    }
    merge = slurm_only_failures(signals, _jobs())
    assert merge.runs_matched == 2
    (only,) = merge.only_slurm
    assert (only.node, only.time, only.sources) == ("node02", at("09:36:30"), ["sacct #7"])
    assert only.cause == "slurm: NODE_FAIL of a multi-node job (node DOWN: p27f-multi)"


def test_a_failure_still_open_in_the_store_explains_a_later_node_fail():
    # failed at 07:00 and not repaired by 09:36: the jobs that ended NODE_FAIL then are that failure
    signals = {"node03": _failed("node03", at("07:00:00"))}
    assert slurm_only_failures(signals, _jobs()).only_slurm == []
    # repaired at 08:00: the NODE_FAIL jobs after it are a new failure, one incident for both
    # (09:30:38 and 09:36:14 are within the hour: one node failure ends every job on it)
    signals = {"node03": _failed("node03", at("07:00:00"), repaired=at("08:00:00"))}
    (only,) = slurm_only_failures(signals, _jobs()).only_slurm
    assert only.sources == ["sacct #4", "sacct #5"] and only.time == at("09:30:38")
    assert only.cause == "slurm: NODE_FAIL of a single-node job"


def test_nodes_the_store_does_not_hold_are_left_out():
    merge = slurm_only_failures({"node01": NodeSignals("node01")}, _jobs())
    assert merge.only_slurm == [] and merge.runs_matched == 0


@pytest.fixture
def lab(store_url, tmp_path):
    w = PastWriter(FleetStore(store_url))
    for n in ("node01", "node02", "node03"):
        w.golden(n, "lab", NOW - timedelta(days=60))
    w.fail("node03", at("09:40:00"), "GPU 2")  # the store's own failure of node03
    return w.store, tmp_path


def test_reliability_counts_failures_only_slurm_saw_with_their_source(lab):
    store, inv = lab
    rel = fleet_reliability(
        store, None, timedelta(days=28), inv, now=NOW, accounting=lambda s, e: (_utc(JOBS), _utc(EVENTS))
    )
    assert rel.accounting == "read: 13 job runs, 5 node events (sacct, sacctmgr)"
    assert rel.failures == 2  # node03 from the store (its 2 NODE_FAIL jobs with it), node02 from sacct
    assert rel.measured_rate == pytest.approx(1000 * 2 / rel.node_days)
    assert rel.by_component[KIND]["count"] == 1 and rel.by_component["gpu"]["count"] == 1
    assert ("slurm: NODE_FAIL of a multi-node job (node DOWN: p27f-multi)", 1) in rel.top_causes
    assert sum(rel.timeline[KIND]) == 1
    out = rel.to_dict()
    assert out["failures_by_source"] == {
        "store": 1,
        "sacct": 1,
        "sacct_node_fail_runs_counted_from_store": 2,
    }
    assert out["slurm_failures"][0]["node"] == "node02" and out["slurm_failures"][0]["sources"] == [
        "sacct #7"
    ]


def test_reliability_without_accounting_counts_the_store_and_says_why(lab):
    store, inv = lab

    def broken(start, end):
        raise SlurmError("`sacct --allusers` exited 1: Slurm accounting storage is disabled")

    rel = fleet_reliability(store, None, timedelta(days=28), inv, now=NOW, accounting=broken)
    assert (
        rel.failures == 1 and rel.accounting.startswith("not read: `sacct") and KIND not in rel.by_component
    )
    plain = fleet_reliability(store, None, timedelta(days=28), inv, now=NOW)
    assert plain.failures == 1 and plain.accounting == "not read"
