"""Slurm accounting signals per node (jobs, node-caused failures single- and multi-node, requeues,
single-node failures) on the real sacct/sacctmgr capture, and what they add to a lemon's case."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from bringup.fleet.store import FleetStore
from burnin.history.fleet import fleet_lemons
from burnin.history.jobs import JobSignals, job_signals
from burnin.history.lemons import LemonPolicy, find_lemons, judge_node
from burnin.history.signals import NodeSignals
from burnin.parsers.sacct import parse_node_events, parse_sacct
from burnin.service.slurm import SlurmError
from tests.unit.burnin.history.writer import PastWriter
from tests.unit.burnin.parsers._samples import load

JOBS = parse_sacct(load("slurm_22_05_sacct_parsable2_node_fail_requeued.txt"))
EVENTS = parse_node_events(load("slurm_22_05_sacctmgr_list_event_node_down.txt"))
START, END = datetime(2026, 11, 24, 9, 0), datetime(2026, 11, 24, 10, 0)


def ids(runs) -> list[str]:
    return [r.job_id for r in runs]


def test_signals_of_the_captured_jobs():
    sig = job_signals(JOBS, EVENTS, START, END)
    assert set(sig) == {"node01", "node02", "node03"}  # the pending runs ("None assigned") are on no node
    n1, n2, n3 = sig["node01"], sig["node02"], sig["node03"]
    assert (n1.jobs, n2.jobs, n3.jobs) == (6, 6, 4)
    assert (n1.single_node_jobs, n2.single_node_jobs, n3.single_node_jobs) == (2, 2, 3)
    # single-node NODE_FAIL: the node set DOWN under job 4, slurmd killed under job 5
    assert ids(n3.node_fail_single) == ["4", "5"] and n3.node_fail_single[0].source.table == "sacct"
    # the 3-node job 7 is blamed on node02 alone: Slurm recorded it DOWN the second job 7 ended
    assert ids(n2.node_fail_multi) == ["7"] and n1.node_fail_multi == [] and n3.node_fail_multi == []
    assert "node02 DOWN at 2026-11-24T09:36:30 (p27f-multi)" in n2.node_fail_multi[0].why
    assert ids(n3.node_caused) == ["4", "5"] and ids(n2.node_caused) == ["7"]
    # job 4 failed with its node and ran again (requeued); job 6 was requeued by scontrol
    assert ids(n3.requeues) == ["4"] and ids(n1.requeues) == ids(n2.requeues) == ["6"]
    # job 5 was --no-requeue: not a requeue
    assert "5" not in ids(n3.requeues)
    assert ids(n3.single_node_failures) == ["4", "5", "9_1"] and n3.single_node_failure_rate == 1.0
    assert ids(n2.single_node_failures) == ["2"] and n2.single_node_failure_rate == 0.5


def test_a_multi_node_node_fail_with_no_node_event_is_blamed_on_none():
    sig = job_signals(JOBS, [], START, END)
    assert sig["node02"].node_fail_multi == []
    assert all(ids(sig[n].node_fail_unexplained) == ["7"] for n in ("node01", "node02", "node03"))


def test_an_event_long_before_the_job_does_not_blame_its_node():
    moved = [dataclasses.replace(e, start=e.start - timedelta(hours=1)) for e in EVENTS]
    assert job_signals(JOBS, moved, START, END)["node02"].node_fail_multi == []


def test_only_runs_that_ended_in_the_window_count():
    sig = job_signals(JOBS, EVENTS, datetime(2026, 11, 24, 9, 36), END)
    assert ids(sig["node03"].node_fail_single) == ["5"] and "node03" in sig


def _node_fails(node: str, n: int, nodes: int = 1) -> JobSignals:
    text = "JobID|State|NodeList|End|Start\n" + "".join(
        f"{i}|NODE_FAIL|{node if nodes == 1 else f'{node},other'}|2026-11-24T0{i}:00:00|2026-11-24T0{i}:00:00\n"
        for i in range(1, n + 1)
    )
    return job_signals(parse_sacct(text), [], START - timedelta(hours=9), END)[node]


def test_four_node_fail_jobs_make_a_lemon_with_that_evidence():
    lemon = judge_node(NodeSignals("gpu001"), LemonPolicy(), "28 days", _node_fails("gpu001", 4))
    assert lemon is not None and lemon.rules == ["node-caused job failures"]
    assert "4 NODE_FAIL jobs in 28 days (4 single-node, 0 multi-node; last: job 4)" in lemon.summary
    assert lemon.sources == ["sacct #1", "sacct #2", "sacct #3", "sacct #4"]


def test_one_node_fail_job_alone_is_not_a_lemon_and_unexplained_ones_never_count():
    assert judge_node(NodeSignals("gpu001"), LemonPolicy(), "28 days", _node_fails("gpu001", 1)) is None
    unexplained = _node_fails("gpu001", 6, nodes=2)
    assert len(unexplained.node_fail_unexplained) == 6 and unexplained.node_caused == []
    assert judge_node(NodeSignals("gpu001"), LemonPolicy(), "28 days", unexplained) is None


def test_policy_threshold_for_node_fail_jobs():
    jobs = {"gpu001": _node_fails("gpu001", 2)}
    signals = {"gpu001": NodeSignals("gpu001")}
    assert find_lemons(signals, LemonPolicy(), "28 days", jobs) == []
    (lemon,) = find_lemons(signals, LemonPolicy(max_node_fail_jobs=2), "28 days", jobs)
    assert lemon.node == "gpu001"


NOW = datetime(2026, 11, 24, 10, 0, tzinfo=timezone.utc)


def _utc(records):
    return [
        dataclasses.replace(
            r, **{k: getattr(r, k).replace(tzinfo=timezone.utc) for k in ("start", "end") if getattr(r, k)}
        )
        for r in records
    ]


@pytest.fixture
def fleet(store_url, tmp_path):
    w = PastWriter(FleetStore(store_url))
    for n in ("node01", "node02", "node03"):
        w.golden(n, "lab", NOW - timedelta(days=60))
    # node03: GPU 2 failed, was repaired, failed again: a lemon by the store alone
    w.fail("node03", NOW - timedelta(days=9), "GPU 2")
    w.repair("node03", NOW - timedelta(days=8), "GPU 2 replaced")
    w.fail("node03", NOW - timedelta(days=3), "GPU 2")
    return w.store, tmp_path


def test_fleet_lemons_adds_the_accounting_evidence(fleet):
    store, inv = fleet
    report = fleet_lemons(store, None, None, inv, now=NOW, accounting=lambda s, e: (_utc(JOBS), _utc(EVENTS)))
    assert report.accounting == "read: 13 job runs, 5 node events (sacct, sacctmgr)"
    (lemon,) = report.lemons
    assert lemon.node == "node03" and lemon.rules == ["same part again"]
    assert "2 NODE_FAIL jobs in 28 days (2 single-node, 0 multi-node; last: job 5)" in lemon.evidence
    assert "1 requeued job(s)" in lemon.evidence and {"sacct #4", "sacct #5"} <= set(lemon.sources)
    assert report.to_dict()["slurm_accounting"] == report.accounting


def test_accounting_that_cannot_be_read_is_said_and_the_store_still_judges(fleet):
    store, inv = fleet

    def broken(start, end):
        raise SlurmError("`sacct --allusers --duplicates` exited 1: Slurm accounting storage is disabled")

    report = fleet_lemons(store, None, None, inv, now=NOW, accounting=broken)
    assert report.accounting.startswith("not read: `sacct") and "disabled" in report.accounting
    assert [lemon.node for lemon in report.lemons] == ["node03"]
