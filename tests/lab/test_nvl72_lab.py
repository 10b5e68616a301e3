"""A small GB200 NVL72 rack on the lab: 4 trays of platform gb200-nvl72-tray, one of which never
finished registering with the rack's NVLink fabric (its GPUs stay In Progress).

Preflight's gpu_fabric_state fails that tray alone; the other three register in one NVLink
domain, pass the nccl stage's two passes (multi-node NVLink on, then off) and are the golden
list, exported as one Slurm topology block named after the domain (docs/lab.md, "GB200 NVL72";
docs/golden.md, "NVLink domains"). The whole-rack demo (18 trays, a slow switch tray and an IMEX
node down besides) is `make demo PROFILE=gb200-nvl72-tray`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.lab.conftest import require_root

pytestmark = pytest.mark.lab

BIN = Path(sys.executable).parent
# The NVLink domain of the recordings: ClusterUUID and CliqueId (burnin/golden/topology.py names it).
BLOCK = "nvl-9c6f5af3-53bf-49b5-a436-b66766c413c3-4026"


def test_a_tray_in_progress_is_failed_in_preflight_and_the_rest_is_one_block(tmp_path: Path) -> None:
    require_root()
    faults = tmp_path / "faults.yml"
    faults.write_text("nodes:\n  node02: [nvlink-fabric-in-progress]\n")
    name = f"n{uuid.uuid4().hex[:6]}"
    lab_dir = tmp_path / "lab"
    cmd = [str(BIN / "bringup"), "lab", "demo", "--profile", "gb200-nvl72-tray", "--name", name]
    cmd += ["--nodes", "4", "--pxe-vms", "0", "--faults", str(faults), "--lab-dir", str(lab_dir)]
    files = lab_dir / f"{name}-files"
    env = {
        **os.environ,
        "BRINGUP_DB": str(files / "fleet.db"),
        "BRINGUP_INVENTORY_DIR": str(files / "inventories"),
        "BRINGUP_LAB_DIR": str(lab_dir),
    }

    def burnin(*args: str) -> str:
        proc = subprocess.run(
            [str(BIN / "burnin"), *args], capture_output=True, text=True, env=env, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
        excluded = burnin("golden", "--rack", name, "--format", "hostfile", "--excluded", "--address", "name")
        blocks = burnin("golden", "--rack", name, "--format", "topology-block")
        soak = burnin("results", "node01", "--json")
    finally:
        subprocess.run(
            [str(BIN / "bringup"), "lab", "down", "--name", name, "--lab-dir", str(lab_dir)],
            capture_output=True,
            timeout=300,
        )
    reasons = {line.split("\t")[0]: line for line in excluded.splitlines() if "\t" in line}
    assert set(reasons) == {"node02"}, excluded
    assert "preflight" in reasons["node02"] and "In Progress" in reasons["node02"], reasons["node02"]
    assert f"BlockName={BLOCK} Nodes=node[01,03-04]" in blocks, blocks
    # node01's nccl_soak carries both passes, in the rack's domain, read as fine
    assert '"nvlink_domain": "nvl-9c6f5af3' in soak and '"nvlink_reading": "fine"' in soak, soak[-3000:]
