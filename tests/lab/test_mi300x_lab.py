"""A virtual rack of AMD MI300X nodes (docs/lab.md, "Platforms"), taken from `lab up --profile
mi300x-8x400g` to a burn-in verdict by the operator's commands: discovery suggests the MI300X
profile from the BMC's GPUs, configure installs AMD's driver at the profile's release (no NVIDIA
package), and the preflight fails the node with an uncorrectable HBM error, blaming GPU 3 in its
ECC counts and its kernel log, while the healthy node passes it, the gpu stage (RVS and the
single-node rccl-tests all-reduce) and the pcie stage (its GPUs' links read under burnin-stress)."""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from burnin.cli import main as burnin_main
from tests.lab.conftest import configured_by_the_cli, lab_inventory_dir, require_root

pytestmark = pytest.mark.lab

PROFILE = "mi300x-8x400g"


def test_an_mi300x_rack_from_lab_up_to_its_preflight_gpu_and_pcie_stage_verdicts(tmp_path) -> None:
    require_root()
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services

    inv = lab_inventory_dir(tmp_path / "inventories")
    name = f"amd{uuid.uuid4().hex[:7]}"
    spec = tmp_path / "faults.yml"
    spec.write_text("nodes:\n  node02: [amdgpu-ras-ue]\n")
    lab = VirtualRack(name, tmp_path / "state", inv, services=lab_services)
    try:
        lab.up(2, spec, PROFILE)
        base, store = configured_by_the_cli(name, inv, tmp_path / "fleet.db")
        stages = ["--stages", "preflight,gpu,pcie", "--set", "diag.pcie_load_seconds=5"]
        res = CliRunner().invoke(burnin_main, [*base, "run", "--rack", name, *stages, "--json"])
    finally:
        lab.down()
    assert res.exit_code == 1, res.output  # node02 fails
    for node in ("node01", "node02"):
        hardware = store.get_node(node).hardware
        gpus = hardware["gpus"]
        assert len(gpus) == 8 and {g["model"] for g in gpus} == {"AMD Instinct MI300X"}, gpus
        packages = hardware["software"]["packages"]
        assert ".30300300-" in packages["amdgpu-dkms"] and "amd-smi-lib" in packages, packages
        assert not any(p.startswith(("nvidia-", "datacenter-gpu-manager")) for p in packages), packages
    outcomes = {o["node"]: o for o in json.loads(res.stdout)}
    results = {
        node: {r["check"]: r for s in o["stages"] for r in s["results"]} for node, o in outcomes.items()
    }
    assert {"amd_gpu_inventory", "amd_gpu_ecc", "amd_xgmi_links", "kernel_log"} <= set(results["node01"])
    assert {"amd_rvs", "nccl_local"} <= set(results["node01"])  # the gpu stage on AMD
    pcie = results["node01"]["pcie_links"]  # sysfs under burnin-stress, on both vendors
    gpus = [r for r in pcie["metrics"]["links"] if r["role"].startswith("GPU")]
    assert pcie["verdict"] == "PASS" and len(gpus) == 8, pcie
    assert {r["best_speed_gts"] for r in gpus} == {32.0}, gpus
    assert [s["stage"] for s in outcomes["node02"]["stages"]] == ["preflight"]  # stopped there
    assert not {"gpu_inventory", "nvlink", "dcgm_diag"} & set(results["node01"])  # NVIDIA's checks
    assert outcomes["node01"]["verdict"] == "PASS", results["node01"]
    assert outcomes["node02"]["verdict"] == "FAIL" and outcomes["node02"]["state"] == "failed"
    failed = {c: r for c, r in results["node02"].items() if r["verdict"] == "FAIL"}
    assert set(failed) == {"amd_gpu_ecc", "kernel_log"}, {c: r["findings"] for c, r in failed.items()}
    ecc = [f for f in failed["amd_gpu_ecc"]["findings"] if f["severity"] == "critical"]
    assert [(f["subject"], f["action"]) for f in ecc] == [("GPU 3", "RMA")], ecc
    assert "UMC" in ecc[0]["message"]
    log = [f for f in failed["kernel_log"]["findings"] if f["severity"] == "critical"]
    assert log and all("0000:5c:00.0" in f["message"] for f in log), log
