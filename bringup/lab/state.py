"""The virtual rack's state: its nodes and networks as ``lab up`` made them, kept in ``lab.json``.

Its own module so that the rack (which writes it) and the lab services (which read it) both
import it from below.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bringup.files import atomic_write

BMC_PORT = 8000  # per-lab BMC addresses are unique, so every lab can use the same port
STATE_FILE = "lab.json"


@dataclass
class LabNode:
    name: str
    index: int
    ip: str
    mac: str
    serial: str
    uuid: str
    bmc_address: str
    faults: list[str] = field(default_factory=list)


@dataclass
class LabState:
    name: str
    run_id: str
    prefix: str
    state_dir: str
    inventory: str
    created_at: str
    bridge: str = ""
    node_subnet: str = ""
    bmc_subnet: str = ""
    bmc_port: int = BMC_PORT
    ssh_key: str = ""
    fault_spec: str | None = None
    nodes: list[LabNode] = field(default_factory=list)
    gateway: str = ""  # the host's address on the node subnet (where lab services listen)
    # Inventory vars the lab services added (apt repository URL, Slurm partition, ...).
    inventory_vars: dict[str, Any] = field(default_factory=dict)

    def save(self) -> None:
        atomic_write(Path(self.state_dir) / STATE_FILE, json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, state_dir: Path) -> LabState | None:
        path = state_dir / STATE_FILE
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        data["nodes"] = [LabNode(**n) for n in data.get("nodes", [])]
        return cls(**data)
