"""Optional parts of the virtual rack that start alongside the nodes (apt repo, Slurm, ...).

A service may put files into each node's root before the node starts, start its own processes
once the nodes and BMCs are up (returning inventory variables for the rack's ``all.vars``), and
stop them on ``lab down``. ``stop`` must work from the state directory alone, after a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bringup.lab.rack import LabNode, LabState


class LabService(Protocol):
    name: str

    def prepare_node(self, state: LabState, node: LabNode, root: Path) -> None:
        """Add files to a node's root before it starts (the node's overlay is mounted)."""

    def start(self, state: LabState) -> dict[str, Any]:
        """Start the service once every node answers SSH; returns inventory vars to add."""

    def stop(self, state_dir: Path) -> list[str]:
        """Stop what start() started; returns what was removed (for `lab down`)."""


def lab_services() -> list[LabService]:
    """The services every lab runs, in start order (stopped in reverse)."""
    from bringup.lab.aptrepo import AptRepoService  # the stand-in apt repository (issue 5)
    from bringup.lab.netfaults import NetFaultService  # the `unreachable` fault (issue 5)
    from bringup.lab.slurm import SlurmService  # slurmctld/slurmd/munge, mpirun settings (issue 7)

    return [AptRepoService(), NetFaultService(), SlurmService()]
