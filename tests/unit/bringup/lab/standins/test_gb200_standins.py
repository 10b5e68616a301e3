"""GB200 NVL72 tray stand-ins (platforms/gb200-nvl72-tray.json), run as a lab node runs them and
judged by the checks that read them on the tray's profile: a healthy tray passes, each NVLink
fabric fault is caught by its own check (docs/lab.md, "GB200 NVL72")."""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from bringup.lab.nvlink_rack import NODE_FILE
from bringup.lab.standins import dispatch
from bringup.profiles.load import load_profile
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Action, Verdict
from tests.profiles import SHIPPED_DIR

PLATFORM = "gb200-nvl72-tray"
PROFILE, _ = load_profile(PLATFORM, SHIPPED_DIR)


@pytest.fixture
def node(lab_node):
    return functools.partial(lab_node, PLATFORM)


def run_tool(root: Path, tool: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(root / "usr/local/bin" / tool), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )


def verdict(check: str, stdout: str):
    return judge(ALL_CHECKS[check], CommandOutput(stdout=stdout, rc=0), PROFILE)


def imex_output(root: Path) -> str:
    """What imex_domain's command prints on the node: systemctl's answer, then the domain."""
    daemon = run_tool(root, "systemctl", "is-active", "nvidia-imex").stdout.strip()
    return f"IMEX daemon: {daemon}\n" + run_tool(root, "nvidia-imex-ctl", "-N").stdout


def test_a_healthy_tray_passes_every_preflight_check_of_its_fabric(node):
    root = node()
    q = run_tool(root, "nvidia-smi", "-q").stdout
    for check in ("gpu_inventory", "gpu_versions", "gpu_ecc", "gpu_memory", "gpu_fabric_state"):
        assert verdict(check, q).verdict is Verdict.PASS, check
    assert verdict("nvlink", run_tool(root, "nvidia-smi", "nvlink", "-s").stdout).verdict is Verdict.PASS
    assert verdict("imex_domain", imex_output(root)).verdict is Verdict.PASS
    assert verdict("ib_ports", run_tool(root, "ibstat").stdout).verdict is Verdict.PASS
    assert verdict(
        "container_gpu", run_tool(root, "docker", "run", "img", "nvidia-smi", "-L").stdout
    ).verdict is (Verdict.PASS)
    fabric = verdict("gpu_fabric_state", q)
    assert fabric.metrics["clique_id"] == "4026"


def test_a_tray_in_progress_fails_gpu_fabric_state_alone(node):
    root = node("nvlink-fabric-in-progress")
    q = run_tool(root, "nvidia-smi", "-q").stdout
    result = verdict("gpu_fabric_state", q)
    assert result.verdict is Verdict.FAIL
    assert {f.action for f in result.findings} == {Action.RECONFIGURE}
    assert len(result.findings) == 4 and all("In Progress" in f.message for f in result.findings)
    assert verdict("gpu_inventory", q).verdict is Verdict.PASS
    assert verdict("imex_domain", imex_output(root)).verdict is Verdict.PASS


def test_a_tray_missing_from_the_imex_domain_is_named_by_its_lab_address(node, tmp_path):
    root = node("imex-node-down")
    result = verdict("imex_domain", imex_output(root))
    assert result.verdict is Verdict.FAIL
    [finding] = result.findings
    assert finding.action is Action.REBOOT and "IMEX node #7" in finding.message
    # On a lab node the recorded 10.20.3.x addresses are the node's own /24: node #7 = node08 (.18)
    route = tmp_path / "route"
    route.write_text(
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        "eth0\t00000000\t01D50D0A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
        "eth0\t00D50D0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
    )
    prefix = dispatch.node_subnet_prefix(str(route))
    assert prefix == "10.13.213"
    moved = dispatch.rewrite_subnet(
        b"Node #7   - 10.20.3.18      - UNAVAILABLE 110.20.3.1", "10.20.3", prefix
    )
    assert moved == b"Node #7   - 10.13.213.18      - UNAVAILABLE 110.20.3.1"
    # A lab node's /proc has no net/: the interface's own address then (lo: 127.0.0.1)
    assert dispatch.node_subnet_prefix(str(tmp_path / "absent"), "lo") == "127.0.0"
    assert dispatch.node_subnet_prefix(str(tmp_path / "absent"), "nosuchif0") is None


def test_the_single_node_all_reduce_is_the_trays_four_gpus(node):
    root = node()
    done = run_tool(root, "all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "4")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("NVIDIA GB200") == 4
    result = verdict("nccl_local", done.stdout)
    assert result.verdict is Verdict.PASS, result.findings
    refused = run_tool(root, "all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8")
    assert refused.returncode == 1 and "-g 4 only" in refused.stderr


def _program(root: Path):
    """The node's installed all_reduce_perf, loaded as a module (its paths are the node root's)."""
    path = root / "usr/local/bin/all_reduce_perf"
    loader = importlib.machinery.SourceFileLoader("lab_all_reduce_perf", str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.mark.parametrize("carrier", [True, False])
def test_a_slow_switch_tray_slows_every_tray_of_the_rack_with_mnnvl_on_only(node, monkeypatch, carrier):
    """The rack's fault is in every tray's nvlink-rack.json (bringup/lab/nvlink_rack.py), the tray
    named in the fault spec or not; it acts with NCCL_MNNVL_ENABLE=1 and never over InfiniBand."""
    root = node("nvlink-switch-tray-slow") if carrier else node()
    (root / NODE_FILE).write_text(
        json.dumps({"rack": "r01", "tray": 3, "faults": ["nvlink-switch-tray-slow"]})
    )
    program = _program(root)
    monkeypatch.setenv("NCCL_MNNVL_ENABLE", "1")
    assert program.active_faults() == {"nvlink-switch-tray-slow": {"rate_bytes_per_s": 8000000}}
    monkeypatch.setenv("NCCL_MNNVL_ENABLE", "0")
    assert program.active_faults() == {}
    monkeypatch.delenv("NCCL_MNNVL_ENABLE")
    assert program.active_faults() == {}
    buses = ["0008:01:00", "0009:01:00", "0018:01:00", "0019:01:00"]
    assert program.node_gpus() == [(bus, "NVIDIA GB200") for bus in buses]


def test_the_carrier_alone_is_not_slow_without_its_rack_file(node, monkeypatch):
    """The fault in a tray's own faults file does nothing by itself: only the rack view counts."""
    root = node("nvlink-switch-tray-slow")
    monkeypatch.setenv("NCCL_MNNVL_ENABLE", "1")
    assert _program(root).active_faults() == {}
    assert os.path.exists(root / "etc/bringup-lab/faults.json")


def test_each_rack_of_18_is_its_own_nvlink_and_imex_domain(node):
    """Rack r's trays (its nvlink-rack.json) print CliqueId 4026 + r, and the IMEX domain lists the
    18 addresses of that rack's lab nodes: two racks are two domains for the nccl stage and the
    golden list's topology blocks."""
    root = node()
    (root / NODE_FILE).parent.mkdir(parents=True, exist_ok=True)
    (root / NODE_FILE).write_text(json.dumps({"rack": "r02", "tray": 1, "faults": []}))
    fabric = verdict("gpu_fabric_state", run_tool(root, "nvidia-smi", "-q").stdout)
    assert fabric.verdict is Verdict.PASS and fabric.metrics["clique_id"] == "4027"
    assert dispatch.node_rack(str(root)) == 1 and dispatch.node_rack(str(root / "absent")) == 0
    text = b"Node #0   - 10.20.3.11      - READY\nNode #17  - 10.20.3.28      - READY\n"
    assert dispatch.rewrite_subnet(text, "10.20.3", "10.213.100", 1) == (
        b"Node #0   - 10.213.100.29      - READY\nNode #17  - 10.213.100.46      - READY\n"
    )
    q = b"        CliqueId                          : 4026\n        ClusterUUID : x\n"
    assert dispatch.rewrite_clique(q, "4026", 0) == q
    assert dispatch.rewrite_clique(q, "4026", 2) == q.replace(b"4026", b"4028")
