"""Multi-node stages (ib, nccl): one stage runs across a group of nodes at once.

A single-node stage is a batch of checks sent to each node; a group stage is a function that
takes every node still in the run and returns each node's judged results. It plans the work
(pairs of IB ports, NCCL groups), launches it (SSH, mpirun, srun), judges it (pure code in
burnin/checks and burnin/plan) and names the nodes to blame. The runner saves and concludes
the results exactly as it does for single-node stages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from burnin.result import Result

if TYPE_CHECKING:
    from burnin.runner import NodeJob

# node name -> [(result, evidence kept with it)]
GroupResults = dict[str, list[tuple[Result, str]]]


@dataclass
class GroupContext:
    jobs: list[NodeJob]  # the nodes still in the run (earlier stages passed), with SSH targets
    run_id: int | None
    settings: dict[str, Any] = field(default_factory=dict)  # launcher options from the CLI
    on_progress: Callable[[str], None] | None = None  # one line of progress ("round 1/2: ...")

    def progress(self, line: str) -> None:
        if self.on_progress:
            self.on_progress(line)


GroupStage = Callable[[GroupContext], GroupResults]


def group_stages() -> dict[str, GroupStage]:
    """Stage name -> its runner. Imported lazily: single-node runs never load them."""
    from burnin.ib_stage import run_ib_stage
    from burnin.nccl_stage import run_nccl_stage

    return {"ib": run_ib_stage, "nccl": run_nccl_stage}


GROUP_STAGE_NAMES: tuple[str, ...] = ("ib", "nccl")


def is_group_stage(stage: str) -> bool:
    return stage in GROUP_STAGE_NAMES
