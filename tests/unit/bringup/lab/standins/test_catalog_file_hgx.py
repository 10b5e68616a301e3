"""The HGX H200 and B200 lab platforms (standins/platforms/h200-sxm-8x400g.json, b200-sxm-8x400g.json;
docs/lab.md, "HGX H200 and HGX B200"): their recordings show one machine of the profile's model
and driver, at the bus addresses of its fake PCI tree and its BMC's list; a node of each prints
them, its own NVLink fault, and refuses the H100 faults whose recordings name another GPU."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from bringup.lab import bmc_inventory
from bringup.lab.standins import SAMPLES_DIR, catalog, install_standins, sysfs
from tests.conftest import unavailable
from tests.paths import REPO

PLATFORMS = {
    # profile: (its own fault, the recording the fault prints)
    "h200-sxm-8x400g": ("h200-nvlink-degraded", "nvidia_smi_nvlink_s_8xh200_gpu0_degraded_DERIVED.txt"),
    "b200-sxm-8x400g": ("b200-nvlink-down", "nvidia_smi_nvlink_s_8xb200_gpu5_link7_inactive_DERIVED.txt"),
}


def _profile(platform: str) -> dict:
    return yaml.safe_load((REPO / "inventories" / "profiles" / f"{platform}.yml").read_text())


def _body(name: str) -> str:
    return (SAMPLES_DIR / name).read_text().split("\n", 1)[1]


def _healthy(platform: str, tool: str, args: str) -> str:
    (entry,) = [e for e in catalog(platform)["tools"][tool] if args in e["args"] and not e.get("faults")]
    (part,) = entry["output"]
    return part["sample"]


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_the_recordings_show_one_machine_of_the_profiles_model_driver_and_bus_addresses(platform):
    profile = _profile(platform)
    model, driver = profile["gpu"]["model"], profile["pins"]["driver"]
    query = _body(_healthy(platform, "nvidia-smi", "-q"))
    assert re.search(rf"^Driver Version\s+: {re.escape(driver)}$", query, re.M)
    assert re.findall(r"^    Product Name\s+: (.+)$", query, re.M) == [model] * profile["gpu"]["count"]
    uuids = re.findall(r"GPU UUID\s+: (\S+)", query)
    buses = [int(b, 16) for b in re.findall(r"^GPU 00000000:(\w\w):00\.0$", query, re.M)]
    assert len(set(uuids)) == len(uuids) == profile["gpu"]["count"]
    assert buses == [int(b, 16) for b in catalog(platform)["pci"]["gpu_buses"]]
    listed = [f"GPU {i}: {model} (UUID: {u})" for i, u in enumerate(uuids)]
    assert _body(_healthy(platform, "nvidia-smi", "-L")).splitlines() == listed
    assert (
        _body(_healthy(platform, "docker", "run( \\S+)* nvidia-smi (-L|--list-gpus)")).splitlines() == listed
    )
    assert [
        line
        for line in _body(_healthy(platform, "nvidia-smi", "nvlink -s")).splitlines()
        if line.startswith("GPU")
    ] == listed
    stress = json.loads(_body(_healthy(platform, "burnin-stress", ".*")))
    assert [(g["name"], g["uuid"]) for g in stress["gpus"]] == [(model, u) for u in uuids]
    (entry,) = [e for e in catalog(platform)["tools"]["burnin-stress"] if not e.get("faults")]
    assert {int(bdf.split(":")[1], 16) for bdf in entry["sysfs_during"]} >= set(buses)
    nvbandwidth = _body(
        _healthy(platform, "nvbandwidth", "(-t|--testcase) host_to_device_memcpy_ce device_to_host_memcpy_ce")
    )
    assert f"Driver Version: {driver}" in nvbandwidth and nvbandwidth.count(f": {model} (") == len(uuids)
    single = catalog(platform)["programs"]["all_reduce_perf"]
    assert {"nccl-slow", "nccl-hang", "nccl-corrupt", "nvlink-slow-allreduce"} <= set(single["faults"])
    assert _body(single["single_node"]["sample"]).count(f"] {model}\n") == profile["gpu"]["count"]


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_the_fake_pci_tree_and_the_bmc_show_the_platforms_gpus(platform):
    pci = catalog(platform)["pci"]
    gpus = [d for d in sysfs.hgx_h100_devices(pci) if d.kind == "gpu"]
    assert [d.ids for d in gpus] == [tuple(pci["gpu_id"])] * len(pci["gpu_buses"])
    query = _body(_healthy(platform, "nvidia-smi", "-q"))
    device = pci["gpu_id"][1].removeprefix("0x").upper()
    assert set(re.findall(r"Device Id\s+: 0x(\w{4})10DE", query)) == {device}
    listed = bmc_inventory._gpus(*bmc_inventory._recording(set(), platform))
    assert {g["model"] for g in listed} == {_profile(platform)["gpu"]["model"]} and len(listed) == 8


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_a_node_prints_its_platforms_recordings_and_its_own_nvlink_fault(platform, tmp_path: Path):
    if not Path("/usr/bin/python3").exists():
        unavailable("needs /usr/bin/python3 (the python a lab node has)")
    fault, recording = PLATFORMS[platform]
    root = tmp_path / "node"
    (root / "etc" / "bringup-lab").mkdir(parents=True)
    (root / "etc" / "bringup-lab" / "identity.json").write_text(
        json.dumps({"index": 0, "platform": platform})
    )
    install_standins(root, [fault], platform)

    def smi(*args: str) -> str:
        done = subprocess.run([str(root / "usr/local/bin/nvidia-smi"), *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert smi("nvlink", "-s") == _body(recording)
    assert smi("-q") == _body(_healthy(platform, "nvidia-smi", "-q"))
    for h100_only in ("gpu-missing", "nvlink-degraded", "gpu-h2d-slow", "stress-sdc"):
        with pytest.raises(ValueError, match=f"unknown fault.*{h100_only}.* on platform {platform}"):
            install_standins(tmp_path / h100_only, [h100_only], platform)


def _program(root: Path, name: str):
    """A program stand-in installed in a node root, imported (its paths are the root's)."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.SourceFileLoader(name, str(root / "usr/local/bin" / name))
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.mark.parametrize("platform", [None, *sorted(PLATFORMS)])
def test_the_multi_node_all_reduce_names_the_platforms_gpus(platform, tmp_path: Path, monkeypatch):
    """The device lines of a multi-node run (one rank per node) name the node's own GPUs: those of
    its single-node recording, so an H200 or B200 node does not print H100s."""
    root = tmp_path / "node"
    install_standins(root, [], platform)
    monkeypatch.setattr(os, "environ", os.environ.copy())  # the program sets its MPI variables
    gpus = _program(root, "all_reduce_perf").node_gpus()
    recording = _body(catalog(platform)["programs"]["all_reduce_perf"]["single_node"]["sample"])
    named = re.findall(r"^#  Rank.* device +\d+ \[(\S+)\] (.+)$", recording, re.M)
    assert gpus == named and len(gpus) == 8
    model = _profile(platform or "h100-sxm-8x400g")["gpu"]["model"]
    assert {name for _, name in gpus} == {model}
