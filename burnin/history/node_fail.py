"""Node failures only Slurm saw (pure): the jobs that ended ``NODE_FAIL`` because of a node
(``burnin.history.jobs``: single-node, or multi-node and blamed on it), less those the fleet store
already counts as a failure of that node, as failures of their own for the failure rate.

A node that dies under a job and comes back passing its checks leaves no failure in the store:
Slurm's record is the only one. When the store has the failure too (``burnin sync`` recorded the
health drain, a check failed the node), it is counted once, from the store. A NODE_FAIL run that
ended at T on node N is the store's failure when the store has a failure of N that

- is open at T (N moved to ``failed`` before T and was not repaired between: the same incident),
- or begins from ``MATCH_BEFORE`` before T to ``MATCH_AFTER`` after it (the store learns of a
  failure when ``burnin sync`` reads the drain or a check fails the node: later, within a day).

The runs left over are grouped per node into incidents: runs that ended within ``INCIDENT`` of the
incident's first are one node failure (it ends every job on the node at once). Each incident is
one failure, its source the sacct rows (``sacct #<job id>``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from burnin.history.jobs import JobRun, JobSignals
from burnin.history.signals import NodeSignals

MATCH_BEFORE = timedelta(hours=1)
MATCH_AFTER = timedelta(hours=24)
INCIDENT = timedelta(hours=1)
# burnin.history.jobs's reason a multi-node run is blamed on a node: its Slurm event
_EVENT = re.compile(r"^Slurm event: \S+ (\S+) at \S+ \((.*)\)$")
KIND = "slurm_node_fail"  # the component kind of a failure only Slurm saw (no part is known)


@dataclass
class SlurmFailure:
    """A node failure only Slurm's accounting recorded: one or more NODE_FAIL runs."""

    node: str
    time: datetime  # the first run's end
    runs: list[JobRun] = field(default_factory=list)

    @property
    def sources(self) -> list[str]:
        return [str(r.source) for r in self.runs]

    @property
    def cause(self) -> str:
        """As the top causes count it: no node name, no time."""
        run = self.runs[0]
        if run.nodes == 1:
            return "slurm: NODE_FAIL of a single-node job"
        m = _EVENT.match(run.why)
        down = f"node {m.group(1)}: {m.group(2)}" if m else run.why
        return f"slurm: NODE_FAIL of a multi-node job ({down})"

    def to_dict(self) -> dict[str, object]:
        return {
            "node": self.node,
            "time": self.time.isoformat(),
            "jobs": [r.job_id for r in self.runs],
            "why": self.runs[0].why,
            "sources": self.sources,
        }


@dataclass
class NodeFailMerge:
    """What accounting adds to the store's failures: the failures only Slurm saw, and how many
    NODE_FAIL runs were the store's own failures (counted once, from the store)."""

    only_slurm: list[SlurmFailure] = field(default_factory=list)
    runs_matched: int = 0  # node-caused NODE_FAIL runs the store also has as a failure

    def by_node(self) -> dict[str, list[SlurmFailure]]:
        out: dict[str, list[SlurmFailure]] = {}
        for f in self.only_slurm:
            out.setdefault(f.node, []).append(f)
        return out


def _in_store(node: NodeSignals, end: datetime) -> bool:
    """Does the store count a failure of the node for a NODE_FAIL run that ended at ``end``?"""
    repairs = sorted(r.time for r in node.repairs)
    for f in node.failures:
        if end - MATCH_BEFORE <= f.time <= end + MATCH_AFTER:
            return True
        if f.time <= end and not any(f.time < t <= end for t in repairs):
            return True  # still failed in the store when the job ended
    return False


def slurm_only_failures(signals: Mapping[str, NodeSignals], jobs: Mapping[str, JobSignals]) -> NodeFailMerge:
    """The node-caused NODE_FAIL runs of every node the store knows, less the store's failures."""
    out = NodeFailMerge()
    for name in sorted(jobs):
        if name not in signals:
            continue  # a node Slurm has and this store (or rack) does not
        current: SlurmFailure | None = None
        for run in jobs[name].node_caused:
            if _in_store(signals[name], run.end):
                out.runs_matched += 1
                continue
            if current is not None and run.end - current.time <= INCIDENT:
                current.runs.append(run)
                continue
            current = SlurmFailure(name, run.end, [run])
            out.only_slurm.append(current)
    return out
