"""The lab's NVL72 racks: faults of a rack's NVLink fabric, felt by every tray of the rack.

On a GB200 NVL72 the NVLink domain is the rack: 18 compute trays joined by 9 NVLink switch trays
(docs/platforms.md). A bad switch tray slows every tray's multi-node NVLink traffic, so its fault
belongs to the rack, not to one tray. A fault spec names such a fault on one tray (any tray of
the rack; the lab has no switch trays to name); this service writes the rack's faults into every
tray of that rack, ``/etc/bringup-lab/nvlink-rack.json``, which the nccl-tests stand-in reads
(``programs/all_reduce_perf``: ``nvlink-switch-tray-slow`` slows every rank of the rack while
``NCCL_MNNVL_ENABLE=1``). Lab nodes are racked in index order, ``RACK_TRAYS`` a rack
(node01..node18 are rack r01), and each rack is its own NVLink and IMEX domain: the dispatcher
gives rack r's trays CliqueId 4026 + r and their own 18 addresses (dispatch.rewrite_clique,
rewrite_subnet). docs/lab.md, "GB200 NVL72".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bringup.lab.standins.dispatch import RACK_SUBPATH, RACK_TRAYS
from bringup.lab.state import LabNode, LabState

NODE_FILE = Path(RACK_SUBPATH)  # in each node's root; the stand-ins read it (dispatch.node_rack)
RACK_FAULTS = ("nvlink-switch-tray-slow",)  # faults of a rack's NVLink fabric, not of one tray


def rack_of(index: int) -> str:
    """The rack of the node with this index: ``r01`` for the first 18."""
    return f"r{index // RACK_TRAYS + 1:02d}"


def rack_views(nodes: Sequence[LabNode]) -> dict[str, dict[str, Any]]:
    """Each node's nvlink-rack.json (pure): its rack, its tray number in it (1..18), and the faults
    any tray of its rack carries among ``RACK_FAULTS``."""
    faults: dict[str, set[str]] = {}
    for n in nodes:
        faults.setdefault(rack_of(n.index), set()).update(f for f in n.faults if f in RACK_FAULTS)
    return {
        n.name: {
            "rack": rack_of(n.index),
            "tray": n.index % RACK_TRAYS + 1,
            "faults": sorted(faults[rack_of(n.index)]),
        }
        for n in nodes
    }


class NvlinkRackService:
    """Writes each node's rack view before it starts; nothing runs."""

    name = "nvlink-rack"

    def prepare_node(self, state: LabState, node: LabNode, root: Path) -> None:
        target = Path(root) / NODE_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(rack_views(state.nodes)[node.name], indent=2) + "\n")

    def start(self, state: LabState) -> dict[str, Any]:
        return {}

    def stop(self, state_dir: Path) -> list[str]:
        return []  # only files in the nodes' roots, removed with them
