"""The lab's simulated InfiniBand fabric (docs/lab.md, "The simulated fabric").

Each lab gets a cabling plan for its nodes, a small rail-optimised fat tree in the format of
docs/fabric.md: two scalable units of one rail (one leaf each: ``su1-leaf0``, ``su2-leaf0``),
two spines, every node's ``mlx5_0`` on its unit's leaf. ``lab up`` writes it to
``<state dir>/fabric/plan.yml`` (and ``cables.csv``), where ``burnin fabric verify --plan``
takes it. The cables actually laid are the plan's, changed by the fabric faults the nodes carry,
each derived from the plan at the node that carries it:

- ``fabric-swapped-cables``: the node's cable and its leaf neighbour's exchanged at the leaf;
- ``fabric-missing-cable``: the node's cable not laid (its ``mlx5_0`` is down, polling);
- ``fabric-split``: the uplinks of the node's leaf not laid, so the fabric is two islands;
- ``fabric-wrong-pkey``: the node's ``mlx5_0`` holds another P_Key table than the others.

From the laid cables every node gets ``/etc/bringup-lab/fabric.json``: the ``ibnetdiscover -p``
text of its own island (bringup/lab/fabric_sim.py; none when its own cable is missing, as the
real tool fails from an HCA with no link), and its ``mlx5_0``'s LID, state, P_Key table and
far-end switch port (LID, port), which the ``ibnetdiscover``, ``smpquery`` and ``perfquery``
stand-ins (standins/programs/) answer from. Pure but for
``write_lab_fabric`` and ``FabricService``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bringup.core.errors import UserError
from bringup.lab.fabric_sim import device_numbers, ibnetdiscover_text, planned_cables, swap_switch_ends
from bringup.lab.standins.catalog_file import catalog
from bringup.lab.standins.dispatch import node_guid
from bringup.lab.state import LabNode, LabState
from bringup.local.files import atomic_write
from burnin.fabric.plan import End, Plan, load_plan, parse_plan_yaml

FABRIC_FAULTS = ("fabric-swapped-cables", "fabric-missing-cable", "fabric-split", "fabric-wrong-pkey")
FABRIC_DIR = "fabric"  # under the lab's state dir: plan.yml, cables.csv
NODE_FILE = Path("etc/bringup-lab/fabric.json")  # in each node's root, read by the stand-ins
HCA, HCA_PORT = "mlx5_0", 1  # the one rail of the lab's fabric
# mlx5_0's GUID in the lab's ibstat recording; each node shows it renumbered (dispatch.node_guid)
RECORDED_HCA_GUID = "0xa088c20300e3142a"
# The stand-in samples the smpquery stand-in prints: catalog.json programs.smpquery
PKEY_TABLES = {k: v["sample"] for k, v in catalog()["programs"]["smpquery"].items() if isinstance(v, dict)}
SWITCHES = {  # name -> (GUID, rack, unit): findings name the switch by its place
    "su1-leaf0": ("0x0002c90300a00001", "R01", "U42"),
    "su2-leaf0": ("0x0002c90300a00002", "R02", "U42"),
    "spine1": ("0x0002c90300b00001", "R09", "U20"),
    "spine2": ("0x0002c90300b00002", "R09", "U22"),
}


class FabricFaultError(UserError, ValueError):
    """A fabric fault the plan cannot make (a node with no leaf neighbour to swap with)."""


def plan_files(nodes: Sequence[str]) -> dict[str, str]:
    """``plan.yml`` and ``cables.csv`` for these nodes (in order): the first half on su1-leaf0,
    the rest on su2-leaf0 (leaf ports 1, 2, ...), each leaf's port ``per + s`` up to spine ``s``
    port ``unit``, as burnin/fabric/plan.py's fat_tree rule lays them."""
    units = 2 if len(nodes) > 1 else 1
    per = -(-len(nodes) // units)
    rows = ["node,hca,hca_port,switch,switch_port"]
    for i, node in enumerate(nodes):
        rows.append(f"{node},{HCA},{HCA_PORT},su{i // per + 1}-leaf0,{i % per + 1}")
    for su in range(1, units + 1):
        for spine in (1, 2):
            rows.append(f"su{su}-leaf0,-,{per + spine},spine{spine},{su}")
    switches = [f"su{su}-leaf0" for su in range(1, units + 1)] + ["spine1", "spine2"]
    yml = [
        "# The lab's cabling plan (bringup/lab/fabric.py): burnin fabric verify --plan <this file>",
        "speed: NDR",
        "width: 4x",
        "switches:",
        *(
            f'  {s}: {{guid: "{SWITCHES[s][0]}", rack: {SWITCHES[s][1]}, unit: {SWITCHES[s][2]}}}'
            for s in switches
        ),
        "cabling: cables.csv",
    ]
    return {"plan.yml": "\n".join(yml) + "\n", "cables.csv": "\n".join(rows) + "\n"}


def lab_plan(nodes: Sequence[str]) -> Plan:
    files = plan_files(nodes)
    return parse_plan_yaml(files["plan.yml"], "plan.yml", {"cables.csv": files["cables.csv"]})


def _hca_cable(cables: list[tuple[End, End]], node: str) -> int | None:
    return next((i for i, (a, _) in enumerate(cables) if a.device == node and a.hca == HCA), None)


def laid_cables(plan: Plan, faults: Mapping[str, Sequence[str]]) -> list[tuple[End, End]]:
    """The plan's cables as the nodes' fabric faults leave them (nodes in name order)."""
    cables = planned_cables(plan)
    for node in sorted(faults):
        on = set(faults[node])
        i = _hca_cable(cables, node)
        if i is None:
            continue
        leaf = cables[i][1].device
        if "fabric-swapped-cables" in on:
            same_leaf = [j for j, (a, b) in enumerate(cables) if b.device == leaf and a.hca is not None]
            if len(same_leaf) < 2:
                raise FabricFaultError(f"{node}: fabric-swapped-cables needs another node on {leaf}")
            k = same_leaf.index(i)
            cables = swap_switch_ends(cables, i, same_leaf[(k + 1) % len(same_leaf)])
        if "fabric-split" in on:
            cables = [(a, b) for a, b in cables if not (a.hca is None and a.device == leaf)]
        if "fabric-missing-cable" in on:
            cables = [c for c in cables if not (c[0].device == node and c[0].hca == HCA)]
    return cables


def islands(cables: Sequence[tuple[End, End]]) -> list[set[str]]:
    """The devices ('node01 mlx5_0', 'su1-leaf0') each connected piece of the cables holds."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in cables:
        parent[root(_key(a))] = root(_key(b))
    groups: dict[str, set[str]] = {}
    for device in parent:
        groups.setdefault(root(device), set()).add(device)
    return sorted(groups.values(), key=sorted)


def _key(end: End) -> str:
    return end.device if end.hca is None else f"{end.device} {end.hca}"


def node_views(plan: Plan, nodes: Sequence[LabNode], faults: Mapping[str, Sequence[str]]) -> dict[str, dict]:
    """Each node's fabric.json: the ``ibnetdiscover -p`` of its island (None without a link) and
    its HCA's GUID, LID, state, P_Key table and the switch port at its cable's far end."""
    cables = laid_cables(plan, faults)
    guids = {f"{n.name} {HCA}": int(node_guid(RECORDED_HCA_GUID, n.index + 1), 16) for n in nodes}
    numbers = device_numbers(plan, cables)
    pieces = islands(cables)
    views = {}
    for n in nodes:
        me = f"{n.name} {HCA}"
        piece = next((p for p in pieces if me in p), None)
        text = None
        sm_lid = 0
        if piece is not None:
            mine = [c for c in cables if _key(c[0]) in piece]
            text = ibnetdiscover_text(plan, mine, guids=guids)
            sm_lid = min(numbers[d] for d in piece if " " not in d) + 1  # the SM on a switch
        cable = next(((a, b) for a, b in cables if _key(a) == me), None)
        far = None if cable is None else {"lid": numbers[_key(cable[1])] + 1, "port": cable[1].port}
        views[n.name] = {
            "ibnetdiscover": text,
            "hcas": {
                HCA: {
                    "port": HCA_PORT,
                    "guid": f"0x{guids[me]:016x}",
                    "lid": numbers[me] + 1 if me in numbers else 0,
                    "sm_lid": sm_lid,
                    "far_end": far,  # the switch port its cable reaches (LID, port), as ibnetdiscover shows
                    "state": "Active" if piece is not None else "Down",
                    "physical_state": "LinkUp" if piece is not None else "Polling",
                    "rate": 400 if piece is not None else 10,
                    "pkeys": PKEY_TABLES[
                        "fabric-wrong-pkey" if "fabric-wrong-pkey" in faults.get(n.name, ()) else "healthy"
                    ],
                }
            },
        }
    return views


# ---- I/O: the plan in the state dir, each node's view in its root --------------------------------


def plan_path(state_dir: str | Path) -> Path:
    return Path(state_dir) / FABRIC_DIR / "plan.yml"


def lab_views(state: LabState) -> dict[str, dict]:
    """Write the plan if the lab has none yet (an operator may have replaced it by their own), and
    return every node's view of the fabric its nodes' faults make."""
    path = plan_path(state.state_dir)
    if not path.exists():
        files = plan_files([n.name for n in state.nodes])
        # Nodes are prepared in parallel: plan.yml goes last, so whoever sees it finds its cables.
        for name in ("cables.csv", "plan.yml"):
            atomic_write(path.parent / name, files[name])
    return node_views(load_plan(path), state.nodes, {n.name: n.faults for n in state.nodes})


def check_lab_faults(state: LabState, faults: Mapping[str, Sequence[str]]) -> None:
    """Raise FabricFaultError when the lab's plan cannot make these nodes' fabric faults."""
    path = plan_path(state.state_dir)
    plan = load_plan(path) if path.exists() else lab_plan([n.name for n in state.nodes])
    laid_cables(plan, faults)


def write_view(root: Path, view: dict) -> None:
    target = Path(root) / NODE_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, json.dumps(view, indent=2) + "\n")


def write_lab_fabric(state: LabState) -> Path:
    """Every running node's view, after a fabric fault is switched (a split changes what every
    node sees); returns the plan's path."""
    for node, view in lab_views(state).items():
        write_view(Path(state.state_dir) / "nodes" / node / "root", view)
    return plan_path(state.state_dir)


class FabricService:
    """The simulated fabric as a lab service: each node's view is written before it starts."""

    name = "fabric"

    def prepare_node(self, state: LabState, node: LabNode, root: Path) -> None:
        write_view(root, lab_views(state)[node.name])

    def start(self, state: LabState) -> dict[str, Any]:
        return {}  # nothing runs: the stand-ins read the files; `lab up` prints the plan's path

    def stop(self, state_dir: Path) -> list[str]:
        return []  # only files in the state dir, removed with it
