"""A small virtual rack of each HGX platform the lab stands in for besides the H100 (H200, B200):
its nodes replay that platform's recordings (bringup/lab/standins/platforms/<profile>.json), the
rack's inventory names the platform's profile, and burn-in judges them by it.

Per platform, 3 nodes, one with the platform's own NVLink fault: that node fails the preflight's
nvlink check naming the GPU, and only that check fails; the healthy nodes pass the preflight and
the gpu stage on the platform's figures (model, driver pin, the single-node all-reduce floor:
431 GB/s on H200, 760 on B200) and are golden. Nodes start configured (recorded, as the other
burn-in lab tests do): the demo (`bringup lab demo --profile`) runs configure for real.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from burnin.cli import main as burnin_main
from tests.lab.conftest import lab_inventory_dir, ready_for_burnin, require_root

pytestmark = pytest.mark.lab

NODES = ("node01", "node02", "node03")
FAULTY = "node02"
QUICK = ["--set", "diag.stress_minutes=0.05", "--set", "diag.pcie_load_seconds=5"]
PLATFORMS = {
    # profile: (its fault, the GPU it blames, what the finding says, GPU model, single-node floor)
    "h200-sxm-8x400g": ("h200-nvlink-degraded", "GPU 0", "4 NVLink(s) degraded", "NVIDIA H200", 431),
    "b200-sxm-8x400g": ("b200-nvlink-down", "GPU 5", "17 of 18 NVLinks active (down: 7)", "NVIDIA B200", 760),
}


@pytest.mark.parametrize("profile", sorted(PLATFORMS))
def test_platform_fault_is_caught_at_preflight_and_the_healthy_nodes_are_golden(
    tmp_path: Path, profile: str
) -> None:
    require_root()
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services

    fault, gpu, said, model, floor = PLATFORMS[profile]
    inv = lab_inventory_dir(tmp_path / "inventories")
    name = f"p{uuid.uuid4().hex[:7]}"
    spec = tmp_path / "faults.yml"
    spec.write_text(f"nodes:\n  {FAULTY}: [{fault}]\n")
    rack = VirtualRack(name, tmp_path / "state", inv, services=lab_services)
    try:
        rack.up(len(NODES), spec, profile)
        assert f"profile: {profile}" in (inv / f"{name}.yml").read_text()
        base, store = ready_for_burnin(name, inv, tmp_path / "fleet.db", NODES)
        runner = CliRunner()
        stages = ["--stages", "preflight,gpu"]
        res = runner.invoke(burnin_main, [*base, "run", "--rack", name, *stages, "--json", *QUICK])
        assert res.exit_code == 1, res.output  # the faulty node fails
        outcomes = {o["node"]: o for o in json.loads(res.stdout)}
        res = runner.invoke(burnin_main, [*base, "golden", "--rack", name, *stages])
        assert res.exit_code == 0, res.output
        states = {n: store.get_node(n).state for n in NODES}
    finally:
        rack.down()

    for node in NODES:
        by_stage = {s["stage"]: {r["check"]: r for r in s["results"]} for s in outcomes[node]["stages"]}
        preflight = by_stage["preflight"]
        assert preflight["gpu_inventory"]["metrics"]["models"] == [model], node
        assert preflight["gpu_versions"]["metrics"]["driver"] == "570.133.20", node
        if node == FAULTY:
            failed = {c: r for c, r in preflight.items() if r["verdict"] == "FAIL"}
            assert set(failed) == {"nvlink"}, {c: r["findings"] for c, r in failed.items()}
            (finding,) = [f for f in failed["nvlink"]["findings"] if f["severity"] == "critical"]
            assert finding["subject"] == gpu and said in finding["message"], finding
            assert finding["action"] == "RMA"
            assert outcomes[node]["verdict"] == "FAIL"
            assert states[node] != "golden"
        else:
            assert outcomes[node]["verdict"] == "PASS", outcomes[node]
            assert by_stage["gpu"]["nccl_local"]["metrics"]["busbw_gbps"] > floor
            assert states[node] == "golden"
