"""The golden exports read by their real consumers on the virtual rack.

The store is seeded with real results: `burnin run --stages preflight,gpu,pcie` over the 4-node
lab (node02 gpu-hw-slowdown fails its gpu stage, node03 pcie-nic-downtrained its pcie stage), and
`burnin golden` is asked for those stages only (`--stages preflight,gpu,pcie`): the multi-node
ib and nccl stages are other tests' business. Then:

- the OpenMPI hostfile is accepted by a real `mpirun --hostfile` that starts processes on exactly
  the golden nodes, and its slot counts are enforced;
- the Slurm hostlist round-trips through a real `scontrol show hostnames` (no controller needed:
  a minimal slurm.conf is enough for this subcommand);
- the JSON export validates against the shipped schema and carries what the nodes reported;
- the report of the same store shows the failures and says it has no IB/NCCL results.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from burnin.cli import main as burnin_main
from burnin.golden.export import compress_hostlist, expand_hostlist, json_schema
from tests.lab.conftest import ready_for_burnin
from tests.unit.burnin.report.test_report import chromium, console_messages, parse

pytestmark = pytest.mark.lab

STAGES = "preflight,gpu,pcie"
QUICK = ["--set", "diag.stress_minutes=0.05", "--set", "diag.pcie_load_seconds=5"]
HEALTHY, FAULTY = ["node01", "node04"], {"node02": "gpu", "node03": "pcie"}


@pytest.fixture(scope="module")
def seeded(lab, tmp_path_factory):
    """The lab's nodes enrolled, discovered, burnt in (three single-node stages) and judged."""
    _, state = lab
    root = tmp_path_factory.mktemp("golden")
    inv = Path(state.inventory).parent
    rack = Path(state.inventory).stem
    db = root / "fleet.db"
    base, store = ready_for_burnin(rack, inv, db, [n.name for n in state.nodes])
    runner = CliRunner()
    res = runner.invoke(burnin_main, [*base, "run", "--rack", rack, "--stages", STAGES, "--json", *QUICK])
    assert res.exit_code == 1, res.output  # two faulty nodes
    verdicts = {o["node"]: o["verdict"] for o in json.loads(res.stdout)}
    assert verdicts == {"node01": "PASS", "node02": "FAIL", "node03": "FAIL", "node04": "PASS"}

    def golden(*args: str):
        res = runner.invoke(burnin_main, [*base, "golden", "--rack", rack, "--stages", STAGES, *args])
        assert res.exit_code == 0, res.output
        return res

    yield {"state": state, "rack": rack, "root": root, "store": store, "golden": golden, "base": base}


def test_golden_moves_and_events(seeded):
    res = seeded["golden"]("--format", "hostfile", "--output", str(seeded["root"] / "hosts"))
    store = seeded["store"]
    for node in HEALTHY:
        assert store.get_node(node).state == "golden"
        event = store.history(node)[-1]
        assert (
            event.to_state == "golden"
            and event.run_id is not None
            and event.details["run_id"] == event.run_id
        )
    for node, stage in FAULTY.items():
        assert store.get_node(node).state == "failed"
        assert f"excluded {node} (failed)" in res.stderr and f"stage {stage} FAIL" in res.stderr


def test_hostfile_is_accepted_by_mpirun(seeded):
    state, root = seeded["state"], seeded["root"]
    hostfile = root / "mpi.hosts"
    seeded["golden"]("--format", "hostfile", "--output", str(hostfile))
    lines = [line for line in hostfile.read_text().splitlines() if not line.startswith("#")]
    ips = {n.name: n.ip for n in state.nodes}
    assert sorted(lines) == sorted(f"{ips[n]} slots=8" for n in HEALTHY)
    mpirun = shutil.which("mpirun")
    assert mpirun, "openmpi-bin is a system dependency of the tests"
    ssh = f"-i {state.ssh_key} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes"

    def launch(n: int) -> subprocess.CompletedProcess:
        cmd = [
            mpirun,
            "--allow-run-as-root",
            "--bind-to",
            "none",
            "--hostfile",
            str(hostfile),
            "-np",
            str(n),
            "--mca",
            "plm_rsh_args",
            ssh,
            "--mca",
            "oob_tcp_if_include",
            state.node_subnet,
            "hostname",
        ]
        env = {**os.environ, "OMPI_MCA_plm_rsh_agent": "ssh"}
        return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)

    # 16 ranks: 8 slots on each golden node, each rank on a golden node and nowhere else
    run = launch(16)
    assert run.returncode == 0, run.stdout + run.stderr
    ranks = run.stdout.split()
    assert sorted(ranks) == sorted(HEALTHY * 8)
    # one more rank than the slots the hostfile gives: mpirun refuses (the slots are read)
    over = launch(17)
    assert over.returncode != 0 and "slots" in (over.stdout + over.stderr).lower()


def scontrol_hostnames(hostlist: str, root: Path) -> list[str]:
    conf = root / "slurm.conf"
    conf.write_text(
        "ClusterName=golden\nSlurmctldHost=localhost\nNodeName=localhost CPUs=1\nPartitionName=p Nodes=localhost\n"
    )
    exe = shutil.which("scontrol")
    assert exe, "slurm-wlm (scontrol) is a system dependency of the tests"
    run = subprocess.run(
        [exe, "show", "hostnames", hostlist],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "SLURM_CONF": str(conf)},
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_slurm_hostlist_round_trips_through_scontrol(seeded):
    root = seeded["root"]
    res = seeded["golden"]("--format", "slurm")
    lines = [line for line in res.stdout.splitlines() if not line.startswith("#")]
    assert len(lines) == 1
    assert scontrol_hostnames(lines[0], root) == HEALTHY
    res = seeded["golden"]("--format", "slurm", "--excluded")
    exclude = [line for line in res.stdout.splitlines() if not line.startswith("#")]
    assert scontrol_hostnames(exclude[0], root) == sorted(FAULTY)
    assert any(line.startswith("# node02 (failed): ") and "gpu" in line for line in res.stdout.splitlines())
    # and the compression's harder cases, read by the real thing
    names = [
        "gpu001",
        "gpu002",
        "gpu003",
        "gpu004",
        "gpu007",
        "node9",
        "node10",
        "node08",
        "x1",
        "x01",
        "login",
    ]
    text = compress_hostlist(names)
    assert sorted(scontrol_hostnames(text, root)) == sorted(names)
    assert scontrol_hostnames("r[1-2]n[01-02],n[098-101]", root) == expand_hostlist(
        "r[1-2]n[01-02],n[098-101]"
    )


def test_json_export_validates_and_carries_the_nodes_records(seeded):
    out = seeded["root"] / "golden.json"
    seeded["golden"]("--format", "json", "--output", str(out))
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, json_schema())
    assert [n["name"] for n in doc["nodes"]] == HEALTHY
    serials = {n.name: n.serial for n in seeded["state"].nodes}
    for node in doc["nodes"]:
        assert node["serial"] == serials[node["name"]]
        assert len(node["gpu_uuids"]) == 8 and all(u.startswith("GPU-") for u in node["gpu_uuids"])
        assert len(node["hca_guids"]) == 8 and node["firmware"]["gpu_driver"]
        assert node["golden"]["since"] and node["evidence"]["run_ids"]
    assert {e["name"]: e["state"] for e in doc["excluded"]} == {"node02": "failed", "node03": "failed"}


def test_report_of_the_lab(seeded):
    root, base = seeded["root"], seeded["base"]
    html, junit = root / "report.html", root / "junit.xml"
    res = CliRunner().invoke(
        burnin_main,
        [
            *base,
            "report",
            "--rack",
            seeded["rack"],
            "--stages",
            STAGES,
            "--html",
            str(html),
            "--junit",
            str(junit),
        ],
    )
    assert res.exit_code == 0, res.output
    page = html.read_text()
    assert "no IB results" in page and "no NCCL soak results" in page
    assert "gpu_stress" in page and "pcie_links" in page
    cases = {
        (c.get("classname").rsplit(".", 1)[-1], c.get("name")): c
        for c in ET.parse(junit).getroot().iter("testcase")
    }
    assert cases[("node02", "gpu")].find("failure") is not None
    assert cases[("node03", "pcie")].find("failure") is not None
    assert cases[("node01", "ib")].find("skipped") is not None  # not required here, never ran
    assert cases[("node01", "pcie")].find("failure") is None
    # the lab's report renders in the real browser too, without a console message
    dom = chromium("--window-size=1400,2000", "--dump-dom", html.as_uri())
    assert dom.returncode == 0 and console_messages(dom.stderr) == []
    rendered = parse(dom.stdout)
    assert rendered.cells[("node02", "gpu")] == "FAIL" and rendered.cells[("node03", "pcie")] == "FAIL"
    assert rendered.cells[("node01", "pcie")] == "PASS" and {"no-ib", "no-nccl"} <= rendered.ids
