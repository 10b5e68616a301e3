"""The nccl stage on the virtual rack: real mpirun over SSH and a real Slurm cluster (slurmctld on
the host, slurmd + munge in every node, srun bootstrapping MPI through PMIx); the stand-in
all_reduce_perf really runs an all_reduce across the 4 nodes. One node carries a fault that makes
every collective it is in hang (or run slow); the soak fails, the localisation names that node as
the culprit with its evidence, and the other three pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.fleet.lifecycle import State
from burnin.cli import main as burnin_main
from burnin.parsers.nccl_tests import parse_nccl_tests
from burnin.stages.launch import LaunchHost, build_launch, run_watched, settings_from
from tests.lab.conftest import lab_inventory_dir, node_ssh, ready_for_burnin, require_root

pytestmark = pytest.mark.lab

FAULTY = "node03"
NODES = ["node01", "node02", "node03", "node04"]
QUICK = [
    "--set",
    "diag.nccl_soak_minutes=0.05",  # 3 s: one or two iterations per group
    "--set",
    "diag.nccl_iteration_timeout_s=6",  # the watchdog: a healthy lab run prints a row every ~0.5 s
    "--set",
    "floors.nccl_busbw_multi_node_gbps=0.04",  # lab TCP: ~0.1-0.2 GB/s healthy, ~0.012 slowed
]


class Labs:
    """One lab at a time, keyed by the fault its node03 carries; the last one is torn down at the end."""

    def __init__(self, root: Path):
        self.root = root
        self.current: tuple[str, dict] | None = None

    def get(self, fault: str) -> dict:
        if self.current and self.current[0] == fault:
            return self.current[1]
        self.close()
        from bringup.lab.rack import VirtualRack
        from bringup.lab.services import lab_services

        base = self.root / fault
        inv = lab_inventory_dir(base / "inventories")
        spec = base / "faults.yml"
        spec.write_text(f"nodes:\n  {FAULTY}: [{fault}]\n")
        name = f"n{uuid.uuid4().hex[:7]}"
        rack = VirtualRack(name, base / "state", inv, services=lab_services)
        lab = {"rack": rack, "name": name}
        self.current = (fault, lab)
        state = rack.up(len(NODES), spec)
        db = base / "fleet.db"
        cli, store = ready_for_burnin(name, inv, db, NODES)
        lab.update(state=state, cli=cli, store=store)
        return lab

    def close(self) -> None:
        if self.current:
            self.current[1]["rack"].down()
            self.current = None


@pytest.fixture(scope="module")
def labs(tmp_path_factory):
    require_root()
    labs = Labs(tmp_path_factory.mktemp("nccl"))
    try:
        yield labs
    finally:
        labs.close()


def test_standins_communicate_and_parse(labs):
    """Each collective stand-in, started by burnin.stages.launch over 3 healthy nodes, prints output the
    nccl-tests parser reads completely: every rank on its own host, every size, no wrong element."""
    lab = labs.get("nccl-hang")
    state = lab["state"]
    vars_ = state.inventory_vars
    healthy = [n for n in state.nodes if n.name != FAULTY]
    hosts = [LaunchHost(n.name, n.ip) for n in healthy]
    settings = settings_from(
        vars_,
        ssh_key=state.ssh_key,
        ssh_options="-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
    )
    for test in ("all_reduce_perf", "all_gather_perf", "alltoall_perf"):
        hostfile = str(Path(state.state_dir) / f"{test}.hosts")
        launch = build_launch(
            settings, hosts, [test, "-b", "64K", "-e", "256K", "-f", "2", "-w", "1", "-n", "2"], "t", hostfile
        )
        out = run_watched(launch, idle_timeout_s=30)
        assert out.rc == 0 and not out.killed, out.stdout + out.stderr
        run = parse_nccl_tests(out.stdout)
        assert run.complete and run.validation is True
        assert run.hosts == tuple(n.name for n in healthy)
        assert [r.rank for r in run.ranks] == [0, 1, 2]
        assert len(run.rows) == 3 and run.wrong == 0 and run.out_of_bounds == 0
        assert all(s.time_us > 0 for r in run.rows for s in r.sides)
        assert (run.rows[-1].busbw_gbps or 0) > 0  # measured (smaller sizes round to 0.00 GB/s)
        assert run.rows[-1].redop == ("sum" if test == "all_reduce_perf" else "none")
    # -J: rank 0 also writes nccl-tests' JSON report, which parses to the same run
    hostfile = str(Path(state.state_dir) / "json.hosts")
    argv = [
        "all_reduce_perf",
        "-b",
        "64K",
        "-e",
        "128K",
        "-f",
        "2",
        "-w",
        "1",
        "-n",
        "2",
        "-J",
        "/tmp/nccl.json",
    ]
    out = run_watched(build_launch(settings, hosts, argv, "t", hostfile), idle_timeout_s=30)
    assert out.rc == 0 and "# Writing JSON output to /tmp/nccl.json" in out.stdout
    rc, text, _ = node_ssh(state, healthy[0].name, "cat /tmp/nccl.json")
    from_json, from_text = parse_nccl_tests(text), parse_nccl_tests(out.stdout)
    assert rc == 0 and from_json.format == "json" and from_json.complete
    assert from_json.hosts == from_text.hosts and [r.size for r in from_json.rows] == [65536, 131072]
    assert from_json.nccl_version == "2.21.5" and from_json.wrong == 0


def _burnin_nccl(lab: dict, launcher: str) -> dict[str, dict]:
    res = CliRunner().invoke(
        burnin_main,
        [
            *lab["cli"],
            "run",
            "--rack",
            lab["name"],
            "--stages",
            "nccl",
            "--launcher",
            launcher,
            "--json",
            *QUICK,
        ],
    )
    assert res.exit_code == 1, res.output  # one node fails
    return {o["node"]: o for o in json.loads(res.stdout)}


def _nothing_left(lab: dict, launcher: str) -> None:
    """The watchdog's kills left no rank running on any node, and no Slurm job behind."""
    state = lab["state"]
    for node in NODES:
        rc, out, _ = node_ssh(state, node, "pgrep -fa [a]ll_reduce_perf || true")
        assert "all_reduce_perf" not in out, f"{node}: {out}"
    if launcher == "srun":
        env = {**os.environ, "SLURM_CONF": state.inventory_vars["slurm_conf"]}
        queue = subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True, timeout=30)
        assert queue.returncode == 0 and queue.stdout.strip() == ""


@pytest.mark.parametrize(
    ("launcher", "fault", "symptom"),
    [("mpirun", "nccl-hang", "hang: no progress"), ("srun", "nccl-slow", "below the floor")],
)
def test_culprit_found_and_others_pass(labs, launcher, fault, symptom):
    lab = labs.get(fault)
    store = lab["store"]
    for node in NODES:  # a node failed by an earlier test comes back through repair
        if store.get_node(node).state == State.FAILED.value:
            store.transition(node, State.REPAIR, "re-test")
    outcomes = _burnin_nccl(lab, launcher)
    assert {n: o["verdict"] for n, o in outcomes.items()} == {
        "node01": "PASS",
        "node02": "PASS",
        FAULTY: "FAIL",
        "node04": "PASS",
    }, json.dumps(outcomes, indent=1)[:6000]
    assert store.get_node(FAULTY).state == State.FAILED.value
    assert all(store.get_node(n).state == State.BURNIN.value for n in NODES if n != FAULTY)

    (bad,) = [r for r in store.latest_results(FAULTY) if r.stage == "nccl"]
    assert bad.check == "nccl_soak" and bad.verdict == "FAIL"
    messages = [f["message"] for f in bad.findings]
    assert any(f"{FAULTY} is a bad node" in m for m in messages), messages
    assert any(symptom in m for m in messages), messages
    assert bad.metrics["localisation"]["confirmed"] is True
    # the evidence is the raw output of the runs node03 was in, the failing ones first
    evidence = store.evidence(bad)
    first = evidence.split("\n", 1)[0]
    assert first.startswith("=== ") and "FAIL on" in first and FAULTY in first
    assert evidence.count("\n=== ") >= 2 and "# Using devices" in evidence

    for node in NODES:
        if node == FAULTY:
            continue
        (good,) = [r for r in store.latest_results(node) if r.stage == "nccl"]
        assert good.verdict == "PASS", (node, good.findings, good.metrics)
        assert good.metrics["localisation"]["passed_trials"] >= 1
        assert "# Avg bus bandwidth" in store.evidence(good)  # a run it passed is in its evidence
    _nothing_left(lab, launcher)
