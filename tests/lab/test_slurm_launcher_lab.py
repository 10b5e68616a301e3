"""`burnin run --launcher slurm` on the virtual rack's real Slurm (slurmctld on the host, slurmd in
every node): preflight, gpu and pcie as one Slurm job per stage, each node's task
`burnin run --local --spool-dir` writing its result file into a directory every node mounts.

The rack is `make demo`'s: 6 nodes with inventories/faults/demo.yml (node02's GPU throttles
under load, node05's ConnectX-7 is downtrained). The same nodes are burnt in once over SSH and
once through Slurm, each into its own fleet store prepared the same way; the two stores must
hold the same rows (verdicts, findings, evidence, node states, events) apart from the run's
``launcher`` parameter. The spool directory is a host directory bind-mounted into every node
before it starts, as NFS is mounted on a cluster; `burnin` is put on the nodes as the
burnin_tools role would (bringup/lab/burnin_install.py's copy of the controller's packages).

Then: a node Slurm shows drained is UNKNOWN with Slurm's reason and is not part of the job;
Ctrl-C during a stage cancels the Slurm job and the run is recorded as interrupted.
The controller's CPU seconds and wall time of the two paths are printed (docs/fleet-scale.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import select

from bringup.fleet.models import CheckResult, Event, EvidenceBlob, Node, Run
from burnin.stages.slurm_launch import DEFAULT_PROGRAM
from tests.lab.conftest import REPO, lab_inventory_dir, ready_for_burnin, require_root, slurm, wait_for

pytestmark = pytest.mark.lab

BIN = Path(sys.executable).parent
NODES = [f"node{i:02d}" for i in range(1, 7)]
FAULTS = REPO / "inventories" / "faults" / "demo.yml"
STAGES = "preflight,gpu,pcie"
QUICK = ["--set", "diag.stress_minutes=0.05", "--set", "diag.pcie_load_seconds=5"]
# Outputs that differ from one run to the next on the same node, over SSH as through Slurm:
# their evidence is compared with these parts masked.
VARYING = [
    re.compile(r"^\d{9,12}\.\d+$", re.M),  # clock_offset: `date +%s.%N`
    re.compile(r"\b(?:pid|Pid|PID)[ =:]*\d+"),  # the nccl_local stand-in prints its pid
    # timestamps: when the BMC's event log was read (each store was discovered on its own)
    re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d)?"),
]


class SharedSpool:
    """A LabService: one host directory bind-mounted at the same path into every node before it
    starts (the nodes' mount namespaces copy it), as a cluster mounts NFS on every node."""

    name = "shared-spool"

    def __init__(self, host_dir: Path):
        self.host_dir = host_dir

    def prepare_node(self, state, node, root: Path) -> None:
        target = root / str(self.host_dir).lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "--bind", str(self.host_dir), str(target)], check=True)

    def start(self, state) -> dict:
        return {}

    def stop(self, state_dir: Path) -> list[str]:
        for root in Path(state_dir).glob("nodes/*/root"):
            target = root / str(self.host_dir).lstrip("/")
            subprocess.run(["umount", "--lazy", str(target)], capture_output=True)
        return []


def install_burnin(state, staging: Path) -> None:
    """`burnin` on every node where the role puts it (the controller's own packages), and `srun`:
    a compute node has the Slurm client, the lab's base image only slurmd (whose libslurmfull
    and plugins the controller's srun of the same Debian version links against)."""
    import shutil

    from bringup.lab.burnin_install import LAUNCHER, LIB, bundle, node_root

    lib = bundle(staging)
    for node in state.nodes:
        root = node_root(state.state_dir, node.name)
        shutil.copytree(lib, root / LIB, symlinks=True, dirs_exist_ok=True)
        program = root / DEFAULT_PROGRAM.lstrip("/")
        program.parent.mkdir(parents=True, exist_ok=True)
        program.write_text(LAUNCHER)
        program.chmod(0o755)
        if not (root / "usr/bin/srun").exists():
            shutil.copy2("/usr/bin/srun", root / "usr/bin/srun")


@contextmanager
def spool_rack(root: Path, prefix: str, nodes: list[str], faults: Path) -> Iterator[dict]:
    """A lab rack whose nodes share a spool with the controller and have burnin installed, made
    ready for burn-in twice (over SSH and through Slurm: one store each); taken down after."""
    require_root()
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services

    spool = root / "spool"
    spool.mkdir()
    inv = lab_inventory_dir(root / "inventories")
    name = f"{prefix}{uuid.uuid4().hex[:7]}"
    lab = VirtualRack(name, root / "state", inv, services=lambda: [*lab_services(), SharedSpool(spool)])
    try:
        state = lab.up(len(nodes), faults)
        install_burnin(state, root / "bundle")  # srun and burnin on the nodes
        ssh = ready_for_burnin(name, inv, root / "ssh.db", nodes, state)
        via_slurm = ready_for_burnin(name, inv, root / "slurm.db", nodes, state)
        yield {"name": name, "state": state, "spool": spool, "ssh": ssh, "slurm": via_slurm, "root": root}
    finally:
        lab.down()


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    with spool_rack(tmp_path_factory.mktemp("slurmlaunch"), "q", NODES, FAULTS) as up:
        yield up


def burnin(
    base: list[str], *args: str, timeout: float = 600
) -> tuple[subprocess.CompletedProcess, float, float]:
    """The real CLI in its own process: (the process, its wall seconds, its CPU seconds with children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run(
        [str(BIN / "burnin"), *base, *args], capture_output=True, text=True, timeout=timeout
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc, wall, cpu


def mask(text: str) -> str:
    for pattern in VARYING:
        text = pattern.sub("<varies>", text)
    return text


def masked(text: str) -> str:
    return hashlib.sha256(mask(text).encode()).hexdigest()


def rows(store, run_id: int) -> dict[tuple[str, str, str], dict]:
    """(node, stage, check) -> what the store holds of that result."""
    with store.reading() as s:
        found = s.execute(
            select(Node.name, CheckResult, EvidenceBlob.sha256)
            .join(Node, Node.id == CheckResult.node_id)
            .outerjoin(EvidenceBlob, EvidenceBlob.id == CheckResult.evidence_id)
            .where(CheckResult.run_id == run_id)
        ).all()
        texts = store.evidence_of([r for _, r, _ in found])
        return {
            (node, r.stage, r.check): {
                "verdict": r.verdict,
                "findings": mask(json.dumps(r.findings)),
                "reason": mask(r.metrics.get("reason", "")),
                "evidence_sha256": sha,
                "evidence_masked": masked(texts.get(r.id, "")),
            }
            for node, r, sha in found
        }


def events(store, run_id: int) -> list[tuple[str, str, str | None, str]]:
    with store.reading() as s:
        found = s.execute(
            select(Node.name, Event.kind, Event.to_state, Event.reason)
            .join(Node, Node.id == Event.node_id)
            .where(Event.run_id == run_id)
            .order_by(Node.name, Event.id)
        ).all()
    return [(n, k, t, reason.replace(f"run {run_id}", "run N")) for n, k, t, reason in found]


def last_run(store) -> Run:
    with store.reading() as s:
        return s.execute(select(Run).order_by(Run.id.desc()).limit(1)).scalar_one()


def test_ssh_and_slurm_give_the_same_rows(rack):
    name = rack["name"]
    ssh_base, ssh_store = rack["ssh"]
    slurm_base, slurm_store = rack["slurm"]
    common = ["run", "--rack", name, "--stages", STAGES, "--json", *QUICK]
    over_ssh, ssh_wall, ssh_cpu = burnin(ssh_base, *common)
    assert over_ssh.returncode == 1, over_ssh.stdout[-3000:] + over_ssh.stderr[-3000:]
    through, slurm_wall, slurm_cpu = burnin(
        slurm_base, *common, "--launcher", "slurm", "--spool-dir", str(rack["spool"])
    )
    assert through.returncode == 1, through.stdout[-3000:] + through.stderr[-3000:]
    _, _, start_cpu = burnin(ssh_base, "runs", "--json")  # starting the CLI and opening the store
    print(
        f"\nlab, {len(NODES)} nodes, {STAGES}: SSH {ssh_wall:.1f} s wall, {ssh_cpu:.2f} s controller CPU; "
        f"Slurm {slurm_wall:.1f} s wall, {slurm_cpu:.2f} s controller CPU (with sbatch/scontrol/sinfo); "
        f"`burnin runs` alone: {start_cpu:.2f} s CPU"
    )

    # The demo's faults are caught as over SSH: node02 at the gpu stage, node05 at pcie.
    outcomes = {o["node"]: o for o in json.loads(through.stdout)}
    assert {n for n, o in outcomes.items() if o["state"] == "failed"} == {"node02", "node05"}
    first_fail = {
        n: next(s["stage"] for s in o["stages"] if s["verdict"] == "FAIL")
        for n, o in outcomes.items()
        if o["verdict"] == "FAIL"
    }
    assert first_fail == {"node02": "gpu", "node05": "pcie"}, first_fail

    ssh_run, slurm_run = last_run(ssh_store), last_run(slurm_store)
    asked = ("stages", "nodes", "set")  # the rest of params is the ledger's (controller pid, heartbeat)
    assert {k: slurm_run.params[k] for k in asked} == {k: ssh_run.params[k] for k in asked}
    assert (ssh_run.params.get("launcher"), slurm_run.params["launcher"]) == (None, "slurm")
    assert (ssh_run.status, slurm_run.status) == ("failed", "failed")
    a, b = rows(ssh_store, ssh_run.id), rows(slurm_store, slurm_run.id)
    assert set(a) == set(b), (sorted(set(a) - set(b)), sorted(set(b) - set(a)))
    for key in sorted(a):
        want, got = a[key], b[key]
        assert (got["verdict"], got["findings"], got["reason"]) == (
            want["verdict"],
            want["findings"],
            want["reason"],
        ), key
        assert got["evidence_masked"] == want["evidence_masked"], key
    same = sum(a[k]["evidence_sha256"] == b[k]["evidence_sha256"] for k in a)
    print(f"{same} of {len(a)} results have byte-identical evidence; the rest differ only in {VARYING}")
    assert events(ssh_store, ssh_run.id) == events(slurm_store, slurm_run.id)
    assert {n: ssh_store.get_node(n).state for n in NODES} == {
        n: slurm_store.get_node(n).state for n in NODES
    }
    spool_run = rack["spool"] / f"run-{slurm_run.id}"
    assert sorted(p.name for p in spool_run.glob("*.json")) == [], "every result file was ingested"
    assert len(list((spool_run / "ingested").glob("*.json"))) == 6 + 6 + 5  # preflight, gpu, pcie


def test_a_drained_node_is_unknown_with_slurms_reason(rack):
    name, state = rack["name"], rack["state"]
    base, store = rack["slurm"]
    slurm(state, "scontrol", "update", "NodeName=node03", "State=DRAIN", "Reason=fan_swap_ticket_88")
    try:
        proc, _, _ = burnin(
            base,
            *("run", "--rack", name, "--nodes", "node01,node03", "--stages", "preflight", "--json"),
            *("--launcher", "slurm", "--spool-dir", str(rack["spool"])),
        )
    finally:
        slurm(state, "scontrol", "update", "NodeName=node03", "State=RESUME")
    outcomes = {o["node"]: o for o in json.loads(proc.stdout)}
    assert outcomes["node01"]["verdict"] == "PASS", proc.stderr[-2000:]
    assert outcomes["node03"]["verdict"] == "UNKNOWN"
    reasons = {
        r["reason"] for s in outcomes["node03"]["stages"] for r in s["results"] if r["verdict"] == "UNKNOWN"
    }
    assert reasons and all("drain" in r and "fan_swap_ticket_88" in r for r in reasons), reasons


def test_ctrl_c_cancels_the_slurm_job_and_records_the_ending(rack):
    name, state = rack["name"], rack["state"]
    base, store = rack["slurm"]
    cmd = [str(BIN / "burnin"), *base, "run", "--rack", name, "--nodes", "node01", "--stages", "gpu"]
    cmd += ["--set", "diag.stress_minutes=2", "--launcher", "slurm", "--spool-dir", str(rack["spool"])]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(
            "the gpu stage's job running",
            lambda: (
                "R" in slurm(state, "squeue", "-h", "-n", f"burnin-run{last_run(store).id}-gpu", "-o", "%t")
            ),
            60,
            poll=0.5,
        )
        job_name = f"burnin-run{last_run(store).id}-gpu"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    wait_for("the job gone", lambda: not slurm(state, "squeue", "-h", "-n", job_name).strip(), 30)
    run = last_run(store)
    assert run.status == "interrupted", (run.status, run.end_reason)
