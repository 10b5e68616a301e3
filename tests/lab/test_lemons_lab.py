"""`burnin lemons` on the virtual rack with real Slurm accounting (slurmctld + slurmdbd + MariaDB on
the host, slurmd in every node), through the real CLI.

Three nodes are burnt in (preflight) and made golden. Then, for real:

- node02 is a lemon: its GPU 7 fault (a double-bit error, row remap pending) is caught by a real
  burn-in, the node is marked repaired and passes, and the fault comes back: twice repaired for
  the same GPU. Meanwhile its Slurm jobs keep ending NODE_FAIL, made by the lab's own command
  (`bringup lab fail-node`, ``bringup.lab.node_fail``, which this test proves): slurmd killed
  under a running job (slurmctld marks the node down after SlurmdTimeout, 30 s, and ends the job
  NODE_FAIL), the node set DOWN under a running job (as an operator or a watchdog does when it
  dies), and a 3-node job ended when node02 went down under it;
- node03 has one random failure: one burn-in failure, repaired, passed; and was in the 3-node job
  that node02 took down (Slurm's node events say which node went down: not node03).

`burnin lemons` (which reads sacct and sacctmgr's node events) names node02 with that evidence,
and not node03 or node01; `--apply` flags it and `burnin golden` keeps it out.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from bringup.cli.main import main as bringup_main
from bringup.lab.node_fail import fail_node, report_lines
from burnin.cli import main as burnin_main
from tests.lab import conftest
from tests.lab.conftest import golden_lab, node_ssh

pytestmark = pytest.mark.lab

NODES = ["node01", "node02", "node03"]
GPU_FAULT = "xid-48-row-remap-pending"  # GPU 7 (00000000:CA:00.0): DBE, remapped rows pending
OTHER_FAULT = "ecc-disabled"  # GPU 1: ECC off (node03's one random failure)
NODE_FAIL_WAIT_S = 120  # slurmd killed: not responding after ~20 s, DOWN at SlurmdTimeout (30 s)
DOWN_WAIT_S = 60  # set DOWN: NODE_FAIL at once, back at once (ReturnToService=2) or resumed


def slurm(lab, *args: str) -> str:
    return conftest.slurm(lab["state"], *args)


def switch(lab, node: str, fault: str | None) -> None:
    faults = json.dumps({"faults": [fault] if fault else []})
    rc, _, err = node_ssh(lab["state"], node, f"echo '{faults}' > /etc/bringup-lab/faults.json")
    assert rc == 0, err


def burnin(lab, *args: str) -> tuple[int, str]:
    res = lab["runner"].invoke(burnin_main, [*lab["base"], *args])
    return res.exit_code, res.output


def fails_burnin(lab, node: str, fault: str) -> None:
    """The fault switched on in a golden node; a real preflight burn-in catches it: failed."""
    switch(lab, node, fault)
    code, out = burnin(lab, "run", "--rack", lab["rack"], "--nodes", node, "--stages", "preflight", "--force")
    assert code != 0, out
    assert lab["store"].get_node(node).state == "failed", out


def repaired_and_back(lab, node: str, reason: str) -> None:
    """`bringup nodes mark-repaired`, the fault gone, a passing burn-in, golden again."""
    res = lab["runner"].invoke(
        bringup_main, [*lab["base"], "nodes", "mark-repaired", node, "--reason", reason]
    )
    assert res.exit_code == 0, res.output
    switch(lab, node, None)
    code, out = burnin(lab, "run", "--rack", lab["rack"], "--nodes", node, "--stages", "preflight")
    assert code == 0, out
    code, out = burnin(lab, "golden", "--rack", lab["rack"], "--stages", "preflight")
    assert lab["store"].get_node(node).state == "golden", out


def running_job(lab, nodes: list[str], name: str, requeue: bool = False) -> str:
    """A real user job on ``nodes``, once Slurm runs it; its id."""
    argv = [
        "sbatch",
        "--parsable",
        f"-N{len(nodes)}",
        "-w",
        ",".join(nodes),
        "--chdir=/tmp",
        "-o",
        "/dev/null",
    ]
    job = slurm(lab, *argv, "--requeue" if requeue else "--no-requeue", "-J", name, "--wrap", "sleep 600")
    job = job.strip()
    conftest.wait_for(
        f"job {job} running",
        lambda: slurm(lab, "squeue", "-h", "-j", job, "-o", "%T").strip() == "RUNNING",
        60,
    )
    return job


def node_fails_under(lab, node: str, job: str, how: str, reason: str | None = None, requeued: bool = False):
    """`bringup lab fail-node`'s library call under a running job: the job (and only it) ended
    NODE_FAIL, requeued if it was requeuable, and the node back in service before it returns."""
    result = fail_node(
        lab["state"], node, how, reason, NODE_FAIL_WAIT_S if how == "slurmd" else DOWN_WAIT_S, progress=print
    )
    print("\n".join(lines := report_lines(result)))
    assert [(o.job_id, o.ended, o.requeued) for o in result.outcomes] == [(job, "NODE_FAIL", requeued)], lines
    assert conftest.slurm_nodes(lab["state"])[node].label in ("idle", "allocated", "mixed"), lines
    return result


def back_idle(lab, node: str) -> None:
    conftest.wait_for(f"{node} idle", lambda: conftest.slurm_nodes(lab["state"])[node].label == "idle", 60)


@pytest.fixture(scope="module")
def lemon_lab(tmp_path_factory):
    with golden_lab(tmp_path_factory, "lemons", "m", NODES) as lab:
        assert lab["state"].inventory_vars.get("slurm_accounting"), "the lab runs without slurmdbd"
        yield lab


def test_a_node_whose_jobs_end_node_fail_and_whose_gpu_is_repaired_twice_is_a_lemon(lemon_lab):
    lab = lemon_lab
    started = time.monotonic()
    # node02's jobs end NODE_FAIL. First for real: slurmd killed under a running job, restarted
    # once Slurm ended the job; ReturnToService=2 returns the node when its slurmd registers.
    died_s = node_fails_under(lab, "node02", running_job(lab, ["node02"], "train-a"), "slurmd").ended_s
    # then set DOWN under a running job, twice (once a requeuable job: it is requeued)
    node_fails_under(lab, "node02", running_job(lab, ["node02"], "train-b"), "down", "node02 hung")
    requeued = running_job(lab, ["node02"], "train-c", requeue=True)
    node_fails_under(lab, "node02", requeued, "down", "node02 hung again", requeued=True)
    # requeued, it waits for its BeginTime (~2 min): started now, so sacct lists its second run
    slurm(lab, "scontrol", "update", f"JobId={requeued}", "StartTime=now")
    # Slurm starts it at its next scheduling pass: the main scheduler's interval is 60 s, so a
    # 60 s wait lost the race once in CI under load.
    conftest.wait_for(
        f"job {requeued} running again",
        lambda: slurm(lab, "squeue", "-h", "-j", requeued, "-o", "%T").strip() == "RUNNING",
        180,
    )
    slurm(lab, "scancel", requeued)
    # a 3-node job that node02 takes down: Slurm's node event names node02, not its partners
    node_fails_under(lab, "node02", running_job(lab, NODES, "train-3n"), "down", "node02 kernel panic")
    for node in NODES:
        back_idle(lab, node)

    # the store: node02's GPU 7 fails, repaired, fails again, repaired, fails again
    fails_burnin(lab, "node02", GPU_FAULT)
    repaired_and_back(lab, "node02", "GPU 7 reseated")
    fails_burnin(lab, "node02", GPU_FAULT)
    repaired_and_back(lab, "node02", "GPU 7 replaced (RMA 1)")
    fails_burnin(lab, "node02", GPU_FAULT)
    # node03: one random failure, repaired, back
    fails_burnin(lab, "node03", OTHER_FAULT)
    repaired_and_back(lab, "node03", "ECC re-enabled")
    print(
        f"\nslurmd killed -> NODE_FAIL in sacct: {died_s:.0f} s; whole history: {time.monotonic() - started:.0f} s"
    )

    code, out = burnin(lab, "lemons", "--rack", lab["rack"], "--json")
    assert code == 0, out
    report = json.loads(out)
    print(json.dumps(report["lemons"], indent=1))
    assert report["slurm_accounting"].startswith("read: "), report["slurm_accounting"]
    (lemon,) = report["lemons"]
    assert lemon["node"] == "node02"
    # (a hardware-Xid rule may join: the fault's Xid 48 lines after the last repair)
    assert {"node-caused job failures", "same part again"} <= set(lemon["rules"]), lemon["rules"]
    summary = lemon["summary"]
    assert "4 NODE_FAIL jobs in 28 days (3 single-node, 1 multi-node" in summary, summary
    # one GPU, one part: nvidia-smi's "GPU 7" and the kernel log's "GPU 0000:ca:00.0" are the same
    # named by the serial nvidia-smi's finding gives it (the board an RMA is about), in every check
    assert re.search(r"GPU 7 \(serial \w+\) failed again after a repair \(3 times", summary), summary
    assert "GPU 7 failed again" not in summary and "0000:ca:00.0 failed" not in summary
    assert "2 repair(s) in 28 days" in summary and "1 requeued job(s)" in summary, summary
    assert sum(1 for s in lemon["sources"] if s.startswith("sacct #")) == 4
    assert any(s.startswith("check_results #") for s in lemon["sources"])

    # --apply flags it; the golden selection keeps it out until an operator clears it
    code, out = burnin(lab, "lemons", "--rack", lab["rack"], "--apply")
    assert code == 0 and "flagged now: node02" in out, out
    assert lab["store"].get_node("node02").hardware["lemon"]["rules"] == lemon["rules"]
    assert any(e.kind == "lemon" for e in lab["store"].history("node02"))


def test_without_accounting_the_store_alone_still_names_it(lemon_lab):
    code, out = burnin(lemon_lab, "lemons", "--rack", lemon_lab["rack"], "--no-sacct", "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["slurm_accounting"] == "not read"
    (lemon,) = report["lemons"]
    assert lemon["node"] == "node02" and "same part again" in lemon["rules"]
    assert "node-caused job failures" not in lemon["rules"] and "NODE_FAIL" not in lemon["summary"]
