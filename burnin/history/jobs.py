"""Per-node signals from Slurm accounting (pure): jobs per node, node-caused job failures (single-node
and multi-node), requeues, single-node job failures; each with the accounting row it came from.

Input: ``sacct --allocations --duplicates`` records and ``sacctmgr list event`` node events
(``burnin.parsers.sacct``) over a window. Definitions (docs/reliability.md):

- a **job** is one run of one job on a node (with ``--duplicates`` a requeued job has one row
  per run); a run that never started (``None assigned``) is on no node;
- a **node-caused failure** is a run that ended ``NODE_FAIL``: Slurm ended it because a node of
  it failed. A single-node run names its node. A multi-node run is blamed on the node(s) of it
  that Slurm recorded going down (a ``DOWN`` node event) from ``BLAME_SLACK`` before the run
  started to ``BLAME_SLACK`` after it ended, and still down when it started (a node back up
  before the run began did not end it); with no such event it is blamed on none, and each of
  its nodes counts it as "in an unexplained multi-node NODE_FAIL";
- a **requeue** is a run that ended ``REQUEUED`` (``scontrol requeue``), or ``NODE_FAIL`` with a
  later row of the same job (requeued after the node failure; the later run may be pending);
- a **single-node job failure** is a single-node run that ended ``FAILED``, ``NODE_FAIL`` or
  ``TIMEOUT``; the single-node failure rate divides them by the node's single-node runs.
  ``FAILED`` is most often the job's own doing: it is context, never a rule by itself.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from burnin.history.signals import Source
from burnin.parsers.sacct import NodeEvent, SacctJob

NODE_FAIL = "NODE_FAIL"
REQUEUED = "REQUEUED"
SINGLE_NODE_FAILURES = frozenset({"FAILED", NODE_FAIL, "TIMEOUT", "OUT_OF_MEMORY"})
BLAME_SLACK = timedelta(seconds=120)  # slurmctld records the node down and the job's end together


@dataclass(frozen=True)
class JobRun:
    """A run that is a signal of a node: a failure, a requeue."""

    job_id: str
    state: str
    end: datetime
    nodes: int  # how many nodes the run had
    why: str  # how it counts against the node: "single-node", "node03 DOWN* Not responding", ...
    source: Source


@dataclass
class JobSignals:
    node: str
    jobs: int = 0  # runs on the node that ended in the window
    single_node_jobs: int = 0
    node_fail_single: list[JobRun] = field(default_factory=list)
    node_fail_multi: list[JobRun] = field(default_factory=list)  # blamed on this node
    node_fail_unexplained: list[JobRun] = field(default_factory=list)  # multi-node, blamed on none
    requeues: list[JobRun] = field(default_factory=list)
    single_node_failures: list[JobRun] = field(default_factory=list)

    @property
    def node_caused(self) -> list[JobRun]:
        return sorted([*self.node_fail_single, *self.node_fail_multi], key=lambda r: r.end)

    @property
    def single_node_failure_rate(self) -> float | None:
        if not self.single_node_jobs:
            return None
        return len(self.single_node_failures) / self.single_node_jobs


def _source(job: SacctJob) -> Source:
    return Source("sacct", job.job_id)


def _blamed(job: SacctJob, events: Mapping[str, list[NodeEvent]]) -> list[tuple[str, NodeEvent]]:
    """The nodes of a multi-node NODE_FAIL run that Slurm recorded going down around it."""
    assert job.end is not None
    begin = (job.start or job.end) - BLAME_SLACK
    out = []
    for node in job.nodes:
        for ev in events.get(node, []):
            over = ev.end is None or ev.end >= (job.start or job.end)  # not a down that ended before
            if ev.state.upper().startswith("DOWN") and over and begin <= ev.start <= job.end + BLAME_SLACK:
                out.append((node, ev))
                break
    return out


def job_signals(
    jobs: Iterable[SacctJob], events: Iterable[NodeEvent], start: datetime, end: datetime
) -> dict[str, JobSignals]:
    """Node -> its accounting signals over [start, end] (runs that ended in the window)."""
    downs: dict[str, list[NodeEvent]] = defaultdict(list)
    for ev in events:
        downs[ev.node].append(ev)
    jobs = list(jobs)
    # sacct --duplicates lists a job's runs in order: a run with a later row of its job ran again
    last_row = {j.job_id: i for i, j in enumerate(jobs)}
    runs = [(i, j) for i, j in enumerate(jobs) if j.end is not None and j.nodes and start <= j.end <= end]
    out: dict[str, JobSignals] = {}

    def sig(node: str) -> JobSignals:
        return out.setdefault(node, JobSignals(node))

    for row, job in sorted(runs, key=lambda r: (r[1].end, r[0])):
        assert job.end is not None
        single = len(job.nodes) == 1
        for node in job.nodes:
            s = sig(node)
            s.jobs += 1
            s.single_node_jobs += single
        if job.state == REQUEUED or (job.state == NODE_FAIL and row < last_row[job.job_id]):
            for node in job.nodes:
                sig(node).requeues.append(
                    JobRun(job.job_id, job.state, job.end, len(job.nodes), "requeued", _source(job))
                )
        if single and job.state in SINGLE_NODE_FAILURES:
            sig(job.nodes[0]).single_node_failures.append(
                JobRun(job.job_id, job.state, job.end, 1, "single-node", _source(job))
            )
        if job.state != NODE_FAIL:
            continue
        if single:
            sig(job.nodes[0]).node_fail_single.append(
                JobRun(job.job_id, job.state, job.end, 1, "single-node", _source(job))
            )
            continue
        blamed = _blamed(job, downs)
        for node, ev in blamed:
            why = (
                f"Slurm event: {node} {ev.state} at {ev.start:%Y-%m-%dT%H:%M:%S} ({ev.reason or 'no reason'})"
            )
            sig(node).node_fail_multi.append(
                JobRun(job.job_id, job.state, job.end, len(job.nodes), why, _source(job))
            )
        if not blamed:
            for node in job.nodes:
                sig(node).node_fail_unexplained.append(
                    JobRun(job.job_id, job.state, job.end, len(job.nodes), "no node event", _source(job))
                )
    return out


def clip_jobs(sig: JobSignals, start: datetime, end: datetime) -> JobSignals:
    """The runs that ended in [start, end] (the job counts are not clipped: kept as they are)."""

    def inside(items: list[JobRun]) -> list[JobRun]:
        return [r for r in items if start <= r.end <= end]

    return JobSignals(
        sig.node,
        sig.jobs,
        sig.single_node_jobs,
        inside(sig.node_fail_single),
        inside(sig.node_fail_multi),
        inside(sig.node_fail_unexplained),
        inside(sig.requeues),
        inside(sig.single_node_failures),
    )
