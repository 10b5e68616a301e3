"""The ib stage through `burnin run --launcher slurm` on the virtual rack's real Slurm (slurmctld on
the host, slurmd in every node): its discovery and each round one Slurm job, one task per node
running the script the SSH path sends that node, its answer written into a spool directory every
node mounts (burnin.stages.ib_slurm).

Four nodes, node03 with a degraded IB port (mlx5_3 at ~60% of line rate, the fault
tests/lab/test_ib_lab.py catches over SSH). The same nodes are burnt in over SSH and through
Slurm, each into its own store prepared the same way: the same verdicts, findings and node
states, the same events, the launcher field apart. Then: a node Slurm shows drained is UNKNOWN
with Slurm's reason; Ctrl-C during a round cancels its job; and the whole run, preflight, gpu,
pcie, ib and nccl, goes through Slurm end to end. The wall times of the two paths are printed
(docs/fleet-scale.md).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest

from tests.lab.conftest import slurm, wait_for
from tests.lab.test_slurm_launcher_lab import BIN, burnin, last_run, spool_rack

pytestmark = pytest.mark.lab

NODES = ["node01", "node02", "node03", "node04"]
DEGRADED = ("node03", "mlx5_3")  # the fault ib-port-degraded (catalog.json)
IB_QUICK = ["--set", "diag.ib_load_seconds=2"]
NUMBER = re.compile(r"\d+\.\d+")  # measured bandwidths vary a little from one run to the next
COUNTER = re.compile(r"^(\w+:\.+)\d+$", re.M)  # a perfquery counter line: 'SymbolErrorCounter:....0'


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    root = tmp_path_factory.mktemp("ibslurm")
    spec = root / "faults.yml"
    spec.write_text(f"nodes:\n  {DEGRADED[0]}: [ib-port-degraded]\n")
    with spool_rack(root, "b", NODES, spec) as up:
        yield up


def ib_result(outcome: dict) -> dict:
    (stage,) = [s for s in outcome["stages"] if s["stage"] == "ib"]
    (result,) = stage["results"]
    return result


def comparable(outcome: dict) -> dict:
    """What must be the same over SSH and through Slurm: verdicts, findings, per-port verdicts."""
    result = ib_result(outcome)
    return {
        "verdict": outcome["verdict"],
        "state": outcome["state"],
        "ib": result["verdict"],
        "reason": NUMBER.sub("<n>", result.get("reason") or ""),
        "findings": [
            (f["severity"], f.get("action"), NUMBER.sub("<n>", f["message"])) for f in result["findings"]
        ],
        "ports": {k: v["verdict"] for k, v in result["metrics"].get("ports", {}).items()},
    }


def events(store, run_id: int) -> list[tuple[str, str, str | None]]:
    from sqlalchemy import select

    from bringup.fleet.models import Event, Node

    with store.reading() as s:
        found = s.execute(
            select(Node.name, Event.kind, Event.to_state)
            .join(Node, Node.id == Event.node_id)
            .where(Event.run_id == run_id)
            .order_by(Node.name, Event.id)
        ).all()
    return [tuple(row) for row in found]


def store_rows(store, run_id: int) -> dict[tuple[str, str, str], dict]:
    """(node, stage, check) -> the stored row: verdict, findings, metrics and evidence, each with
    its measured figures masked (NUMBER), and the evidence's counter reads (cumulative counters:
    the second run reads higher absolute values, the same rises)."""
    from sqlalchemy import select

    from bringup.fleet.models import CheckResult, Node

    with store.reading() as s:
        found = s.execute(
            select(Node.name, CheckResult)
            .join(Node, Node.id == CheckResult.node_id)
            .where(CheckResult.run_id == run_id)
        ).all()
        texts = store.evidence_of([r for _, r in found])
    return {
        (node, r.stage, r.check): {
            "verdict": r.verdict,
            "findings": NUMBER.sub("<n>", json.dumps(r.findings)),
            "metrics": NUMBER.sub("<n>", json.dumps(r.metrics, sort_keys=True)),
            "evidence": COUNTER.sub(r"\1<n>", NUMBER.sub("<n>", texts.get(r.id, ""))),
        }
        for node, r in found
    }


def jobs_of(state, run_id: int) -> list[str]:
    """The names of the run's Slurm jobs (slurmctld keeps ended jobs for MinJobAge)."""
    out = slurm(state, "squeue", "-h", "-t", "all", "-o", "%j")
    return sorted({j for j in out.split() if j.startswith(f"burnin-run{run_id}-")})


def test_ib_through_slurm_catches_the_degraded_port_as_ssh_does(rack):
    name, spool = rack["name"], rack["spool"]
    ssh_base, ssh_store = rack["ssh"]
    slurm_base, slurm_store = rack["slurm"]
    common = ["run", "--rack", name, "--stages", "ib", "--json", *IB_QUICK]
    over_ssh, ssh_wall, ssh_cpu = burnin(ssh_base, *common)
    assert over_ssh.returncode == 1, over_ssh.stdout[-3000:] + over_ssh.stderr[-3000:]
    through, slurm_wall, slurm_cpu = burnin(
        slurm_base, *common, "--launcher", "slurm", "--spool-dir", str(spool)
    )
    assert through.returncode == 1, through.stdout[-3000:] + through.stderr[-3000:]
    print(
        f"\nlab, {len(NODES)} nodes, ib (2 rounds of 2 s): SSH {ssh_wall:.1f} s wall, {ssh_cpu:.2f} s CPU; "
        f"Slurm {slurm_wall:.1f} s wall, {slurm_cpu:.2f} s CPU (with sbatch/scontrol/sinfo)"
    )
    a = {o["node"]: o for o in json.loads(over_ssh.stdout)}
    b = {o["node"]: o for o in json.loads(through.stdout)}
    assert {n: o["verdict"] for n, o in b.items()} == {
        "node01": "PASS",
        "node02": "PASS",
        "node03": "FAIL",
        "node04": "PASS",
    }, {n: ib_result(o)["findings"] or ib_result(o)["reason"] for n, o in b.items()}
    for node in NODES:
        assert comparable(b[node]) == comparable(a[node]), node
    node, hca = DEGRADED
    ports = ib_result(b[node])["metrics"]["ports"]
    assert {k for k, v in ports.items() if v["verdict"] != "PASS"} == {hca}
    assert ports[hca]["gbps"] == pytest.approx(0.6 * 392.34, abs=0.5)

    ssh_run, slurm_run = last_run(ssh_store), last_run(slurm_store)
    assert (ssh_run.params.get("launcher"), slurm_run.params["launcher"]) == (None, "slurm")
    assert {k: slurm_run.params[k] for k in ("stages", "nodes", "set")} == {
        k: ssh_run.params[k] for k in ("stages", "nodes", "set")
    }
    assert events(ssh_store, ssh_run.id) == events(slurm_store, slurm_run.id)
    a_rows, b_rows = store_rows(ssh_store, ssh_run.id), store_rows(slurm_store, slurm_run.id)
    assert set(a_rows) == set(b_rows) == {(n, "ib", "ib_bandwidth") for n in NODES}
    for key in sorted(a_rows):
        assert b_rows[key] == a_rows[key], key
    assert {n: slurm_store.get_node(n).state for n in NODES} == {
        n: ssh_store.get_node(n).state for n in NODES
    }
    (saved,) = [r for r in slurm_store.latest_results(node) if r.check == "ib_bandwidth"]
    evidence = slurm_store.evidence(saved)
    assert "RDMA_Write Bidirectional BW Test" in evidence
    assert re.search(rf"\$ ib_write_bw -d {hca} -i 1 -p \d+ --report_gbits -D 2 -F -b --out_json", evidence)
    assert "# Port extended counters: Lid 104 port 1" in evidence
    # discovery and each round were Slurm jobs, every node's answer is in the spool
    assert jobs_of(rack["state"], slurm_run.id) == [
        f"burnin-run{slurm_run.id}-ib-{label}" for label in ("discover", "round1", "round2")
    ]
    for label in ("discover", "round1", "round2"):
        answers = spool / f"run-{slurm_run.id}" / "ib" / label
        assert sorted(p.name for p in answers.glob("*.out")) == [f"{n}.out" for n in NODES]


def test_a_drained_node_is_unknown_with_slurms_reason(rack):
    name, state = rack["name"], rack["state"]
    base, _ = rack["slurm"]
    slurm(state, "scontrol", "update", "NodeName=node04", "State=DRAIN", "Reason=psu_swap_ticket_91")
    try:
        proc, _, _ = burnin(
            base,
            *(
                "run",
                "--rack",
                name,
                "--nodes",
                "node01,node02,node04",
                "--stages",
                "ib",
                "--json",
                *IB_QUICK,
            ),
            *("--launcher", "slurm", "--spool-dir", str(rack["spool"])),
        )
    finally:
        slurm(state, "scontrol", "update", "NodeName=node04", "State=RESUME")
    outcomes = {o["node"]: o for o in json.loads(proc.stdout)}
    assert {n: o["verdict"] for n, o in outcomes.items()} == {
        "node01": "PASS",
        "node02": "PASS",
        "node04": "UNKNOWN",
    }, proc.stderr[-2000:]
    reason = ib_result(outcomes["node04"])["reason"]
    assert "drain" in reason and "psu_swap_ticket_91" in reason, reason


def test_ctrl_c_cancels_the_rounds_job(rack):
    name, state = rack["name"], rack["state"]
    base, store = rack["slurm"]
    cmd = [str(BIN / "burnin"), *base, "run", "--rack", name, "--nodes", "node01,node02", "--stages", "ib"]
    cmd += ["--set", "diag.ib_load_seconds=120", "--launcher", "slurm", "--spool-dir", str(rack["spool"])]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        job = wait_for(
            "the first round's job running",
            lambda: (
                "R"
                in slurm(state, "squeue", "-h", "-n", f"burnin-run{last_run(store).id}-ib-round1", "-o", "%t")
                and f"burnin-run{last_run(store).id}-ib-round1"
            ),
            90,
            poll=0.5,
        )
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    wait_for("the job gone", lambda: not slurm(state, "squeue", "-h", "-n", job).strip(), 30)
    assert last_run(store).status == "interrupted"


def test_every_stage_through_slurm_end_to_end(rack):
    """preflight, gpu, pcie, ib and nccl with --launcher slurm: node03 fails at ib, the other
    three pass every stage, nccl's ranks started by srun."""
    from bringup.fleet.lifecycle import State

    name = rack["name"]
    base, store = rack["slurm"]
    for node in NODES:  # node03 failed in the first test: back through repair
        if store.get_node(node).state == State.FAILED.value:
            store.transition(node, State.REPAIR, "re-test")
    quick = [
        *("--set", "diag.stress_minutes=0.05", "--set", "diag.pcie_load_seconds=5", *IB_QUICK),
        *("--set", "diag.nccl_soak_minutes=0.05", "--set", "diag.nccl_iteration_timeout_s=6"),
        *("--set", "floors.nccl_busbw_multi_node_gbps=0.04"),
    ]
    proc, wall, _ = burnin(
        base,
        *("run", "--rack", name, "--stages", "preflight,gpu,pcie,ib,nccl", "--json", *quick),
        *("--launcher", "slurm", "--spool-dir", str(rack["spool"])),
    )
    print(f"\nlab, {len(NODES)} nodes, preflight,gpu,pcie,ib,nccl through Slurm: {wall:.1f} s wall")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    outcomes = {o["node"]: o for o in json.loads(proc.stdout)}
    ran = {n: {s["stage"]: s["verdict"] for s in o["stages"]} for n, o in outcomes.items()}
    for n, stages in ran.items():
        # WARN passes: a 3-second soak over loopback TCP on a loaded machine can waver enough to
        # be "bus bandwidth unstable over the soak" (CI saw it on all three nodes at once).
        if stages.get("nccl") == "WARN":
            warned = [s for s in outcomes[n]["stages"] if s["stage"] == "nccl"]
            print(f"{n}: nccl WARN: {json.dumps(warned)[:600]}")
            stages["nccl"] = "PASS"
    everything = dict.fromkeys(["preflight", "gpu", "pcie", "ib", "nccl"], "PASS")
    assert ran == {
        "node01": everything,
        "node02": everything,
        "node03": {"preflight": "PASS", "gpu": "PASS", "pcie": "PASS", "ib": "FAIL"},  # stops at ib
        "node04": everything,
    }, ran
    run = last_run(store)
    assert f"burnin-run{run.id}-preflight" in jobs_of(rack["state"], run.id)
