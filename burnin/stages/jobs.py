"""What flows between the runner and the stages: a node's job, each stage's outcome, and the
context and results of a multi-node stage.

A single-node stage is a batch of checks sent to each node; a group stage (ib, nccl) is a
function that takes every node still in the run and returns each node's judged results. It
plans the work (pairs of IB ports, NCCL groups), launches it (SSH, mpirun, srun), judges it
(pure code in burnin/checks and burnin/plan) and names the nodes to blame. The runner saves
and concludes the results exactly as it does for single-node stages.

A leaf of burnin.stages: the runner and every stage import it, it imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bringup.profiles.load import Profile
from bringup.ssh.fanout import SshTarget
from burnin.result import Result, Verdict, worst


@dataclass
class NodeJob:
    name: str  # the node's key in the fleet store (its inventory name)
    profile: Profile
    target: SshTarget | None  # None: this machine (--local)
    record: dict[str, Any] = field(default_factory=dict)  # what record-based checks read


@dataclass
class StageOutcome:
    node: str
    stage: str
    verdict: Verdict
    results: list[Result]
    error: str = ""  # the whole stage could not run on the node


@dataclass
class BurninOutcome:
    """What burn-in did to one node: each stage it ran, or why it was skipped (the burn-in
    counterpart of provisioning's ProvisionResult and configure's ConfigureResult)."""

    node: str
    stages: list[StageOutcome] = field(default_factory=list)
    skipped: str = ""  # why the node was not burnt in at all
    final_state: str = ""

    @property
    def verdict(self) -> Verdict:
        if self.skipped:
            return Verdict.UNKNOWN
        return worst(s.verdict for s in self.stages)


# node name -> [(result, evidence kept with it)]
GroupResults = dict[str, list[tuple[Result, str]]]


@dataclass
class GroupContext:
    jobs: list[NodeJob]  # the nodes still in the run (earlier stages passed), with SSH targets
    run_id: int | None
    settings: dict[str, Any] = field(default_factory=dict)  # launcher options from the CLI
    on_progress: Callable[[str], None] | None = None  # one line of progress ("round 1/2: ...")
    concurrency: int | None = None  # SSH sessions at once (None: remote.default_concurrency)
    # Nodes among ``jobs`` proven good before this run (a nightly's golden partners). The ib
    # stage pairs the others' ports with theirs and the nccl stage groups the others with them
    # as anchors, so a node under test never meets a second suspect while a partner is free.
    # Empty (``burnin run``): every node is under test, paired and grouped with every other.
    partners: frozenset[str] = frozenset()
    # Each node's results of this run's earlier stages (the nccl stage reads an NVL72 tray's
    # NVLink domain from its preflight gpu_fabric_state result).
    earlier: dict[str, list[Result]] = field(default_factory=dict)

    def progress(self, line: str) -> None:
        if self.on_progress:
            self.on_progress(line)


# A group stage's entry point (burnin.stages.group_stages; the stage as an object: burnin.stages.group).
GroupRun = Callable[[GroupContext], GroupResults]
