"""The gpu and pcie stages on a real GPU (`burnin run --local`): skipped where there is none.

Run on a GPU machine with torch installed: `pytest -m gpu tests/gpu -s` prints what it found.
The profile is the shipped H100 one with the GPU count and model of this machine, so the test
judges this machine's GPUs against the same floors and rules as a rack.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from burnin.cli import main as burnin_main

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]


def local_gpus() -> list[str]:
    if shutil.which("nvidia-smi") is None:
        return []
    proc = subprocess.run(
        ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True
    )
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()] if proc.returncode == 0 else []


def test_gpu_and_pcie_stages_on_this_machine(tmp_path: Path) -> None:
    gpus = local_gpus()
    if not gpus:
        pytest.skip("no NVIDIA GPU on this machine")
    args = [
        "--inventory-dir",
        str(REPO / "inventories"),
        "run",
        "--local",
        "--profile",
        "h100-sxm-8x400g",
        "--stages",
        "gpu,pcie",
        "--json",
        "--set",
        f"gpu.count={len(gpus)}",
        "--set",
        f"gpu.model={json.dumps(gpus[0])}",
        "--set",
        "diag.stress_minutes=0.5",
        "--set",
        "diag.pcie_load_seconds=20",
        "--set",
        "diag.dcgm_level=1",
    ]
    res = CliRunner().invoke(burnin_main, args)
    (outcome,) = json.loads(res.stdout)
    results = {r["check"]: r for s in outcome["stages"] for r in s["results"]}
    print(
        json.dumps(
            {c: {k: r[k] for k in ("verdict", "reason", "metrics")} for c, r in results.items()}, indent=1
        )
    )
    single_node_checks(results, len(gpus))
    stress = results["gpu_stress"]
    if stress["verdict"] == "UNKNOWN":
        assert "neither torch nor CuPy" in stress["reason"] or "did not run" in stress["reason"]
        pytest.skip(f"the stress load could not run here: {stress['reason']}")
    assert len(stress["metrics"]["tflops"]) == len(gpus)
    assert all(v and v > 0 for v in stress["metrics"]["tflops"].values())
    links = results["pcie_links"]["metrics"].get("links", [])
    assert sum(1 for link in links if link["role"].startswith("GPU ")) == len(gpus)


# Why nccl_local / copy_bandwidth may honestly be UNKNOWN on a machine that is not a configured node.
MISSING_TOOL = ("not installed", "neither torch nor CuPy")


def single_node_checks(results: dict, gpu_count: int) -> None:
    """nccl_local (all_reduce_perf -g N over NVLink; with 1 GPU it says it ran trivially) and
    copy_bandwidth (nvbandwidth, else burnin-stress --copy-bandwidth): figures for every GPU."""
    nccl, copies = results["nccl_local"], results["copy_bandwidth"]
    print(json.dumps({"nccl_local": nccl, "copy_bandwidth": copies}, indent=1))
    if nccl["verdict"] == "UNKNOWN":
        assert any(why in nccl["reason"] for why in MISSING_TOOL), nccl["reason"]
    else:
        assert nccl["metrics"]["gpus"] == gpu_count and nccl["metrics"]["wrong"] == 0
        if gpu_count == 1:
            assert any("1 GPU" in f["message"] for f in nccl["findings"]) and nccl["verdict"] == "PASS"
        else:
            assert nccl["metrics"]["busbw_gbps"] > 0
    if copies["verdict"] == "UNKNOWN":
        assert any(why in copies["reason"] for why in MISSING_TOOL), copies["reason"]
    else:
        for direction in ("h2d_gbps", "d2h_gbps"):
            figures = copies["metrics"][direction]
            assert len(figures) == gpu_count and all(v > 1 for v in figures.values()), figures
