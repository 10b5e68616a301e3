"""Platforms of the lab: an overlay on the base (HGX H100) catalog, merged by catalog_file.merge,
and a node of that platform replaying its recordings (docs/lab.md, "Platforms")."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from bringup.lab import bmc_inventory, faults, standins
from bringup.lab.demo import LAB_SETTINGS, Demo
from bringup.lab.standins import catalog_file, dispatch, install_standins
from bringup.lab.standins.catalog_file import BASE_PLATFORM, PlatformError, merge
from tests.conftest import unavailable

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "samples"

BASE = {
    "faults": {"gpu-missing": "GPU 4 gone", "ib-port-down": "a port down", "disk-full": "root full"},
    "tools": {
        "nvidia-smi": [
            {"args": ["-q"], "output": [{"sample": "h100_q.txt"}]},
            {"args": ["-q"], "faults": ["gpu-missing"], "output": [{"sample": "h100_q_gpu4.txt"}]},
            {"args": ["-L"], "output": [{"sample": "h100_L.txt"}]},
        ],
        "ibstat": [
            {"args": [""], "output": [{"sample": "ibstat.txt"}]},
            {"args": [""], "faults": ["ib-port-down"], "output": [{"sample": "ibstat_down.txt"}]},
        ],
        "dcgmi": [{"args": ["diag"], "output": [{"sample": "dcgm.txt"}]}],
    },
    "sysfs": {"ib-port-down": {"0000:54:00.0": {"x": "1"}}, "gpu-missing": {"0000:97:00.0": {"y": "2"}}},
    "programs": {"all_reduce_perf": {"faults": {}}},
}
OVER = {
    "profile": "x200",
    "inherit_faults": ["ib-port-down"],
    "faults": {"x200-link-down": "one link down (derived)"},
    "tools": {
        "nvidia-smi": [
            {"args": ["-q"], "output": [{"sample": "x200_q.txt"}]},
            {"args": ["-q"], "faults": ["x200-link-down"], "output": [{"sample": "x200_q_link.txt"}]},
        ],
        "nvidia-imex-ctl": [{"args": ["-N"], "output": [{"sample": "imex.txt"}]}],
    },
    "without": ["dcgmi"],
    "bmc": {"system_model": "X200 box"},
}


def samples(entries):
    return [part["sample"] for e in entries for part in e["output"]]


def test_an_overlay_replaces_a_whole_args_group_and_keeps_the_rest():
    merged = merge(BASE, OVER)
    # -q: the platform's two recordings, the base's H100 ones (healthy and gpu-missing) gone
    assert samples(merged["tools"]["nvidia-smi"]) == ["x200_q.txt", "x200_q_link.txt", "h100_L.txt"]
    assert samples(merged["tools"]["ibstat"]) == ["ibstat.txt", "ibstat_down.txt"]  # inherited fault kept
    assert "dcgmi" not in merged["tools"] and "nvidia-imex-ctl" in merged["tools"]
    assert set(merged["faults"]) == {"ib-port-down", "x200-link-down"}
    assert set(merged["sysfs"]) == {"ib-port-down"}  # gpu-missing is not this platform's
    assert merged["platform"] == "x200" and merged["bmc"] == {"system_model": "X200 box"}
    assert BASE["tools"]["nvidia-smi"][0]["output"][0]["sample"] == "h100_q.txt"  # the base untouched


def test_a_base_entry_of_a_fault_the_platform_lacks_is_dropped():
    over = {**OVER, "tools": {}}  # no -q of its own: the H100 recording stays, its fault goes
    merged = merge(BASE, over)
    assert samples(merged["tools"]["nvidia-smi"]) == ["h100_q.txt", "h100_L.txt"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"inherit_faults": ["no-such"]}, "inherit_faults names no base fault no-such"),
        ({"without": ["rocm-smi"]}, "'without' names tool(s) the base lacks: rocm-smi"),
        ({"colour": "red"}, "unknown key(s) colour"),
        ({"faults": {"ib-port-down": "again"}}, "both inherited and redefined"),
        (
            {"tools": {"ibstat": [{"args": [""], "faults": ["disk-full"], "output": []}]}},
            "neither defines nor inherits: disk-full",
        ),
    ],
)
def test_an_overlay_that_does_not_fit_the_base_is_refused(change, message):
    with pytest.raises(PlatformError, match=message.replace("(", r"\(").replace(")", r"\)")):
        merge(BASE, {**OVER, **change})


def test_an_unknown_platform_names_those_there_are():
    with pytest.raises(PlatformError, match=f"no stand-in recordings of platform 'z9'.*{BASE_PLATFORM}"):
        catalog_file.catalog("z9")


def test_every_shipped_overlay_merges_onto_the_base():
    for platform in catalog_file.platforms():
        merged = catalog_file.catalog(platform)
        assert merged["tools"] and merged["faults"], platform
        for tool, entries in merged["tools"].items():
            for entry in entries:
                assert set(entry.get("faults", [])) <= set(merged["faults"]), (platform, tool, entry["args"])


@pytest.fixture
def x200(tmp_path, monkeypatch):
    """A platform 'x200' whose nvidia-smi -q is the real H200 capture, in a platforms dir of its own."""
    platforms = tmp_path / "platforms"
    platforms.mkdir()
    sample = "nvidia_smi_q_h200_590_48_load.txt"
    over = {
        "profile": "x200",
        "inherit_faults": ["ib-port-down"],
        "faults": {"x200-gone": "nvidia-smi -q fails (synthetic)"},
        "tools": {
            "nvidia-smi": [
                {"args": ["-q"], "output": [{"sample": sample}]},
                {"args": ["-q"], "faults": ["x200-gone"], "output": [{"sample": sample, "last": 3}], "rc": 9},
            ]
        },
        "bmc": {"gpu_sample": sample, "gpu_format": "nvidia-smi-q", "system_model": "X200 box"},
        "demo": {"nodes": 3, "pxe_vms": 0, "settings": ["floors.nccl_busbw_multi_node_gbps=0.01"]},
    }
    (platforms / "x200.json").write_text(json.dumps(over))
    monkeypatch.setattr(catalog_file, "PLATFORMS_DIR", platforms)
    catalog_file.catalog.cache_clear()
    catalog_file.overlay.cache_clear()
    yield sample
    catalog_file.catalog.cache_clear()
    catalog_file.overlay.cache_clear()


def test_a_fault_spec_names_the_platform_of_a_fault_it_lacks(x200, tmp_path):
    spec = tmp_path / "faults.yml"
    spec.write_text("nodes:\n  node01: [gpu-missing]\n")
    with pytest.raises(faults.FaultSpecError, match="unknown fault 'gpu-missing' on platform x200"):
        faults.load_fault_spec(spec, "x200")
    spec.write_text("nodes:\n  node01: [x200-gone]\n")
    assert faults.load_fault_spec(spec, "x200").faults_for("node01") == ("x200-gone",)
    with pytest.raises(faults.FaultSpecError, match="unknown fault 'x200-gone'"):
        faults.load_fault_spec(spec)  # an H100 rack has no such fault


def test_a_node_of_the_platform_replays_its_recordings(x200, tmp_path, monkeypatch):
    if not Path("/usr/bin/python3").exists():
        unavailable("needs /usr/bin/python3 (the python a lab node has)")
    samples = tmp_path / "samples"  # the lab's samples and the H200 capture, a fixture
    shutil.copytree(standins.SAMPLES_DIR, samples)
    shutil.copy2(FIXTURES / x200, samples)
    monkeypatch.setattr(standins, "SAMPLES_DIR", samples)
    root = tmp_path / "node"
    (root / "etc" / "bringup-lab").mkdir(parents=True)
    (root / "etc" / "bringup-lab" / "identity.json").write_text(json.dumps({"index": 0, "platform": "x200"}))
    install_standins(root, ["x200-gone"], "x200")
    node_catalog = json.loads((root / dispatch.LIB_SUBDIR / dispatch.CATALOG_NAME).read_text())
    assert node_catalog["platform"] == "x200"
    done = subprocess.run([str(root / "usr/local/bin/nvidia-smi"), "-q"], capture_output=True, text=True)
    assert done.returncode == 9 and done.stdout == "".join(
        (FIXTURES / x200).read_text().splitlines(keepends=True)[1:3]
    )
    with pytest.raises(ValueError, match="unknown fault.*gpu-missing.* on platform x200"):
        install_standins(tmp_path / "other", ["gpu-missing"], "x200")


def test_the_bmc_lists_the_platforms_gpus(x200, monkeypatch):
    monkeypatch.setattr(bmc_inventory, "SAMPLES_DIR", FIXTURES)
    system = {"uuid": "u1", "faults": [], "platform": "x200", "cpu_count": 2}
    listed = bmc_inventory.inventory_resource(["Systems", "u1", "Processors"], system)
    gpus = [m["@odata.id"].rsplit("/", 1)[1] for m in listed["Members"] if "GPU" in m["@odata.id"]]
    assert gpus, listed
    doc = bmc_inventory.inventory_resource(["Systems", "u1", "Processors", gpus[0]], system)
    assert doc["Model"] == "NVIDIA H200" and doc["Manufacturer"] == "NVIDIA"


def test_the_bmc_lists_amd_gpus_from_amd_smi_static(monkeypatch):
    monkeypatch.setattr(bmc_inventory, "SAMPLES_DIR", FIXTURES)
    bmc_inventory._gpus.cache_clear()
    try:
        gpus = bmc_inventory._gpus("amd_smi_static_4xmi300a.txt", "amd-smi-static")
    finally:
        bmc_inventory._gpus.cache_clear()
    assert [g["id"] for g in gpus] == ["OAM.1", "OAM.2", "OAM.3", "OAM.4"]
    assert {g["model"] for g in gpus} == {"AMD Instinct MI300A"} and {g["maker"] for g in gpus} == {"AMD"}
    assert all(g["serial"] for g in gpus)


def test_a_platforms_demo_takes_its_defaults_and_the_callers_win(x200):
    demo = Demo.for_platform("x200")
    assert (demo.nodes, demo.pxe_vms, demo.profile) == (3, 0, "x200")
    # the platform's value replaces the lab's for the same key, which keeps its place
    assert "floors.nccl_busbw_multi_node_gbps=0.01" in demo.settings and len(demo.settings) == len(
        LAB_SETTINGS
    )
    assert not any(s.startswith("floors.nccl_busbw_multi_node_gbps=0.04") for s in demo.settings)
    assert Demo.for_platform("x200", nodes=5, pxe_vms=1).nodes == 5
    h100 = Demo.for_platform()
    assert (h100.nodes, h100.pxe_vms, h100.settings, h100.faults.name) == (6, 2, LAB_SETTINGS, "demo.yml")


def test_an_overlays_program_keys_replace_only_those_keys():
    merged = merge(BASE, {**OVER, "programs": {"all_reduce_perf": {"single_node": "x200_nccl.txt"}}})
    assert merged["programs"]["all_reduce_perf"] == {"faults": {}, "single_node": "x200_nccl.txt"}
    assert "single_node" not in BASE["programs"]["all_reduce_perf"]
