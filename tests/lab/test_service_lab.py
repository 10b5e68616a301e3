"""The in-service loop on the virtual rack with its real Slurm (slurmctld on the host, slurmd in
every node): slurmd itself runs `burnin health` as its HealthCheckProgram.

Three nodes are burnt in (preflight) and made golden through the real CLI. Then each gets what
the burnin_tools role installs with `burnin_tools_health: true` (bringup/lab/burnin_install.py:
burnin, the profile, the role's health-check program, scontrol), and slurm.conf gets the role's
HealthCheck lines (every 5 s here) through `scontrol reconfigure`. Then:

- a fault switched on in golden node02 (a GPU gone) makes slurmd's health check drain it with
  the project's reason; `burnin sync` moves it to failed with the finding, records the drain
  once, and the golden export no longer lists it;
- node03, drained by an operator with their own reason and then carrying a fault too, keeps
  the operator's reason (the health check leaves it alone); sync records the operator's drain
  and nothing else: node03 stays golden.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from datetime import datetime
from pathlib import Path

import pytest

from burnin.cli import main as burnin_main
from tests.lab import conftest
from tests.lab.conftest import golden_lab, node_ssh, slurm, slurm_nodes

pytestmark = pytest.mark.lab  # its tests walk one rack in order: make test keeps a module on one worker

NODES = ["node01", "node02", "node03"]
PROFILE = "h100-sxm-8x400g"
HEALTH = {"Program": "/usr/local/sbin/bringup-health-check", "Interval": "5", "NodeState": "ANY"}
WAIT_S = 90
OPERATOR_REASON = "PSU swap, ticket 4711"


def wait_for(what: str, probe, timeout: float = WAIT_S, context=None):
    return conftest.wait_for(what, probe, timeout, poll=1, context=context)


def last_health(state, node: str) -> dict | None:
    from bringup.lab.burnin_install import node_root

    path = node_root(state.state_dir, node) / "var/lib/bringup/health/last.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def started_at(report: dict) -> float:
    """When a health run started (its report says it to the second, rounded down)."""
    return datetime.fromisoformat(report["started_at"]).timestamp()


def wait_passing_since(state, node: str, cleared: float) -> None:
    """Wait for a health run of ``node`` that started after its fault was cleared to pass. One
    that read the fault before may still be ending (tens of seconds on two loaded cores) and
    would drain the node again after a resume, with the fault's reason: resume after this."""
    wait_for(
        f"{node} passing a health run started after its fault was cleared",
        lambda: (r := last_health(state, node)) and r["verdict"] == "PASS" and started_at(r) > cleared,
        context=lambda: f"{node}'s last health report: {last_health(state, node)!r}",
    )


def wire_health_checks(state, root: Path) -> None:
    """The role's install on every node, then the role's slurm.conf lines, live."""
    from bringup.lab.burnin_install import install_health, node_root
    from bringup.lab.slurm import NODE_CONF, render_slurm_conf

    profile_file = Path(state.inventory).parent / "profiles" / f"{PROFILE}.yml"
    for node in NODES:
        install_health(node_root(state.state_dir, node), root / "bundle", profile_file)
    conf = Path(state.inventory_vars["slurm_conf"])
    host, cpus = socket.gethostname().split(".")[0], os.cpu_count() or 1
    wired = render_slurm_conf(state, host, cpus, HEALTH)
    plain = render_slurm_conf(state, host, cpus)
    assert conf.read_text() == plain  # the lab's own file: only the HealthCheck lines are added
    for path in [conf, *(node_root(state.state_dir, n) / NODE_CONF for n in NODES)]:
        path.write_text(wired)
    slurm(state, "scontrol", "reconfigure")


@pytest.fixture(scope="module")
def service_lab(tmp_path_factory):
    with golden_lab(tmp_path_factory, "service", "s", NODES) as lab:
        wire_health_checks(lab["state"], lab["root"])
        yield lab


def golden_hostfile(lab) -> str:
    res = lab["runner"].invoke(
        burnin_main,
        [*lab["base"], "golden", "--rack", lab["rack"], "--stages", "preflight", "--format", "hostfile"],
    )
    assert res.exit_code == 0, res.output
    return res.stdout


def sync(lab) -> dict:
    res = lab["runner"].invoke(burnin_main, [*lab["base"], "sync", "--rack", lab["rack"], "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def switch_on(state, node: str, fault: str) -> None:
    rc, _, err = node_ssh(state, node, f'echo \'{{"faults": ["{fault}"]}}\' > /etc/bringup-lab/faults.json')
    assert rc == 0, err


def test_slurm_runs_the_health_check_on_every_node_and_healthy_nodes_stay(service_lab):
    state = service_lab["state"]
    for node in NODES:
        report = wait_for(f"{node}'s first health result", lambda n=node: last_health(state, n))
        assert report["verdict"] == "PASS" and report["slurm"] == "none", report
        assert report["node"] == node and report["wall_s"] < report["budget_s"]
    assert not any(n.drain for n in slurm_nodes(state).values())


def test_a_fault_drains_the_node_and_sync_fails_it(service_lab):
    state, store = service_lab["state"], service_lab["store"]
    ip = {n.name: n.ip for n in state.nodes}
    assert ip["node02"] in golden_hostfile(service_lab)
    switch_on(state, "node02", "gpu-missing")
    drained = wait_for(
        "node02 drained by its health check", lambda: (n := slurm_nodes(state)["node02"]).drain and n
    )
    want = "bringup: gpu_inventory: 7 GPU(s) found, the profile has 8 (nvidia-smi says 7 attached)"
    assert drained.reason == want and drained.user == "root"
    print(f"\nslurmd's health check drained node02: {drained.label}, by {drained.user}: {drained.reason}")
    report = last_health(state, "node02")
    assert report["verdict"] == "FAIL" and report["reason"] == want

    result = sync(service_lab)
    assert "node02" in result["failed"]
    row = next(r for r in result["nodes"] if r["node"] == "node02")
    assert (row["origin"], row["state_before"], row["state_after"]) == ("health", "golden", "failed")
    assert row["health"]["failed_check"] == "gpu_inventory"
    node = store.get_node("node02")
    assert node.state == "failed"
    last = [e for e in store.history("node02") if e.kind == "transition"][-1]
    assert (
        last.reason
        == "health check drained it in Slurm: gpu_inventory: 7 GPU(s) found, the profile has 8 (nvidia-smi says 7 attached)"
    )
    hosts = golden_hostfile(service_lab)
    assert ip["node02"] not in hosts and ip["node01"] in hosts
    listed = [line.split()[0] for line in hosts.splitlines() if line and not line.startswith("#")]
    print(f"burnin sync: node02 golden -> failed; the golden hostfile lists {', '.join(listed)}")
    # the same drain, seen again, is not recorded again
    again = sync(service_lab)
    assert "node02" not in again["failed"]
    assert sum(1 for e in store.history("node02") if e.kind == "slurm_drain") == 1
    assert slurm_nodes(state)["node02"].drain  # the project never resumes it here


def test_an_operators_drain_is_left_alone_and_only_recorded(service_lab):
    state, store = service_lab["state"], service_lab["store"]
    slurm(state, "scontrol", "update", "NodeName=node03", "State=DRAIN", f"Reason={OPERATOR_REASON}")
    started = time.time()
    switch_on(state, "node03", "ib-port-down")

    def judged_after_fault():
        report = last_health(state, "node03")
        return (
            report
            if report and report["verdict"] == "FAIL" and report["finished_at_unix"] > started
            else None
        )

    report = wait_for("node03's health check seeing its fault", judged_after_fault)
    assert report["failed_check"] == "ib_ports"
    assert report["slurm"] == f"left alone: already drained by root: {OPERATOR_REASON}"
    node = slurm_nodes(state)["node03"]
    assert node.drain and node.reason == OPERATOR_REASON  # not rewritten

    result = sync(service_lab)
    row = next(r for r in result["nodes"] if r["node"] == "node03")
    assert (row["origin"], row["state_after"], row["action"]) == ("operator", "golden", "recorded drain")
    assert store.get_node("node03").state == "golden"
    (event,) = [e for e in store.history("node03") if e.kind == "slurm_drain"]
    assert event.reason == f"drained in Slurm by an operator (root): {OPERATOR_REASON}"
    assert slurm_nodes(state)["node03"].reason == OPERATOR_REASON


def golden_export(lab, *extra: str):
    res = lab["runner"].invoke(
        burnin_main,
        [*lab["base"], "golden", "--rack", lab["rack"], "--stages", "preflight", "--format", "json", *extra],
    )
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout), res.stderr


def test_an_operators_drain_leaves_the_golden_export_and_is_named_there(service_lab):
    """node03, drained by an operator above, is still golden in the store: the export reads
    Slurm and leaves it out, named among the excluded with the operator's reason."""
    state, store = service_lab["state"], service_lab["store"]
    assert slurm_nodes(state)["node03"].reason == OPERATOR_REASON
    doc, stderr = golden_export(service_lab)
    assert "node03" not in [n["name"] for n in doc["nodes"]]
    (row,) = [n for n in doc["excluded"] if n["name"] == "node03"]
    want = f"not run by the scheduler: drained in Slurm by root: {OPERATOR_REASON}"
    assert row["state"] == "golden" and row["reasons"] == [want], row
    assert f"excluded node03 (golden): {want}" in stderr
    assert store.get_node("node03").state == "golden"
    print(f"\nburnin golden: excluded node03 (golden): {want}")
    old, _ = golden_export(service_lab, "--ignore-scheduler")
    assert "node03" in [n["name"] for n in old["nodes"]]


GPU_FAULT = "xid-48-row-remap-pending"  # GPU 7 (00000000:CA:00.0): DBE, remapped rows pending


def test_a_gpu_failing_in_service_again_after_its_repair_is_named_by_lemons(service_lab):
    """node01's GPU 7 fails its health check in service; the node is repaired (marked, fault
    gone, a passing burn-in, golden, resumed in Slurm), and the same GPU fails again. Each drain's
    health result is kept whole by sync, so `burnin lemons` names node01: same part again."""
    from bringup.cli.main import main as bringup_main

    lab, state, store = service_lab, service_lab["state"], service_lab["store"]

    def drained_since(after):
        n = slurm_nodes(state)["node01"]
        return (
            n
            if n.drain and n.reason.startswith("bringup: ") and (after is None or n.since != after)
            else None
        )

    def burnin(*args: str):
        res = lab["runner"].invoke(burnin_main, [*lab["base"], *args])
        return res.exit_code, res.output

    rows = []
    since = None
    for round_ in (1, 2):
        switch_on(state, "node01", GPU_FAULT)
        drained = wait_for(f"node01 drained by its health check ({round_})", lambda s=since: drained_since(s))
        since = drained.since
        print(f"\nround {round_}: node01 drained: {drained.reason}")
        row = next(r for r in sync(lab)["nodes"] if r["node"] == "node01")
        assert row["state_after"] == "failed" and "health results kept" in row["action"], row
        rows.append(row)
        if round_ == 2:
            break
        res = lab["runner"].invoke(
            bringup_main, [*lab["base"], "nodes", "mark-repaired", "node01", "--reason", "GPU 7 reseated"]
        )
        assert res.exit_code == 0, res.output
        rc, _, err = node_ssh(state, "node01", "echo '{\"faults\": []}' > /etc/bringup-lab/faults.json")
        assert rc == 0, err
        cleared = time.time()
        code, out = burnin("run", "--rack", lab["rack"], "--nodes", "node01", "--stages", "preflight")
        assert code == 0, out
        code, out = burnin("golden", "--rack", lab["rack"], "--stages", "preflight")
        assert store.get_node("node01").state == "golden", out
        wait_passing_since(state, "node01", cleared)
        slurm(state, "scontrol", "update", "NodeName=node01", "State=RESUME")
        wait_for("node01 resumed", lambda: not slurm_nodes(state)["node01"].drain)
    health = [r for r in store.latest_results("node01") if r.stage == "health"]
    assert any(r.verdict == "FAIL" for r in health), health
    code, out = burnin("lemons", "--rack", lab["rack"], "--no-sacct", "--json")
    assert code == 0, out
    lemons = {x["node"]: x for x in json.loads(out)["lemons"]}
    print(json.dumps(lemons, indent=1))
    assert "node01" in lemons and "same part again" in lemons["node01"]["rules"], lemons
    assert "GPU 7 (serial " in lemons["node01"]["summary"], lemons["node01"]["summary"]


HANG = "#!/bin/sh\nexec sleep 600\n"  # nvidia-smi wedged on a GPU: it never answers
SMI = "/usr/local/bin/nvidia-smi"


def test_a_hung_nvidia_smi_drains_after_its_streak(service_lab):
    """node02's nvidia-smi hangs: every run its four checks are UNKNOWN (killed at the budget),
    which alone drains nothing; the third run in a row drains it with the streak's own reason."""
    state = service_lab["state"]
    rc, _, err = node_ssh(state, "node02", "echo '{\"faults\": []}' > /etc/bringup-lab/faults.json")
    assert rc == 0, err
    wait_passing_since(state, "node02", time.time())
    if slurm_nodes(state)["node02"].drain:
        slurm(state, "scontrol", "update", "NodeName=node02", "State=RESUME")
    wait_for("node02 in service", lambda: not slurm_nodes(state)["node02"].drain)
    rc, _, err = node_ssh(
        state, "node02", f"mv {SMI} {SMI}.real && printf '{HANG}' > {SMI} && chmod 755 {SMI}"
    )
    assert rc == 0, err
    hung = time.time()
    try:
        drained = wait_for(
            "node02 drained after its UNKNOWN streak",
            lambda: (n := slurm_nodes(state)["node02"]).drain and "runs in a row" in n.reason and n,
            180,
            context=lambda: f"node02's last health report: {last_health(state, 'node02')!r}",
        )
        took = time.time() - hung
        print(f"\nhung nvidia-smi -> DRAIN in {took:.0f} s: {drained.reason}")
        # The streak the reason names is the one the draining run counted: 3, the limit, or more
        # when a run reached it without its drain landing (a fresh-clone CI run drained at 4).
        streak = re.match(r"bringup: gpu_inventory: UNKNOWN (\d+) runs in a row: ", drained.reason)
        assert streak and int(streak.group(1)) >= 3, drained.reason
        report = last_health(state, "node02")
        assert report["unknown_streak"]["gpu_inventory"] >= 3 and report["unknown_streak_limit"] == 3, report
        assert report["verdict"] == "UNKNOWN" and report["drain"], report
    finally:
        node_ssh(state, "node02", f"mv {SMI}.real {SMI}")
