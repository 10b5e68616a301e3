"""Network faults of lab nodes: a node that stops answering once the rack is up.

The ``unreachable`` fault takes the node's only link (eth0, inside its namespace) down after
every node has answered SSH, like a host that hung or lost its cable after provisioning: SSH,
Ansible and the BMC-less checks all time out on it, while its BMC still answers. The node's
processes keep running, so ``lab down`` removes it as usual.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bringup.lab.naming import LabNames
from bringup.lab.network import run_cmd
from bringup.lab.state import LabNode, LabState

UNREACHABLE = "unreachable"
FAULTS = frozenset({UNREACHABLE})  # the faults this module implements (declared in catalog.json)


class NetFaultService:
    """LabService: applies node faults that live in the network rather than in a tool."""

    name = "netfaults"

    def prepare_node(self, state: LabState, node: LabNode, root: Path) -> None:
        return None

    def start(self, state: LabState) -> dict[str, Any]:
        names = LabNames(state.run_id)
        for node in state.nodes:
            if UNREACHABLE in node.faults:
                run_cmd(["ip", "-n", names.netns(node.name), "link", "set", "eth0", "down"])
        return {}

    def stop(self, state_dir: Path) -> list[str]:
        return []  # the namespaces go with the nodes
