"""The hook for optional parts of the virtual rack that start alongside the nodes (apt repo, Slurm, ...).

A service may put files into each node's root before the node starts, start its own processes
once the nodes and BMCs are up (returning inventory variables for the rack's ``all.vars``), and
stop them on ``lab down``. ``stop`` must work from the state directory alone, after a crash.
The rack is handed its services (``services.lab_services()``) by whoever starts it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from bringup.lab.state import LabNode, LabState


class LabService(Protocol):
    name: str

    def prepare_node(self, state: LabState, node: LabNode, root: Path) -> None:
        """Add files to a node's root before it starts (the node's overlay is mounted)."""

    def start(self, state: LabState) -> dict[str, Any]:
        """Start the service once every node answers SSH; returns inventory vars to add."""

    def stop(self, state_dir: Path) -> list[str]:
        """Stop what start() started; returns what was removed (for `lab down`)."""
