"""A newcomer's path on the virtual rack, with nothing but the documented commands.

`bringup lab up` (README, "The virtual rack"; docs/lab.md, "From lab up to golden") prints the
commands that take its rack to golden: inventory check and enroll, discover, provision (the lab
inventory's `provisioner: preinstalled`), configure, burnin run, golden and report. This test runs
them as printed, as subprocesses whose stdout is a pipe (so the tables are TSV, one line a row),
and on the way follows the "Try it" of docs/burnin.md's NCCL section: a node carrying
`nccl-hang`, `burnin run --stages nccl --launcher srun` with its settings, the node named.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.lab.conftest import lab_inventory_dir, require_root

pytestmark = pytest.mark.lab

NODES = ["node01", "node02", "node03", "node04"]
FAULTY = "node03"
# docs/burnin.md, NCCL, "Try it" (the lab's name is this test's own).
TRY_IT = (
    "burnin run --rack {rack} --stages nccl --launcher srun --set diag.nccl_soak_minutes=0.1 "
    "--set diag.nccl_iteration_timeout_s=6 --set floors.nccl_busbw_multi_node_gbps=0.04"
)
STEP_TIMEOUT_S = 900


class Operator:
    """Types the project's commands in a shell: its own store, inventory and lab directories."""

    def __init__(self, root: Path):
        self.env = {
            **os.environ,
            "BRINGUP_DB": str(root / "fleet.db"),
            "BRINGUP_INVENTORY_DIR": str(lab_inventory_dir(root / "inventories")),
            "BRINGUP_LAB_DIR": str(root / "labs"),
            "BRINGUP_LOG_DIR": str(root / "logs"),
        }
        self.cwd = root
        self.typed: list[str] = []

    def __call__(self, command: str, *ok: int) -> subprocess.CompletedProcess[str]:
        argv = shlex.split(command)
        assert argv[0] in ("bringup", "burnin"), command  # the two documented programs only
        self.typed.append(command)
        proc = subprocess.run(
            [str(Path(sys.executable).parent / argv[0]), *argv[1:]],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT_S,
            check=False,
        )
        assert proc.returncode in (ok or (0,)), (
            f"$ {command}\nexit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        )
        return proc

    def states(self, rack: str) -> dict[str, str]:
        nodes = json.loads(self(f"bringup nodes list --rack {rack} --json").stdout)
        return {n["name"]: n["state"] for n in nodes}


def printed_path(lab_up_stdout: str) -> list[str]:
    """The commands `lab up` printed under "next:", in order."""
    lines = lab_up_stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("next:"))
    out = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        out.append(line.strip())
    return out


def test_lab_up_to_golden_with_the_documented_commands(tmp_path):
    require_root()
    rack = f"r{uuid.uuid4().hex[:7]}"
    op = Operator(tmp_path)
    faults = tmp_path / "faults.yml"
    faults.write_text(f"nodes:\n  {FAULTY}: [nccl-hang]\n")  # docs/burnin.md's F
    try:
        up = op(f"bringup lab up --nodes {len(NODES)} --faults {faults} --name {rack}")
        # Piped: the node table is TSV, one line a row; the ssh command is one line.
        assert up.stdout.splitlines()[1].split("\t")[:2] == ["node", "ip"]
        rows = [line.split("\t") for line in up.stdout.splitlines()[2 : 2 + len(NODES)]]
        assert [r[0] for r in rows] == NODES and all(len(r) == 6 for r in rows)
        ssh = next(line for line in up.stdout.splitlines() if line.startswith("ssh:"))
        assert "UserKnownHostsFile=" in ssh and ssh.endswith(f"root@{rows[0][1]}")

        path = printed_path(up.stdout)
        verbs = [" ".join(c.split()[:2]) for c in path]
        assert verbs == [
            "bringup inventory",
            "bringup inventory",
            "bringup discover",
            "bringup provision",
            "bringup configure",
            "burnin run",
            "burnin golden",
            "burnin report",
        ], path
        check, enroll, discover, provision, configure, burn, golden, report = path

        op(check)
        op(enroll)
        found = op(discover)
        assert len(found.stdout.splitlines()) <= len(NODES) + 3, found.stdout  # one line a node
        assert set(op.states(rack).values()) == {"discovered"}

        dry = op(f"{provision} --dry-run")
        assert "pxe_interface" not in dry.stdout + dry.stderr
        assert all(
            any(line.startswith(n) and "preinstalled" in line for line in dry.stdout.splitlines())
            for n in NODES
        ), dry.stdout
        op(provision)
        assert op.states(rack) == dict.fromkeys(NODES, "provisioned")
        op(configure)
        assert op.states(rack) == dict.fromkeys(NODES, "configured")

        # docs/burnin.md's "Try it": the NCCL soak under srun names the hanging node.
        tried = op(TRY_IT.format(rack=rack) + " --json", 1)
        outcomes = {o["node"]: o for o in json.loads(tried.stdout)}
        assert {n: o["verdict"] for n, o in outcomes.items()} == {
            n: "FAIL" if n == FAULTY else "PASS" for n in NODES
        }, tried.stdout[:4000]
        assert f"{FAULTY} is a bad node" in json.dumps(outcomes[FAULTY])
        assert op.states(rack)[FAULTY] == "failed"

        # The README's burn-in: every stage on the others (the failed node waits for a repair).
        # Exit 1: the rack holds a failed node, listed UNKNOWN with what to do; the others run.
        burnt = op(burn, 1)
        row = next(line for line in burnt.stdout.splitlines() if line.startswith(FAULTY + "\t"))
        assert "mark-repaired" in row, burnt.stdout
        after = op.states(rack)
        assert after[FAULTY] == "failed" and all(after[n] == "burnin" for n in NODES if n != FAULTY), after

        hostfile = op(golden).stdout  # OpenMPI's: ADDRESS slots=N, '#' comments on top
        addresses = sorted(
            line.split()[0] for line in hostfile.splitlines() if line and not line.startswith("#")
        )
        assert addresses == sorted(r[1] for r in rows if r[0] != FAULTY), hostfile
        excluded = op(f"{golden} --excluded").stdout
        assert FAULTY in excluded and "nccl" in excluded, excluded
        op(report)
        html = Path(tmp_path / f"{rack}.html").read_text()
        junit = Path(tmp_path / f"{rack}.junit.xml").read_text()
        assert FAULTY in html and "<testsuite" in junit
        assert op.states(rack) == {n: "failed" if n == FAULTY else "golden" for n in NODES}
    finally:
        down = subprocess.run(
            [str(Path(sys.executable).parent / "bringup"), "lab", "down", "--name", rack],
            env=op.env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        print("\n".join(f"$ {c}" for c in op.typed), down.stdout, down.stderr, sep="\n")
