"""The lab's NVL72 racks (bringup/lab/nvlink_rack.py): a rack fault on one tray reaches every tray
of its rack of 18 and no other."""

from __future__ import annotations

import json
from pathlib import Path

from bringup.lab.nvlink_rack import NODE_FILE, NvlinkRackService, rack_of, rack_views
from bringup.lab.state import LabNode, LabState

NAMES = [f"node{i:02d}" for i in range(1, 21)]


def nodes(faults: dict[str, list[str]]) -> list[LabNode]:
    return [
        LabNode(n, i, "10.0.0.1", "02:00", "S", "U", "http://b", faults=faults.get(n, []))
        for i, n in enumerate(NAMES)
    ]


def test_racks_are_18_trays_in_index_order():
    assert [rack_of(i) for i in (0, 17, 18, 35, 36)] == ["r01", "r01", "r02", "r02", "r03"]


def test_a_switch_tray_fault_on_one_tray_reaches_its_whole_rack_only():
    views = rack_views(nodes({"node12": ["nvlink-switch-tray-slow", "nccl-slow"]}))
    assert {n: v["faults"] for n, v in views.items() if v["faults"]} == {
        n: ["nvlink-switch-tray-slow"] for n in NAMES[:18]
    }
    assert views["node19"] == {"rack": "r02", "tray": 1, "faults": []}
    assert views["node12"]["tray"] == 12


def test_a_rack_with_no_rack_fault_says_so():
    assert all(v["faults"] == [] for v in rack_views(nodes({"node03": ["nccl-slow"]})).values())


def test_the_service_writes_each_node_its_view(tmp_path: Path):
    state = LabState("t", "abc123", "blabc123", str(tmp_path), "inv.yml", "2026-11-28T00:00:00Z")
    state.nodes = nodes({"node02": ["nvlink-switch-tray-slow"]})
    service = NvlinkRackService()
    service.prepare_node(state, state.nodes[19], tmp_path / "root")
    assert json.loads((tmp_path / "root" / NODE_FILE).read_text()) == {"rack": "r02", "tray": 2, "faults": []}
    assert service.start(state) == {} and service.stop(tmp_path) == []
