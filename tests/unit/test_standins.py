"""Stand-in hardware tools: the catalog is consistent, and the dispatcher (run with the system
python3, as on a lab node) prints the right recording for healthy and faulty nodes."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from bringup.lab import standins
from bringup.lab.standins import dispatch
from tests.conftest import unavailable

SHARED_SAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "samples"
SYSTEM_PYTHON = Path("/usr/bin/python3")


def _entries():
    for tool, entries in standins.catalog()["tools"].items():
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
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},  # as minimal as a node's; the venv must not matter
    )


@pytest.fixture
def node(tmp_path: Path):
    if not SYSTEM_PYTHON.exists():
        unavailable("needs /usr/bin/python3 (the python a lab node has)")

    def make(*faults: str) -> Path:
        root = tmp_path / ("node-" + "-".join(faults or ("healthy",)))
        standins.install_standins(root, faults)
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
    known = standins.known_faults()
    used = {f for _, entry in _entries() for f in entry.get("faults", [])}
    assert used <= set(known)
    assert set(known) <= used, f"faults with no recording: {set(known) - used}"
    for name, description in known.items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name), f"{name}: fault names are kebab-case"
        assert description and "\n" not in description


def test_every_faulted_entry_has_a_healthy_twin():
    """A healthy node must answer every command a faulty node answers (same args list)."""
    for tool, entry in _entries():
        if entry.get("faults"):
            twins = [
                e for t, e in _entries() if t == tool and e["args"] == entry["args"] and not e.get("faults")
            ]
            assert twins, f"{tool} {entry['args']}: recorded only for faulty nodes"


def test_arg_patterns_compile():
    for _, entry in _entries():
        for pattern in entry["args"]:
            re.compile(pattern)


def test_no_orphan_samples():
    used = {p["sample"] for _, e in _entries() for p in e["output"]}
    present = {p.name for p in standins.SAMPLES_DIR.iterdir()}
    assert present == used


@pytest.mark.skipif(not SHARED_SAMPLES.is_dir(), reason="shared sample corpus not present")
def test_samples_are_verbatim_copies_of_the_corpus():
    for sample in standins.SAMPLES_DIR.iterdir():
        assert sample.read_bytes() == (SHARED_SAMPLES / sample.name).read_bytes(), sample.name


def test_dispatcher_is_stdlib_only():
    source = standins.DISPATCHER_PATH.read_text()
    imports = set(re.findall(r"^(?:from|import) (\w+)", source, re.M))
    assert imports <= {"__future__", "json", "os", "re", "sys"}, imports
    assert source.startswith("#!/usr/bin/python3\n")


# --- selection rule (pure) -----------------------------------------------------------------------


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


def test_conflicting_faults_are_reported():
    assert standins.fault_conflicts(["nvlink-down", "nvlink-degraded"])
    assert standins.fault_conflicts(["pcie-nic-downtrained", "pcie-gpu-downtrained", "gpu-hw-slowdown"]) == []
    with pytest.raises(ValueError, match="nvlink"):
        standins.install_standins(Path("/nonexistent"), ["nvlink-down", "nvlink-degraded"])
    with pytest.raises(ValueError, match="unknown fault"):
        standins.install_standins(Path("/nonexistent"), ["gpu-on-fire"])


# --- the dispatcher as a node runs it ------------------------------------------------------------


def test_install_layout(node):
    root = node("gpu-hw-slowdown")
    for tool in standins.tool_names():
        link = root / "usr/local/bin" / tool
        assert link.is_symlink() and not Path(link.readlink()).is_absolute()  # valid inside the chroot
    assert json.loads((root / "etc/bringup-lab/faults.json").read_text()) == {"faults": ["gpu-hw-slowdown"]}
    # Re-install with other faults: idempotent, replaces the fault list.
    standins.install_standins(root, [])
    assert json.loads((root / "etc/bringup-lab/faults.json").read_text()) == {"faults": []}


@pytest.mark.parametrize(
    ("faults", "args", "sample"),
    [
        ((), ["-q"], "nvidia_smi_q_8xh100_535_183.txt"),
        (("gpu-hw-slowdown",), ["-q"], "nvidia_smi_q_8xh100_hw_power_brake_slowdown.txt"),
        (("gpu-remapped-rows-pending",), ["-q"], "nvidia_smi_q_a10_remapped_rows_pending.txt"),
        ((), ["-q", "-d", "PAGE_RETIREMENT"], "nvidia_smi_q_d_page_retirement_8gpu_clean.txt"),
        (
            ("gpu-retired-pages",),
            ["-q", "-d", "PAGE_RETIREMENT"],
            "nvidia_smi_q_d_page_retirement_8gpu_bad_SYNTHETIC.txt",
        ),
        ((), ["nvlink", "-s"], "nvidia_smi_nvlink_s_8xa100_ok.txt"),
        (("nvlink-down",), ["nvlink", "--status"], "nvidia_smi_nvlink_s_all_links_inactive.txt"),
        (("nvlink-degraded",), ["nvlink", "-s"], "nvidia_smi_nvlink_s_h200_degraded_links.txt"),
        # A fault on another command leaves this one healthy.
        (("pcie-nic-downtrained",), ["-q"], "nvidia_smi_q_8xh100_535_183.txt"),
    ],
)
def test_nvidia_smi_prints_the_recording_for_the_node(node, faults, args, sample):
    result = run_tool(node(*faults), "nvidia-smi", *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout == _sample_body(sample)
    assert "# SOURCE" not in result.stdout


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


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("nvidia-smi", ["-x"]),
        ("nvidia-smi", ["-q", "-x"]),
        ("lspci", []),
        ("lspci", ["-vv", "-s", "19:00.0"]),
    ],
)
def test_unrecorded_arguments_fail_honestly(node, tool, args):
    result = run_tool(node(), tool, *args)
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr.startswith(f"stand-in {tool}: no recorded output for arguments")


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
