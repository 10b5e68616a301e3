"""`bringup lab demo` end to end: the golden list is exactly the healthy nodes.

A smaller demo than `make demo` (4 nodes, no PXE VMs: tests/lab/test_provision_lab.py boots
those) with one fault that a single-node stage catches and one only the NCCL soak can see.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.lab.conftest import require_root

pytestmark = pytest.mark.lab

BIN = Path(sys.executable).parent


def _bmc_log_tail(lab_dir: Path) -> str:
    """The BMC emulator's log tail (where sushy writes the traceback behind a 500)."""
    logs = sorted(lab_dir.rglob("bmc.log"))
    return "".join(f"\n--- {log} ---\n" + log.read_text(errors="replace")[-3000:] for log in logs)


def test_demo_golden_list_is_exactly_the_healthy_nodes(tmp_path: Path) -> None:
    require_root()
    faults = tmp_path / "faults.yml"
    faults.write_text("nodes:\n  node02: [pcie-gpu-downtrained]\n  node04: [nccl-slow]\n")
    name = f"d{uuid.uuid4().hex[:6]}"
    lab_dir = tmp_path / "lab"
    cmd = [str(BIN / "bringup"), "lab", "demo", "--name", name, "--nodes", "4", "--pxe-vms", "0"]
    cmd += ["--faults", str(faults), "--lab-dir", str(lab_dir)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:] + _bmc_log_tail(lab_dir)
        files = lab_dir / f"{name}-files"
        hostfile = (files / "golden.hostfile").read_text()
        golden = [line.split()[0] for line in hostfile.splitlines() if line and not line.startswith("#")]
        excluded = proc.stdout.split("\nexcluded:\n", 1)[1]
        excluded_nodes = {line.split("\t")[0] for line in excluded.splitlines() if "\t" in line}
        report_size = (files / "report.html").stat().st_size
        junit = (files / "report.junit.xml").read_text()
    finally:
        subprocess.run(
            [str(BIN / "bringup"), "lab", "down", "--name", name, "--lab-dir", str(lab_dir)],
            capture_output=True,
            timeout=300,
        )
    assert len(golden) == 2 and all(ip.count(".") == 3 for ip in golden), hostfile + excluded
    assert excluded_nodes == {"node02", "node04"}, excluded
    reasons = {line.split("\t")[0]: line for line in excluded.splitlines() if "\t" in line}
    assert "pcie" in reasons["node02"] and "x8" in reasons["node02"]
    assert "nccl" in reasons["node04"]
    assert report_size > 1000
    assert junit.count("<testcase") == 4 * 5  # one per node and stage
    assert not files.exists(), "lab down leaves the demo's files behind"
