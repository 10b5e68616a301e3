"""The MI300X platform of the lab (standins/platforms/mi300x-8x400g.json): a node replays 8x MI300X
recordings that agree with its fake PCI tree and its BMC, and the product's own checks, run as on
a node, judge its faults at the right GPU (docs/lab.md, "Platforms")."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from bringup.lab import bmc_inventory
from bringup.lab.standins import catalog, install_standins, sysfs
from bringup.profiles.load import find_profile
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Verdict
from tests.conftest import unavailable
from tests.paths import REPO

PLATFORM = "mi300x-8x400g"
PROFILE = find_profile(PLATFORM, REPO / "inventories" / "profiles")
BDFS = ["0000:0c:00.0", "0000:22:00.0", "0000:38:00.0", "0000:5c:00.0"]
BDFS += ["0000:9f:00.0", "0000:af:00.0", "0000:bf:00.0", "0000:df:00.0"]


@pytest.fixture
def node(tmp_path: Path):
    if not Path("/usr/bin/python3").exists():
        unavailable("needs /usr/bin/python3 (the python a lab node has)")

    def make(*faults: str) -> Path:
        root = tmp_path / ("node-" + "-".join(faults or ("healthy",)))
        (root / "etc" / "bringup-lab").mkdir(parents=True)
        identity = {"index": 1, "platform": PLATFORM}
        (root / "etc" / "bringup-lab" / "identity.json").write_text(json.dumps(identity))
        install_standins(root, faults, PLATFORM)
        return root

    return make


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
    assert not tools & {"nvidia-smi", "dcgmi", "nvbandwidth", "burnin-stress", "docker", "lspci"}


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
