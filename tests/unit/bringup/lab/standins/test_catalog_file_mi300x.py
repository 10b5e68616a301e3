"""The MI300X platform of the lab (standins/platforms/mi300x-8x400g.json): a node replays 8x MI300X
recordings that agree with its fake PCI tree and its BMC, and the product's own checks, run as on
a node, judge its faults at the right GPU (docs/lab.md, "Platforms")."""

from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path

import pytest

from bringup.lab import bmc_inventory
from bringup.lab.standins import SAMPLES_DIR, catalog, sysfs
from bringup.profiles.load import apply_overrides, find_profile
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Verdict
from tests.paths import REPO

PLATFORM = "mi300x-8x400g"
PROFILE = find_profile(PLATFORM, REPO / "inventories" / "profiles")
BDFS = ["0000:0c:00.0", "0000:22:00.0", "0000:38:00.0", "0000:5c:00.0"]
BDFS += ["0000:9f:00.0", "0000:af:00.0", "0000:bf:00.0", "0000:df:00.0"]


@pytest.fixture
def node(lab_node):
    return functools.partial(lab_node, PLATFORM, index=1)


def on_node(root: Path, check: str) -> tuple[Verdict, list[str]]:
    """The check's own command run against the node's stand-ins, judged on the MI300X profile:
    the verdict and its critical findings' subjects and messages."""
    c = ALL_CHECKS[check]
    done = subprocess.run(
        ["bash", "-c", c.command(PROFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": f"{root}/usr/local/bin:/usr/bin:/bin"},
    )
    result = judge(c, CommandOutput(done.stdout, done.stderr, done.returncode), PROFILE)
    return result.verdict, [
        f"{f.subject}: {f.message}" for f in result.findings if f.severity.value == "critical"
    ]


def test_an_mi300x_node_has_amd_smi_and_none_of_nvidias_tools(node):
    root = node()
    tools = {p.name for p in (root / "usr/local/bin").iterdir()}
    assert "amd-smi" in tools and "dmesg" in tools and "ibstat" in tools
    assert not tools & {"nvidia-smi", "dcgmi", "nvbandwidth", "docker", "lspci"}
    assert "burnin-stress" in tools  # the product's own program: torch on ROCm (docs/burnin.md, pcie)


def test_the_gpus_of_amd_smi_are_those_of_the_fake_tree_and_the_bmc(node):
    root = node()
    text = subprocess.run(
        [
            str(root / "usr/local/bin/amd-smi"),
            "static",
            "--asic",
            "--bus",
            "--vbios",
            "--driver",
            "--board",
            "--ras",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert re.findall(r"BDF: (\S+)", text) == BDFS
    tree = sysfs.tree_entries(platform=PLATFORM)
    gpus = sorted(
        e.path.split("/")[-2]
        for e in tree
        if e.type == "file" and e.path.endswith("/device") and e.data.strip() == "0x74a1"
    )
    assert gpus == BDFS  # 1002:74a1, class 0x120000, on the recorded buses
    assert catalog(PLATFORM)["bmc"]["gpu_format"] == "amd-smi-static"
    bmc_inventory._gpus.cache_clear()
    try:
        listed = bmc_inventory._gpus(*bmc_inventory._recording(set(), PLATFORM))
    finally:
        bmc_inventory._gpus.cache_clear()
    assert [g["model"] for g in listed] == ["AMD Instinct MI300X"] * 8
    assert len({g["serial"] for g in listed}) == 8


def test_a_healthy_mi300x_node_passes_the_amd_checks(node):
    root = node()
    for check in ("amd_gpu_inventory", "amd_gpu_ecc", "kernel_log"):
        assert on_node(root, check) == (Verdict.PASS, []), check


def test_an_uncorrectable_hbm_error_fails_gpu_3_in_the_kernel_log_and_its_ecc_counts(node):
    root = node("amdgpu-ras-ue")
    verdict, findings = on_node(root, "amd_gpu_ecc")
    assert (
        verdict is Verdict.FAIL
        and len(findings) == 1
        and findings[0].startswith("GPU 3: GPU 3 UMC: 1 uncorrectable")
    )
    verdict, findings = on_node(root, "kernel_log")
    assert verdict is Verdict.FAIL and any("0000:5c:00.0" in f for f in findings), findings
    assert on_node(root, "amd_gpu_inventory") == (Verdict.PASS, [])


def test_a_gpu_the_driver_lost_fails_the_count(node):
    root = node("amd-gpu-missing")
    verdict, findings = on_node(root, "amd_gpu_inventory")
    assert verdict is Verdict.FAIL and findings and "7 GPU(s) found, the profile has 8" in findings[0]
    assert on_node(root, "amd_gpu_ecc")[0] is Verdict.UNKNOWN  # 7 GPUs' counts: not a pass


def test_the_xgmi_links_pass_and_a_link_down_fails_its_pair(node):
    assert on_node(node(), "amd_xgmi_links") == (Verdict.PASS, [])
    verdict, findings = on_node(node("xgmi-link-down"), "amd_xgmi_links")
    assert verdict is Verdict.FAIL and findings, findings
    assert all("0000:38:00.0" in f and "0000:af:00.0" in f for f in findings), findings


def test_the_gpu_stage_passes_rvs_and_rccl_tests_on_the_node(node):
    root = node()
    assert on_node(root, "amd_rvs") == (Verdict.PASS, [])
    done = subprocess.run(
        [str(root / "usr/local/bin/all_reduce_perf"), "-b", "8", "-e", "8G", "-f", "2", "-g", "8"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "NCCL_DEBUG": "VERSION"},
    )
    assert done.returncode == 0, done.stderr
    assert "rccl-tests: Version" in done.stdout and "AMD Instinct MI300X" in done.stdout
    assert "NVIDIA" not in done.stdout and "Hostname     : host" not in done.stdout  # this node's name
    assert on_node(root, "nccl_local") == (Verdict.PASS, [])


def test_the_stress_program_answers_with_the_mi300x_gpus_and_raises_their_links(node):
    (entry,) = catalog(PLATFORM)["tools"]["burnin-stress"]
    report = json.loads((SAMPLES_DIR / entry["output"][0]["sample"]).read_text().split("\n", 1)[1])
    assert [g["name"] for g in report["gpus"]] == ["AMD Instinct MI300X"] * 8
    assert [g["pci_bus_id"].replace("00000000", "0000") for g in report["gpus"]] == BDFS
    gpus = [d for d in sysfs.hgx_h100_devices(catalog(PLATFORM)["pci"]) if d.kind == "gpu"]
    assert {d.bdf for d in gpus} | {d.parent for d in gpus} == set(entry["sysfs_during"])


def test_the_pcie_stage_passes_a_healthy_node_and_reads_its_gpus_under_load(node):
    """pcie_links' own command against the node's stand-ins: its collector reads the node's fake
    tree (the only change: where sysfs is), burnin-stress raises the GPU links, dmesg answers."""
    root = node()
    tree = sysfs.build_fake_sysfs(root, (), platform=PLATFORM)  # what the node's init unpacks
    profile = apply_overrides(PROFILE, ["diag.pcie_load_seconds=4"])  # two readings, not 20 s
    c = ALL_CHECKS["pcie_links"]
    command = c.command(profile)
    assert command.count('SYS = "/sys/bus/pci"') == 1
    command = command.replace('SYS = "/sys/bus/pci"', f'SYS = "{tree}/bus/pci"')
    done = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": f"{root}/usr/local/bin:/usr/bin:/bin"},
    )
    result = judge(c, CommandOutput(done.stdout, done.stderr, done.returncode), profile)
    assert result.verdict is Verdict.PASS, (result.reason, result.findings, done.stderr[-2000:])
    links = {r["role"]: r for r in result.metrics["links"]}
    assert [links[f"GPU {i}"]["bdf"] for i in range(8)] == BDFS
    assert all(links[f"GPU {i}"]["best_speed_gts"] == 32.0 for i in range(8))
    assert {f"mlx5_{i}" for i in range(8)} <= set(links) and {"nvme0", "nvme1"} <= set(links)
    assert result.metrics["load_readings"] >= 1
