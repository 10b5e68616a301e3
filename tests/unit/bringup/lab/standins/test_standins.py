"""Stand-in hardware tools: the catalog is consistent, the recordings agree with each other, and
the dispatcher (run with the system python3, as on a lab node) prints the right recording for
every (command, fault) the burn-in checks use."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from bringup.lab import aptrepo, bmc_inventory, fabric, netfaults, standins
from bringup.lab.faults import fault_file_text, switch_fault
from bringup.lab.standins import dispatch, sysfs
from burnin.service.health import new_kernel_lines
from tests.conftest import unavailable
from tests.paths import REPO

SHARED_SAMPLES = REPO.parent / "shared" / "samples"
FIXTURE_SAMPLES = REPO / "tests" / "fixtures" / "samples"  # real captures the corpus lacks (nvbandwidth)
SYSTEM_PYTHON = Path("/usr/bin/python3")
LAB_MADE = re.compile(r"# SOURCE: (DERIVED from |SYNTHETIC)")

NVBANDWIDTH = ("-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce")
THROTTLE = (
    "--query-gpu=index,clocks_throttle_reasons.active,temperature.gpu,power.draw",
    "--format=csv,noheader,nounits",
    "-lms",
    "1000",
)
DOCKER_L = ("run", "--rm", "--gpus", "all", "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04", "nvidia-smi", "-L")
DF = ("-P", "-k", "-x", "tmpfs", "-x", "devtmpfs", "-x", "squashfs", "-x", "overlay")


def _entries(platform: str | None = "*"):
    """(tool, entry) of one platform's catalog, or of every platform's ("*")."""
    for name in standins.platforms() if platform == "*" else [platform]:
        for tool, entries in standins.catalog(name)["tools"].items():
            for entry in entries:
                yield tool, entry


def _sample_body(name: str) -> str:
    """A sample as the dispatcher prints it: without its `# SOURCE:` line."""
    return (standins.SAMPLES_DIR / name).read_text().split("\n", 1)[1]


def run_tool(root: Path, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(root / "usr/local/bin" / tool), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},  # as minimal as a node's; the venv must not matter
    )


def q_gpus() -> list[tuple[str, str]]:
    """(bus id, UUID) of the GPUs of the healthy nvidia-smi -q recording, in index order."""
    text = _sample_body("nvidia_smi_q_8xh100_535_183.txt")
    return list(
        zip(re.findall(r"^GPU (\S+)", text, re.M), re.findall(r"GPU UUID\s+: (\S+)", text), strict=True)
    )


def unpack_sysfs(root: Path) -> None:
    """What the node's init does with the installed tree (into a tmpfs there)."""
    tree = root / dispatch.SYSFS_SUBPATH
    if tree.exists():
        shutil.rmtree(tree)
    with tarfile.open(root / sysfs.SYSFS_TAR_SUBPATH) as tar:
        tar.extractall(tree, filter="tar")


@pytest.fixture
def node(tmp_path: Path):
    if not SYSTEM_PYTHON.exists():
        unavailable("needs /usr/bin/python3 (the python a lab node has)")

    def make(*faults: str, with_sysfs: bool = False) -> Path:
        root = tmp_path / ("node-" + "-".join(faults or ("healthy",)))
        standins.install_standins(root, faults)
        if with_sysfs:  # only the stress stand-in touches the tree; unpacking takes a while
            unpack_sysfs(root)
        return root

    return make


# --- catalog consistency -------------------------------------------------------------------------


def test_every_entry_references_an_existing_sample_and_skips_its_source_line():
    for tool, entry in _entries():
        assert entry["output"], f"{tool} {entry['args']}: no output parts"
        for part in entry["output"]:
            path = standins.SAMPLES_DIR / part["sample"]
            assert path.is_file(), f"{tool}: missing sample {part['sample']}"
            assert path.read_text().startswith("# SOURCE:"), f"{part['sample']}: provenance line lost"
            assert part.get("first", 2) >= 2, f"{tool}: part would print the # SOURCE: line"


def test_every_catalog_fault_is_known_and_used():
    known = {f: d for p in standins.platforms() for f, d in standins.known_faults(p).items()}
    used = {f for _, entry in _entries() for f in entry.get("faults", [])}
    used |= {f for p in standins.platforms() for f in standins.catalog(p)["sysfs"]}
    used |= {
        f
        for p in standins.platforms()
        for program in standins.catalog(p).get("programs", {}).values()
        for f in program.get("faults", {})
    }
    used |= aptrepo.package_faults() | netfaults.FAULTS  # faults of the lab's packages and network
    used |= bmc_inventory.BMC_FAULTS  # what the lab BMC reports
    used |= set(fabric.FABRIC_FAULTS)  # the lab's simulated fabric
    assert used <= set(known)
    assert set(known) <= used, f"faults with no recording: {set(known) - used}"
    for name, description in known.items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name), f"{name}: fault names are kebab-case"
        assert description and "\n" not in description


def test_every_faulted_entry_has_a_healthy_twin():
    """A healthy node must answer every command a faulty node answers (same args list), on every
    platform."""
    for platform in standins.platforms():
        for tool, entry in _entries(platform):
            if entry.get("faults"):
                twins = [
                    e
                    for t, e in _entries(platform)
                    if t == tool and e["args"] == entry["args"] and not e.get("faults")
                ]
                assert twins, f"{platform}: {tool} {entry['args']}: recorded only for faulty nodes"


def test_arg_patterns_compile():
    for _, entry in _entries():
        for pattern in entry["args"]:
            re.compile(pattern)


def test_holding_entries_are_complete_and_target_files_of_the_fake_tree(tmp_path):
    tree = sysfs.build_fake_sysfs(tmp_path, ())
    holding = [entry for tool, entry in _entries(None) if "hold" in entry]
    assert holding and {tool for tool, e in _entries(None) if "hold" in e} == {"burnin-stress"}
    for entry in holding:
        assert entry["hold"]["seconds_arg"] == "--seconds" and entry["hold"]["min"] > 0
        assert entry.get("render") in dispatch.RENDERERS
        for bdf, files in entry["sysfs_during"].items():
            for name in files:
                assert (tree / dispatch.sysfs_attr_path(bdf, name)).is_file(), (bdf, name)


def test_no_orphan_samples():
    used = {p["sample"] for _, e in _entries() for p in e["output"]}
    used |= {  # program stand-ins name the samples they read ({"sample": ...} slices)
        part["sample"]
        for platform in standins.platforms()
        for program in standins.catalog(platform).get("programs", {}).values()
        for part in program.values()
        if isinstance(part, dict) and "sample" in part
    }
    present = {p.name for p in standins.SAMPLES_DIR.iterdir()}
    assert present == used


@pytest.mark.skipif(not SHARED_SAMPLES.is_dir(), reason="shared sample corpus not present")
def test_recorded_samples_are_verbatim_and_lab_made_ones_say_so():
    """Real recordings are byte copies of the corpus (the shared one or the fixtures);
    derived/synthetic files say what they are, carry it in their name, and name sources that exist."""
    for sample in standins.SAMPLES_DIR.iterdir():
        first = sample.read_text().split("\n", 1)[0]
        if not LAB_MADE.match(first):
            copies = [
                d / sample.name for d in (SHARED_SAMPLES, FIXTURE_SAMPLES) if (d / sample.name).is_file()
            ]
            assert copies and sample.read_bytes() == copies[0].read_bytes(), sample.name
            continue
        assert re.search(r"_(DERIVED|SYNTHETIC)\.(txt|json)$", sample.name), sample.name
        assert not (SHARED_SAMPLES / sample.name).exists(), f"{sample.name} shadows a corpus file"
        sources = [n for n in re.findall(r"\b([\w.-]+\.(?:txt|json|tsv))\b", first) if n != sample.name]
        assert sources or first.startswith("# SOURCE: SYNTHETIC:"), f"{sample.name}: derived from what?"
        for source in sources:
            assert any(
                (d / source).exists() for d in (SHARED_SAMPLES, standins.SAMPLES_DIR, FIXTURE_SAMPLES)
            ), f"{sample.name}: source {source} not found"


def test_dispatcher_is_stdlib_only():
    source = standins.DISPATCHER_PATH.read_text()
    imports = set(re.findall(r"^(?:from|import) (\w+)", source, re.M))
    assert imports <= {"__future__", "json", "os", "re", "signal", "sys", "time"}, imports
    # -S -I: no site-packages, no user environment: the node's python starts in half the time,
    # which matters when 20 lab nodes run a dozen stand-ins each on a 2-core machine.
    assert source.startswith("#!/usr/bin/python3 -SI\n")


# --- selection rule and helpers (pure) -----------------------------------------------------------


def test_select_entry_prefers_the_most_specific_active_recording():
    entries = [
        {"args": ["-x"], "output": [], "id": "healthy"},
        {"args": ["-x"], "faults": ["a"], "output": [], "id": "a"},
        {"args": ["-x"], "faults": ["a", "b"], "output": [], "id": "ab"},
    ]
    assert dispatch.select_entry(entries, ["-x"], [])["id"] == "healthy"
    assert dispatch.select_entry(entries, ["-x"], ["b"])["id"] == "healthy"
    assert dispatch.select_entry(entries, ["-x"], ["a"])["id"] == "a"
    assert dispatch.select_entry(entries, ["-x"], ["b", "a"])["id"] == "ab"
    assert dispatch.select_entry(entries, ["-y"], []) is None
    assert dispatch.select_entry(entries, ["-x", "-x"], []) is None  # fullmatch, not search


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--seconds", "3", "--json"], (3.0, 3.0)),
        (["--json", "--seconds=7.5"], (7.5, 7.5)),
        (["--seconds", "0"], (0.0, 2.0)),  # a 0 s run still lasts the minimum
        (["--json"], (10.0, 10.0)),
    ],
)
def test_hold_seconds(args, expected):
    assert dispatch.hold_seconds({"seconds_arg": "--seconds", "default": 10, "min": 2}, args) == expected


@pytest.mark.parametrize(
    "args", [["--seconds", "abc"], ["--seconds", "-1"], ["--seconds", "nan"], ["--seconds"]]
)
def test_hold_seconds_rejects_bad_values(args):
    with pytest.raises(ValueError, match="--seconds must be a non-negative number"):
        dispatch.hold_seconds({"seconds_arg": "--seconds", "default": 10}, args)


def test_stress_render_rescales_duration_and_iterations():
    data = _sample_body("burnin_stress_8xh100_SYNTHETIC.json").encode()
    recorded = json.loads(data)
    three = json.loads(dispatch.render_burnin_stress(data, 3.0))
    assert three["seconds"] == 3 and recorded["seconds"] == 60
    for before, after in zip(recorded["gpus"], three["gpus"], strict=True):
        assert after["iterations"] == int(after["tflops"] * 1e12 * 3 / (2 * 8192**3))
        assert abs(after["iterations"] * 20 - before["iterations"]) <= 20  # 60 s vs 3 s
        assert {k: v for k, v in after.items() if k != "iterations"} == {
            k: v for k, v in before.items() if k != "iterations"
        }
    assert json.loads(dispatch.render_burnin_stress(data, 0.0))["gpus"][0]["iterations"] == 1


def test_conflicting_faults_are_reported():
    assert standins.fault_conflicts(["nvlink-down", "nvlink-degraded"])
    for pair in (
        ["gpu-missing", "ecc-disabled"],  # both nvidia-smi -q
        ["xid-79", "xid-48-row-remap-pending"],  # both dmesg
        ["pcie-nic-downtrained", "xid-79"],  # both dmesg
        ["stress-sdc", "pcie-gpu-gen1-under-load"],  # both burnin-stress
    ):
        problems = standins.fault_conflicts(pair)
        assert len(problems) == 1 and "no recording combines them" in problems[0], pair
    assert standins.fault_conflicts(["pcie-nic-downtrained", "pcie-gpu-downtrained", "gpu-hw-slowdown"]) == []
    assert standins.fault_conflicts(["ib-port-down", "disk-full", "fabric-manager-down", "stress-sdc"]) == []
    with pytest.raises(ValueError, match="nvlink"):
        standins.install_standins(Path("/nonexistent"), ["nvlink-down", "nvlink-degraded"])
    with pytest.raises(ValueError, match="unknown fault"):
        standins.install_standins(Path("/nonexistent"), ["gpu-on-fire"])


def test_faults_changing_the_same_sysfs_file_conflict(monkeypatch):
    data = json.loads(json.dumps(standins.catalog()))
    data["faults"]["nic-slow"] = "test fault"
    data["sysfs"]["nic-slow"] = {"0000:98:00.0": {"current_link_width": "4"}}
    monkeypatch.setattr(standins, "catalog", lambda platform=None: data)
    problems = standins.fault_conflicts(["pcie-nic-downtrained", "nic-slow"])
    assert problems == [
        "faults nic-slow, pcie-nic-downtrained both change sysfs 0000:98:00.0/current_link_width"
    ]
    assert standins.fault_conflicts(["pcie-gpu-downtrained", "nic-slow"]) == []


# --- recordings agree with each other and with the fake sysfs tree -------------------------------


def test_gpu_identities_agree_across_recordings():
    gpus = q_gpus()
    assert len(gpus) == 8
    listed = [f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: {u})" for i, (_, u) in enumerate(gpus)]
    assert _sample_body("nvidia_smi_L_8xh100_DERIVED.txt").splitlines() == listed
    for name in (
        "nvidia_smi_nvlink_s_8xh100_ok_DERIVED.txt",
        "nvidia_smi_nvlink_s_8xh100_gpu0_degraded_DERIVED.txt",
    ):
        assert [line for line in _sample_body(name).splitlines() if line.startswith("GPU")] == listed
    for name in ("burnin_stress_8xh100_SYNTHETIC.json", "burnin_stress_8xh100_gpu6_sdc_SYNTHETIC.json"):
        doc = json.loads(_sample_body(name))
        assert [(g["pci_bus_id"], g["uuid"]) for g in doc["gpus"]] == gpus
        assert [g["index"] for g in doc["gpus"]] == list(range(8))
        assert all(775 <= g["tflops"] <= 795 for g in doc["gpus"])
    tree_gpus = [d.bdf for d in sysfs.hgx_h100_devices() if d.kind == "gpu"]
    assert tree_gpus == [bus[4:].lower() for bus, _ in gpus]  # 00000000:53:00.0 -> 0000:53:00.0


def test_ibstat_agrees_with_the_fake_tree(tmp_path):
    text = _sample_body("ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt")
    cas = re.findall(r"^CA '(\S+)'\n\tCA type: (\S+)\n.*?\tNode GUID: 0x(\w+)", text, re.M | re.S)
    assert [c[0] for c in cas] == [f"mlx5_{i}" for i in range(8)]
    assert {c[1] for c in cas} == {"MT4129"}
    tree = sysfs.build_fake_sysfs(tmp_path, ())
    for name, _, guid in cas:
        [ib] = tree.glob(f"bus/pci/devices/*/infiniband/{name}")
        assert (ib / "node_guid").read_text().strip().replace(":", "") == guid
        assert (ib / "fw_ver").read_text().strip() == "28.39.1002"
        # the ib stage's discovery reads hca_type where ibstat is missing: the CA type ibstat prints
        assert (ib / "hca_type").read_text().strip() == "MT4129"
    assert text.count("Link layer: InfiniBand") == 8 and text.count("State: Active") == 8
    assert text.count("Rate: 400") == 8 and text.count("Firmware version: 28.39.1002") == 8


# --- every (command, fault) a burn-in check uses ------------------------------------------------


@pytest.mark.parametrize(
    ("faults", "tool", "args", "sample"),
    [
        ((), "nvidia-smi", ["-q"], "nvidia_smi_q_8xh100_535_183.txt"),
        (("gpu-missing",), "nvidia-smi", ["-q"], "nvidia_smi_q_8xh100_535_183_gpu4_missing_DERIVED.txt"),
        (
            ("ecc-disabled",),
            "nvidia-smi",
            ["-q"],
            "nvidia_smi_q_8xh100_535_183_gpu1_ecc_disabled_DERIVED.txt",
        ),
        (
            ("xid-48-row-remap-pending",),
            "nvidia-smi",
            ["--query"],
            "nvidia_smi_q_8xh100_535_183_gpu7_row_remap_pending_DERIVED.txt",
        ),
        (("driver-version-wrong",), "nvidia-smi", ["-q"], "nvidia_smi_q_8xh100_hw_power_brake_slowdown.txt"),
        # gpu-hw-slowdown shows only under load, never in an idle -q
        (("gpu-hw-slowdown",), "nvidia-smi", ["-q"], "nvidia_smi_q_8xh100_535_183.txt"),
        # A fault on another command leaves this one healthy.
        (("pcie-nic-downtrained",), "nvidia-smi", ["-q"], "nvidia_smi_q_8xh100_535_183.txt"),
        ((), "nvidia-smi", ["-q", "-d", "PAGE_RETIREMENT"], "nvidia_smi_q_d_page_retirement_8gpu_clean.txt"),
        (
            ("gpu-retired-pages",),
            "nvidia-smi",
            ["-q", "-d", "PAGE_RETIREMENT"],
            "nvidia_smi_q_d_page_retirement_8gpu_bad_SYNTHETIC.txt",
        ),
        ((), "nvidia-smi", ["nvlink", "-s"], "nvidia_smi_nvlink_s_8xh100_ok_DERIVED.txt"),
        (
            ("nvlink-down",),
            "nvidia-smi",
            ["nvlink", "--status"],
            "nvidia_smi_nvlink_s_8xh100_gpu6_all_links_inactive_DERIVED.txt",
        ),
        (
            ("nvlink-degraded",),
            "nvidia-smi",
            ["nvlink", "-s"],
            "nvidia_smi_nvlink_s_8xh100_gpu0_degraded_DERIVED.txt",
        ),
        ((), "nvidia-smi", ["-L"], "nvidia_smi_L_8xh100_DERIVED.txt"),
        ((), "nvidia-smi", list(THROTTLE), "nvidia_smi_query_throttle_8xh100_load_SYNTHETIC.txt"),
        (
            ("gpu-hw-slowdown",),
            "nvidia-smi",
            list(THROTTLE),
            "nvidia_smi_query_throttle_8xh100_load_gpu5_hw_slowdown_DERIVED.txt",
        ),
        ((), "ibstat", [], "ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt"),
        (("ib-port-down",), "ibstat", [], "ibstat_8xh100_cx7_ndr_ib_mlx5_6_down_polling_DERIVED.txt"),
        ((), "ofed_info", ["-s"], "ofed_info_s_doca_ofed_24_04_0_6_6_SYNTHETIC.txt"),
        ((), "df", list(DF), "df_pk_8xh100_node_SYNTHETIC.txt"),
        ((), "df", ["-h"], "df_pk_8xh100_node_SYNTHETIC.txt"),
        (("disk-full",), "df", list(DF), "df_pk_8xh100_node_root_full_SYNTHETIC.txt"),
        ((), "docker", list(DOCKER_L), "nvidia_smi_L_8xh100_DERIVED.txt"),
        (
            (),
            "docker",
            ["run", "--gpus=all", "ubuntu:22.04", "nvidia-smi", "-L"],
            "nvidia_smi_L_8xh100_DERIVED.txt",
        ),
        ((), "dcgmi", ["diag", "-r", "3", "-j"], "dcgmi_diag_r3_j_8xh100_dcgm338_pass_DERIVED.json"),
        ((), "dcgmi", ["diag", "-j", "--run", "1"], "dcgmi_diag_r3_j_8xh100_dcgm338_pass_DERIVED.json"),
        (
            ("dcgm-memory-failure",),
            "dcgmi",
            ["diag", "-r", "3", "-j"],
            "dcgmi_diag_r3_j_8xh100_dcgm338_gpu2_memory_fail_DERIVED.json",
        ),
        ((), "dmesg", ["--time-format", "iso"], "dmesg_iso_8xh100_boot_DERIVED.txt"),
        ((), "dmesg", [], "dmesg_iso_8xh100_boot_DERIVED.txt"),
        ((), "systemctl", ["is-active", "nvidia-fabricmanager"], "systemctl_is_active_active_SYNTHETIC.txt"),
        ((), "nvbandwidth", list(NVBANDWIDTH), "nvbandwidth_h2d_d2h_ce_8xh100_DERIVED.txt"),
        (
            ("gpu-h2d-slow",),
            "nvbandwidth",
            list(NVBANDWIDTH),
            "nvbandwidth_h2d_d2h_ce_8xh100_gpu5_h2d_slow_DERIVED.txt",
        ),
        ((), "lscpu", ["-J"], "lscpu_J_2x_xeon_platinum_8480c_SYNTHETIC.json"),
        ((), "dmidecode", ["-t", "memory"], "dmidecode_t_memory_2s_32x64gb_ddr5_SYNTHETIC.txt"),
        (
            ("dimm-missing",),
            "dmidecode",
            ["-t", "memory"],
            "dmidecode_t_memory_2s_32x64gb_ddr5_cpu0_dimm_c2_missing_SYNTHETIC.txt",
        ),
        ((), "smartctl", ["--scan", "-d", "nvme"], "smartctl_scan_d_nvme_10_drives_SYNTHETIC.txt"),
        ((), "smartctl", ["-j", "-a", "/dev/nvme7"], "smartctl_j_a_nvme_3_84tb_u2_SYNTHETIC.json"),
    ],
)
def test_tool_prints_the_recording_for_the_node(node, faults, tool, args, sample):
    result = run_tool(node(*faults), tool, *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout == _sample_body(sample)
    assert "# SOURCE" not in result.stdout


def test_fabric_manager_down_is_inactive_with_rc_3(node):
    result = run_tool(node("fabric-manager-down"), "systemctl", "is-active", "nvidia-fabricmanager")
    assert (result.returncode, result.stdout) == (3, "inactive\n")
    assert run_tool(node("fabric-manager-down"), "systemctl", "status", "sshd").returncode == 2


@pytest.mark.parametrize(
    ("fault", "added"),
    [
        ("xid-79", "dmesg_iso_xid79_gpu0_DERIVED.txt"),
        ("xid-48-row-remap-pending", "dmesg_iso_xid48_63_94_gpu7_DERIVED.txt"),
    ],
)
def test_dmesg_xid_faults_append_real_lines_for_the_right_gpu(node, fault, added):
    result = run_tool(node(fault), "dmesg", "--time-format", "iso")
    assert result.returncode == 0
    assert result.stdout == _sample_body("dmesg_iso_8xh100_boot_DERIVED.txt") + _sample_body(added)
    healthy = run_tool(node(), "dmesg", "--time-format", "iso").stdout
    assert "NVRM: Xid" not in healthy and "limited by" not in healthy
    xid_buses = set(re.findall(r"NVRM: Xid \(PCI:0000:([0-9a-f]{2}):00\)", result.stdout))
    gpu_buses = [bus[9:11].lower() for bus, _ in q_gpus()]
    assert xid_buses == {gpu_buses[0] if fault == "xid-79" else gpu_buses[7]}
    if fault == "xid-48-row-remap-pending":  # the same GPU shows the pending remap in nvidia-smi -q
        q = run_tool(node(fault), "nvidia-smi", "-q").stdout
        block = q.split("GPU 00000000:CA:00.0", 1)[1]
        assert re.search(r"Remapped Rows\n(.*\n){2}\s+Pending\s+: Yes", block)
        assert len(re.findall(r"Pending\s+: Yes", q)) == 1


def _switch(root: Path, action: str, fault: str, now: str) -> None:
    """What `bringup lab fault` writes into a running node's faults file."""
    path = root / standins.FAULTS_FILE
    new = switch_fault(json.loads(path.read_text()), "node01", action, fault, now)
    path.write_text(fault_file_text(new))


def test_a_kernel_log_fault_switched_on_logs_its_lines_now_and_the_health_cursor_sees_them(node):
    root = node()
    boot = _sample_body("dmesg_iso_8xh100_boot_DERIVED.txt")
    cursor = new_kernel_lines(
        run_tool(root, "dmesg", "--time-format", "iso").stdout, None, "b1"
    ).cursor.to_json()

    _switch(root, "add", "xid-79", "2026-11-28T16:50:01,000000+00:00")
    log = run_tool(root, "dmesg", "--time-format", "iso").stdout
    recorded = _sample_body("dmesg_iso_xid79_gpu0_DERIVED.txt")
    assert log.startswith(boot)
    added = log[len(boot) :]
    # the recording's lines, each stamp moved by the same amount: first at the switch, gaps kept
    assert added.splitlines()[0] == "2026-11-28T16:50:01,000000+00:00 " + recorded.splitlines()[0][33:]
    assert added.splitlines()[2].startswith(
        "2026-11-28T16:50:01,000008+00:00 NVRM: Xid (PCI:0000:53:00): 79,"
    )
    assert [line[33:] for line in added.splitlines()] == [line[33:] for line in recorded.splitlines()]
    seen = new_kernel_lines(log, cursor, "b1")
    assert (seen.text, seen.reset) == (added, "")  # exactly the new lines, the cursor continued

    _switch(root, "remove", "xid-79", "2026-11-28T16:51:00,000000+00:00")
    log = run_tool(root, "dmesg", "--time-format", "iso").stdout
    assert log == boot  # the node answers from its resolved recordings again (front.py)
    after = new_kernel_lines(log, seen.cursor.to_json(), "b1")
    assert "NVRM: Xid" not in after.text and after.reset.startswith(
        "the last line judged is no longer in the log"
    )

    _switch(root, "add", "xid-79", "2026-11-28T16:52:00,500000+00:00")  # again: logged again, later
    again = new_kernel_lines(
        run_tool(root, "dmesg", "--time-format", "iso").stdout, after.cursor.to_json(), "b1"
    )
    assert again.reset == "" and again.text.startswith(
        "2026-11-28T16:52:00,500000+00:00 NVRM: GPU at PCI:0000:53:00"
    )


def test_dmesg_downtrained_nic_line_names_the_nic_of_the_fake_tree(node):
    root = node("pcie-nic-downtrained", with_sysfs=True)
    lines = run_tool(root, "dmesg", "--time-format", "iso").stdout.splitlines()
    healthy = run_tool(node(), "dmesg").stdout.splitlines()
    assert len(lines) == len(healthy)
    changed = [(a, b) for a, b in zip(healthy, lines, strict=True) if a != b]
    assert len(changed) == 1
    old, new = changed[0]
    assert "504.112 Gb/s available PCIe bandwidth (32.0 GT/s PCIe x16 link)" in old
    m = re.search(
        r"mlx5_core (\S+): [\d.]+ Gb/s available PCIe bandwidth, limited by 16\.0 GT/s PCIe x8 link at (\S+) ",
        new,
    )
    assert m, new
    tree = root / dispatch.SYSFS_SUBPATH
    nic = tree / dispatch.sysfs_attr_path(m.group(1))
    assert (nic / "infiniband/mlx5_4").is_dir() and (nic / "current_link_width").read_text() == "8\n"
    assert nic.resolve().parent.name == m.group(2)  # the limiting port is the NIC's upstream port
    assert new.split(" ", 1)[0] == old.split(" ", 1)[0]  # same timestamp, order kept


def test_xid_and_throttle_faults_point_at_one_gpu(node):
    rows = [
        line.split(", ")
        for line in run_tool(node("gpu-hw-slowdown"), "nvidia-smi", *THROTTLE).stdout.splitlines()
    ]
    assert len(rows) % 8 == 0 and len(rows) >= 16
    slowed = {r[0] for r in rows if int(r[1], 16) & 0x88}
    assert slowed == {"5"}
    healthy = [line.split(", ") for line in run_tool(node(), "nvidia-smi", *THROTTLE).stdout.splitlines()]
    assert {int(r[1], 16) for r in healthy} <= {0x0, 0x4}  # SW power cap under load is not a fault
    assert [r[0] for r in healthy[:8]] == [str(i) for i in range(8)]


def test_gpu_missing_and_ecc_faults(node):
    missing = run_tool(node("gpu-missing"), "nvidia-smi", "-q").stdout
    assert re.search(r"Attached GPUs\s+: 7\n", missing) and missing.count("\nGPU 00000000:") == 7
    assert "GPU 00000000:97:00.0" not in missing
    ecc = run_tool(node("ecc-disabled"), "nvidia-smi", "-q").stdout
    modes = re.findall(r"ECC Mode\n\s+Current\s+: (\w+)\n\s+Pending\s+: (\w+)", ecc)
    assert modes.count(("Disabled", "Disabled")) == 1 and modes.count(("Enabled", "Enabled")) == 7
    assert modes.index(("Disabled", "Disabled")) == 1


def test_dcgm_memory_failure_fails_gpu_2_only(node):
    def statuses(doc):
        return {
            (t["name"], r["gpu_ids"]): r["status"]
            for c in doc["DCGM GPU Diagnostic"]["test_categories"]
            for t in c["tests"]
            for r in t["results"]
        }

    ok = json.loads(run_tool(node(), "dcgmi", "diag", "-r", "3", "-j").stdout)
    bad = json.loads(run_tool(node("dcgm-memory-failure"), "dcgmi", "diag", "-r", "3", "-j").stdout)
    assert ok["DCGM GPU Diagnostic"]["version"] == "3.3.8"
    assert set(statuses(ok).values()) == {"PASS"}
    diff = {k: v for k, v in statuses(bad).items() if statuses(ok)[k] != v}
    assert diff == {("memory", "2"): "FAIL"}
    assert {gpus for _, gpus in statuses(ok)} == {*"01234567", "0,1,2,3,4,5,6,7"}
    [memory] = [
        t for c in bad["DCGM GPU Diagnostic"]["test_categories"] for t in c["tests"] if t["name"] == "memory"
    ]
    [warning] = memory["results"][2]["warnings"]
    assert warning["error_id"] == 52 and warning["error_severity"] == 2 and "GPU 2" in warning["warning"]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("nvidia-smi", ["-x"]),
        ("nvidia-smi", ["-q", "-x"]),
        ("lspci", []),
        ("lspci", ["-vv", "-s", "19:00.0"]),
        ("ibstat", ["mlx5_0"]),
        ("dcgmi", ["diag", "-r", "3"]),
        ("docker", ["ps"]),
        ("ofed_info", []),
    ],
)
def test_unrecorded_arguments_fail_honestly(node, tool, args):
    result = run_tool(node(), tool, *args)
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr.startswith(f"stand-in {tool}: no recorded output for arguments")


# --- the stress stand-in ------------------------------------------------------------------------


def _speeds(root: Path, bdfs: list[str]) -> list[str]:
    tree = root / dispatch.SYSFS_SUBPATH
    return [(tree / dispatch.sysfs_attr_path(b, "current_link_speed")).read_text().strip() for b in bdfs]


def _gpu_and_port_bdfs() -> tuple[list[str], list[str]]:
    devices = [d for d in sysfs.hgx_h100_devices() if d.kind == "gpu"]
    return [d.bdf for d in devices], [d.parent for d in devices]


def _run_stress_and_watch(root: Path, *args: str) -> tuple[subprocess.Popen[str], list[str], list[str]]:
    """Start burnin-stress, wait until it has made its changes, return the links meanwhile.

    It writes in BDF order, so GPU 7 (raised in every recording) is the last change.
    """
    gpus, ports = _gpu_and_port_bdfs()
    proc = subprocess.Popen(
        [str(root / "usr/local/bin/burnin-stress"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    deadline = time.monotonic() + 30
    while (
        _speeds(root, gpus[-1:]) != ["32.0 GT/s PCIe"] and proc.poll() is None and time.monotonic() < deadline
    ):
        time.sleep(0.01)
    return proc, _speeds(root, gpus), _speeds(root, ports)


def test_stress_raises_gpu_links_while_it_runs_and_restores_them(node):
    root = node(with_sysfs=True)
    gpus, ports = _gpu_and_port_bdfs()
    assert set(_speeds(root, gpus + ports)) == {"2.5 GT/s PCIe"}  # idle power saving
    proc, during_gpus, during_ports = _run_stress_and_watch(root, "--seconds", "0", "--json")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert set(during_gpus) == set(during_ports) == {"32.0 GT/s PCIe"}
    assert set(_speeds(root, gpus + ports)) == {"2.5 GT/s PCIe"}
    doc = json.loads(out)
    assert doc["tool"] == "burnin-stress" and doc["seconds"] == 0 and doc["error"] is None
    assert len(doc["gpus"]) == 8 and all(g["mismatches"] == 0 for g in doc["gpus"])
    assert len({json.dumps(g["digests"], sort_keys=True) for g in doc["gpus"]}) == 1
    assert all(re.fullmatch(r"[0-9a-f]{64}", d) for g in doc["gpus"] for d in g["digests"].values())


def test_stress_killed_by_sigterm_restores_the_links(node):
    root = node(with_sysfs=True)
    gpus, _ = _gpu_and_port_bdfs()
    proc, during, _ = _run_stress_and_watch(root, "--seconds", "600", "--json")
    assert set(during) == {"32.0 GT/s PCIe"}
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM and out == ""
    assert set(_speeds(root, gpus)) == {"2.5 GT/s PCIe"}


def test_stress_faults(node):
    gpus, _ = _gpu_and_port_bdfs()
    root = node("pcie-gpu-gen1-under-load", with_sysfs=True)
    proc, during, _ = _run_stress_and_watch(root, "--seconds", "0")
    proc.communicate(timeout=60)
    assert [s == "2.5 GT/s PCIe" for s in during] == [i == 3 for i in range(8)]

    out = run_tool(node("stress-sdc", with_sysfs=True), "burnin-stress", "--seconds", "0", "--json").stdout
    doc = json.loads(out)
    seed1 = [g["digests"]["1"] for g in doc["gpus"]]
    odd = [g["index"] for g in doc["gpus"] if seed1.count(g["digests"]["1"]) == 1]
    assert odd == [6] and [g["mismatches"] for g in doc["gpus"]] == [0] * 6 + [2, 0]
    assert len({g["digests"]["0"] for g in doc["gpus"]}) == 1


def test_stress_rejects_a_bad_duration(node):
    result = run_tool(node(), "burnin-stress", "--seconds", "soon")
    assert result.returncode == 2 and result.stdout == ""
    assert "--seconds must be a non-negative number of seconds" in result.stderr


# --- install, lspci and the rest ----------------------------------------------------------------


def test_install_layout(node):
    root = node("gpu-hw-slowdown")
    for tool in standins.tool_names():
        front = root / "usr/local/bin" / tool
        assert front.read_text().startswith("#!/bin/bash\n") and os.access(front, os.X_OK)
        link = root / "usr/local/lib/bringup-standins/tools" / tool
        assert link.is_symlink() and not Path(link.readlink()).is_absolute()  # valid inside the chroot
    assert {"nvidia-smi", "dcgmi", "ibstat", "dmesg", "burnin-stress", "docker"} <= set(standins.tool_names())
    assert json.loads((root / "etc/bringup-lab/faults.json").read_text()) == {"faults": ["gpu-hw-slowdown"]}

    def nic_width() -> bytes:
        with tarfile.open(root / sysfs.SYSFS_TAR_SUBPATH) as tar:
            member = tar.extractfile(
                next(m for m in tar if m.name.endswith("0000:98:00.0/current_link_width"))
            )
            assert member is not None
            return member.read()

    assert nic_width() == b"16\n"
    # Re-install with other faults: idempotent, replaces the fault list and the sysfs tree.
    standins.install_standins(root, ["pcie-nic-downtrained"])
    assert json.loads((root / "etc/bringup-lab/faults.json").read_text()) == {
        "faults": ["pcie-nic-downtrained"]
    }
    assert nic_width() == b"8\n"
    standins.install_standins(root, [])
    assert nic_width() == b"16\n"


def test_nvidia_smi_drops_the_shell_prompt_of_captures(node):
    root = node()
    table = run_tool(root, "nvidia-smi")
    assert table.returncode == 0
    assert table.stdout.splitlines()[0] == "Fri Nov  8 02:11:26 2024"
    assert table.stdout.count("NVIDIA H100 80GB HBM3") == 8
    topo = run_tool(root, "nvidia-smi", "topo", "-m")
    assert topo.stdout.startswith("\tGPU0\tGPU1")
    csv = run_tool(
        root,
        "nvidia-smi",
        "--query-gpu=index,pcie.link.gen.current,pcie.link.gen.max,"
        "pcie.link.width.current,pcie.link.width.max",
        "--format=csv",
    )
    assert csv.returncode == 0
    assert (
        csv.stdout.splitlines()[0]
        == "index, pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max"
    )
    assert len(csv.stdout.splitlines()) == 9


def _lnksta(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("LnkSta:")]


def test_lspci_healthy_node(node):
    result = run_tool(node(), "lspci", "-vv")
    assert result.returncode == 0, result.stderr
    assert _lnksta(result.stdout) == [
        "LnkSta:\tSpeed 16GT/s (downgraded), Width x4 (ok)",  # the benign switch port
        "LnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)",  # H100
        "LnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)",  # ConnectX-7
    ]
    # lspci ends every device record with an empty line.
    assert result.stdout.endswith("\n\n") and result.stdout.count("\n\n") == 3
    assert run_tool(node(), "lspci", "-vvv").stdout == result.stdout


def test_lspci_downtrained_nic_and_gpu(node):
    nic = run_tool(node("pcie-nic-downtrained"), "lspci", "-vv")
    assert "LnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)" in _lnksta(nic.stdout)
    assert "ConnectX-7" in nic.stdout
    only_nic = run_tool(node("pcie-nic-downtrained"), "lspci", "-d", "15b3:", "-vv")
    assert _lnksta(only_nic.stdout) == ["LnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)"]
    gpu = run_tool(node("pcie-gpu-downtrained"), "lspci", "-vvv", "-d", "10de:")
    assert _lnksta(gpu.stdout) == ["LnkSta: Speed 2.5GT/s (downgraded), Width x8 (downgraded)"]
    both = run_tool(node("pcie-gpu-downtrained", "pcie-nic-downtrained"), "lspci", "-vv")
    assert sum("(downgraded), Width x8 (downgraded)" in line for line in _lnksta(both.stdout)) == 2


def test_broken_faults_file_fails_instead_of_passing(node):
    root = node()
    (root / "etc/bringup-lab/faults.json").write_text('{"faults": ["gpu-on-fire"]}')
    result = run_tool(root, "nvidia-smi", "-q")
    assert result.returncode != 0 and "unknown fault" in result.stderr
    (root / "etc/bringup-lab/faults.json").write_text("not json")
    assert run_tool(root, "nvidia-smi", "-q").returncode != 0


def test_missing_faults_file_means_healthy(node):
    root = node()
    (root / "etc/bringup-lab/faults.json").unlink()
    result = run_tool(root, "nvidia-smi", "-q")
    assert result.returncode == 0 and result.stdout == _sample_body("nvidia_smi_q_8xh100_535_183.txt")


def test_stress_without_its_sysfs_tree_fails_instead_of_passing(node):
    root = node()  # installed but never unpacked, like a node whose init could not mount it
    assert not (root / dispatch.SYSFS_SUBPATH).exists()
    result = run_tool(root, "burnin-stress", "--seconds", "0", "--json")
    assert result.returncode == dispatch.EXIT_BROKEN_SETUP and result.stdout == ""
    assert "fake sysfs" in result.stderr


def test_closed_pipe_is_not_an_error(node):
    root = node()
    result = subprocess.run(
        f"'{root}/usr/local/bin/nvidia-smi' -q | head -n 3",
        shell=True,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0 and result.stderr == ""
    assert len(result.stdout.splitlines()) == 3


def test_front_hands_python_only_patterns_to_the_dispatcher():
    from bringup.lab.standins import front

    entries = [
        {"args": ["-x"], "output": []},
        {"args": ["(?i)-Y"], "output": []},
        {"args": ["-z"], "output": []},
    ]
    script = front.front_script("tool", entries, [], "../lib", "{}")
    assert "resolved/tool.0" in script  # answered by bash
    assert "resolved/tool.2" not in script  # after an unconvertible pattern, order is dispatch.py's
    assert front.to_ere(r"run( \S+)* x \d+") == "run( [^[:space:]]+)* x [0-9]+"


# --- every node its own InfiniBand identity -------------------------------------------------------

RECORDED_GUID = "0xa088c20300e04776"  # mlx5_3 of the ibstat recordings


def _hex(guid: str) -> str:
    """The 16 hex digits of a GUID in any notation, lower case."""
    return guid.lower().removeprefix("0x").replace(":", "").replace("-", "")


def test_rewrite_renumbers_every_notation_of_one_guid_alike():
    text = (
        f"\t\tPort GUID: {RECORDED_GUID}\n"
        "node_guid: a088:c203:00e0:4776\n"
        "GID[  0]:\t\tfe80:0000:0000:0000:a088:c203:00e0:4776\n"
        "Device Serial Number a0-88-c2-03-00-e0-47-76\n"
        "link/infiniband 00:00:10:29:fe:80:00:00:00:00:00:00:a0:88:c2:03:00:e0:47:76\n"
        "GUID 0xA088C20300E04776\n"
    )
    out = dispatch.rewrite_guids(text, 3)
    assert out.splitlines() == [
        "\t\tPort GUID: 0xa088c20003e04776",
        "node_guid: a088:c200:03e0:4776",
        "GID[  0]:\t\tfe80:0000:0000:0000:a088:c200:03e0:4776",  # the subnet prefix is no GUID
        "Device Serial Number a0-88-c2-00-03-e0-47-76",
        "link/infiniband 00:00:10:29:fe:80:00:00:00:00:00:00:a0:88:c2:00:03:e0:47:76",
        "GUID 0xA088C20003E04776",  # letter case kept
    ]
    guids = re.findall(r"0x\w{16}|(?:\w{4}:){3}\w{4}$|(?:\w\w[:-]){7}\w\w$", out, re.M)
    assert len(guids) == 6 and {_hex(g) for g in guids} == {"a088c20003e04776"}


def test_rewrite_leaves_other_hex_alone():
    others = (
        "0x0000000000000088, 72, 700.05\n"  # a throttle-reason mask: 64-bit hex, no HCA OUI
        "[V3] Vendor specific: d610e4f45c66ee118000a088c2b8a0c4\n"  # the OUI inside a longer blob
        "CA 1719 1 0x7cfe9003009ce5b0 4x NDR\n"  # another vendor's OUI
        "0xa088c20300e047761 x0xa088c20300e04776 a088:c203:00e0:4776:0001\n"  # longer than a GUID
        "Capabilities: [100 v1] Device Serial Number 00-80-5e-dc-5f-09-56-18\n"
    )
    assert dispatch.rewrite_guids(others, 3) == others


def test_two_nodes_get_different_guids_and_the_rest_stays_byte_for_byte():
    from burnin.parsers.ibstat import parse_ibstat

    recorded = (standins.SAMPLES_DIR / "ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt").read_bytes()
    per_node = {}
    for node in (1, 2):
        out = dispatch.for_node(recorded, node)
        assert len(out) == len(recorded)
        changed = [(a, b) for a, b in zip(recorded.splitlines(), out.splitlines(), strict=True) if a != b]
        assert len(changed) == 3 * 8  # node, system image and port GUID of each HCA; nothing else
        assert all(b"GUID: 0xa088c2" in a and b"GUID: 0xa088c2" in b for a, b in changed)
        hcas = parse_ibstat(out.decode().split("\n", 1)[1]).hcas
        ports = [p.port_guid for h in hcas for p in h.ports]
        assert all(h.node_guid == h.system_image_guid == h.ports[0].port_guid for h in hcas)
        assert len(set(ports)) == 8  # the ports of one node stay distinct
        for old, new in zip(parse_ibstat(recorded.decode().split("\n", 1)[1]).hcas, hcas, strict=True):
            before, after = _hex(old.node_guid), _hex(new.node_guid)
            assert after[:6] == before[:6] == "a088c2" and after[10:] == before[10:]
            assert int(after[6:10], 16) == node
        per_node[node] = set(ports)
    assert not per_node[1] & per_node[2]
    assert dispatch.for_node(recorded, None) == recorded


@pytest.mark.parametrize("node", [-1, 0x10000])
def test_rewrite_refuses_a_node_number_out_of_range(node):
    with pytest.raises(ValueError, match="out of range"):
        dispatch.rewrite_guids(RECORDED_GUID, node)


def _identity(root: Path, data: object) -> None:
    path = root / dispatch.IDENTITY_SUBPATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)


def test_node_number_comes_from_the_identity_file(tmp_path):
    assert dispatch.node_number(tmp_path) is None  # a bare root: recordings unchanged
    _identity(tmp_path, {"name": "node03", "serial": "LAB1"})
    assert dispatch.node_number(tmp_path) is None  # an identity without an index
    _identity(tmp_path, {"name": "node03", "index": 2})
    assert dispatch.node_number(tmp_path) == 3
    for bad in ({"index": "2"}, {"index": True}, {"index": -1}, "not json"):
        _identity(tmp_path, bad)
        with pytest.raises(dispatch.StandinError):
            dispatch.node_number(tmp_path)


def _tar_text(root: Path, suffix: str) -> str:
    with tarfile.open(root / sysfs.SYSFS_TAR_SUBPATH) as tar:
        member = tar.extractfile(next(m for m in tar if m.name.endswith(suffix)))
        assert member is not None
        return member.read().decode().strip()


def test_installed_node_shows_its_own_guids_in_every_tool_and_the_tree(tmp_path):
    if not SYSTEM_PYTHON.exists():
        unavailable("needs /usr/bin/python3 (the python a lab node has)")
    from burnin.parsers.ibstat import parse_ibstat

    seen = {}
    for index in (0, 1):
        root = tmp_path / f"node{index + 1:02d}"
        _identity(root, {"name": root.name, "index": index})
        standins.install_standins(root, [])
        front = run_tool(root, "ibstat")  # bash front: the output rendered at install
        (root / "etc/bringup-lab/faults.json").write_text('{"faults": []}')  # not what the front has
        python = run_tool(root, "ibstat")  # now dispatch.py answers
        assert front.returncode == python.returncode == 0 and front.stdout == python.stdout
        assert front.stdout != _sample_body("ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt")
        ports = {h.name: h.ports[0].port_guid for h in parse_ibstat(front.stdout).hcas}
        for hca, guid in ports.items():
            tree = f"/infiniband/{hca}"
            assert _hex(_tar_text(root, f"{tree}/node_guid")) == _hex(guid)
            assert _hex(_tar_text(root, f"{tree}/sys_image_guid")) == _hex(guid)
            assert _tar_text(root, f"{tree}/ports/1/gids/0") == "fe80:0000:0000:0000:" + _tar_text(
                root, f"{tree}/node_guid"
            )
        seen[index] = set(ports.values())
    assert len(seen[0]) == len(seen[1]) == 8 and not seen[0] & seen[1]


@pytest.mark.parametrize(
    "stamp",
    [
        "1970-01-01T00:00:00,000000+00:00",
        "2024-02-29T23:59:59,999999+00:00",
        "2100-03-01T12:00:00,000001+00:00",
    ],
)
def test_dmesg_iso_stamps_read_as_the_calendar_does_and_write_back_the_same(stamp):
    import calendar
    import time as _time

    micros = dispatch.parse_iso_stamp(stamp + " NVRM: x")
    assert micros == calendar.timegm(_time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) * 1_000_000 + int(
        stamp[20:26]
    )
    assert dispatch.iso_stamp(micros) == stamp


def test_removed_and_added_again_with_no_check_between_the_cursor_takes_the_lines_for_those_it_judged(node):
    """The one case docs/lab.md warns of: the same texts with the same gaps as the judged lines."""
    root = node()
    _switch(root, "add", "xid-79", "2026-11-28T16:50:01,000000+00:00")
    judged = new_kernel_lines(run_tool(root, "dmesg", "--time-format", "iso").stdout, None, "b1")
    _switch(root, "remove", "xid-79", "2026-11-28T16:51:00,000000+00:00")
    _switch(root, "add", "xid-79", "2026-11-28T16:52:00,000000+00:00")
    again = new_kernel_lines(
        run_tool(root, "dmesg", "--time-format", "iso").stdout, judged.cursor.to_json(), "b1"
    )
    assert (again.text, again.reset) == ("", "")
