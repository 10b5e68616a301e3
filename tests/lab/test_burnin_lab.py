"""`burnin run` on the virtual rack: real SSH, real fan-out, real fleet store; the stand-in tools
print recorded outputs chosen by each node's fault. The healthy node passes every check; each
faulty node fails at the stage where its fault shows, with the right check and action, and
nothing else."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from burnin.cli import main as burnin_main
from tests.lab.conftest import lab_inventory_dir, ready_for_burnin, require_root

pytestmark = pytest.mark.lab

# fault -> (stage where the node stops, {failing check: action}); every other check must PASS.
EXPECTED = {
    None: (None, {}),
    "xid-79": ("preflight", {"kernel_log": "REBOOT"}),
    "dcgm-memory-failure": ("gpu", {"dcgm_diag": "RMA"}),
    "pcie-nic-downtrained": ("pcie", {"pcie_links": "RESEAT"}),
    # the lab BMC lists all eight (docs/lab.md): the one nvidia-smi lost is named by its slot too
    "gpu-missing": ("preflight", {"gpu_inventory": "RESEAT", "bmc_gpus_seen": "REBOOT"}),
    "ecc-disabled": ("preflight", {"gpu_ecc": "RECONFIGURE"}),
    "xid-48-row-remap-pending": (
        "preflight",
        {"kernel_log": "RESET_GPU", "gpu_ecc": "RESET_GPU", "gpu_memory": "RESET_GPU"},
    ),
    "nvlink-down": ("preflight", {"nvlink": "REBOOT"}),
    "nvlink-degraded": ("preflight", {"nvlink": "RMA"}),
    "fabric-manager-down": ("preflight", {"fabric_manager": "RECONFIGURE"}),
    "driver-version-wrong": ("preflight", {"gpu_versions": "RECONFIGURE"}),
    "ib-port-down": ("preflight", {"ib_ports": "REPLACE_CABLE"}),
    "disk-full": ("preflight", {"disk_usage": "RECONFIGURE"}),
    "gpu-hw-slowdown": ("gpu", {"gpu_stress": "RESEAT"}),
    "stress-sdc": ("gpu", {"gpu_stress": "RMA"}),
    "pcie-gpu-gen1-under-load": ("pcie", {"pcie_links": "RESEAT"}),
    "pcie-gpu-downtrained": ("pcie", {"pcie_links": "RESEAT"}),
    "dimm-missing": ("preflight", {"memory_dimms": "RESEAT"}),
}
FAULTS = list(EXPECTED)  # node01 healthy, node02 the first fault, ...
NODE_FAULT = {f"node{i + 1:02d}": fault for i, fault in enumerate(FAULTS)}
# The scenario: 4 nodes, one healthy, three faults (one per stage).
FOUR = ["node01", "node02", "node03", "node04"]
QUICK = ["--set", "diag.stress_minutes=0.05", "--set", "diag.pcie_load_seconds=5"]


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    """A lab with one node per fault, enrolled, discovered through its BMC, and configured."""
    require_root()
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services

    root = tmp_path_factory.mktemp("burnin")
    inv = lab_inventory_dir(root / "inventories")
    name = f"b{uuid.uuid4().hex[:7]}"
    spec = root / "faults.yml"
    spec.write_text(
        "nodes:\n" + "".join(f"  {node}: [{fault}]\n" for node, fault in NODE_FAULT.items() if fault)
    )
    lab = VirtualRack(name, root / "state", inv, services=lab_services)
    db = root / "fleet.db"
    try:
        state = lab.up(len(FAULTS), spec)
        # With the lab's state: the nodes' SSH host keys are recorded, and burn-in is pinned to them.
        base, store = ready_for_burnin(name, inv, db, NODE_FAULT, state)
        yield name, base, store
    finally:
        lab.down()


def run_burnin(rack, nodes: list[str]) -> dict[str, dict]:
    name, base, _ = rack
    res = CliRunner().invoke(
        burnin_main,
        [
            *base,
            "run",
            "--rack",
            name,
            "--nodes",
            ",".join(nodes),
            "--stages",
            "preflight,gpu,pcie",
            "--json",
            *QUICK,
        ],
    )
    assert res.exit_code in (0, 1), res.output
    outcomes = json.loads(res.stdout)
    assert res.exit_code == (0 if all(o["verdict"] == "PASS" for o in outcomes) else 1)
    return {o["node"]: o for o in outcomes}


def assert_as_expected(rack, outcome: dict) -> None:
    _, _, store = rack
    node = outcome["node"]
    fault = NODE_FAULT[node]
    stop_stage, failing = EXPECTED[fault]
    stages = [s["stage"] for s in outcome["stages"]]
    results = {r["check"]: r for s in outcome["stages"] for r in s["results"]}
    not_passed = {c: r["verdict"] for c, r in results.items() if r["verdict"] != "PASS"}
    assert set(not_passed) == set(failing), f"{node} ({fault}): {json.dumps(not_passed)} " + json.dumps(
        {c: results[c]["reason"] or results[c]["findings"] for c in not_passed}, indent=1
    )
    for check, action in failing.items():
        assert results[check]["verdict"] == "FAIL"
        actions = {f["action"] for f in results[check]["findings"] if f["severity"] == "critical"}
        assert action in actions, f"{node} ({fault}) {check}: {results[check]['findings']}"
    if fault is None:
        assert stages == ["preflight", "gpu", "pcie"] and outcome["state"] == "burnin"
        assert store.get_node(node).state == "burnin"
    else:
        assert stages[-1] == stop_stage, f"{node} ({fault}) stopped after {stages}"
        assert outcome["state"] == "failed" and store.get_node(node).state == "failed"
        last = store.history(node)[-1]
        assert last.to_state == "failed" and f"stage {stop_stage} failed" in last.reason
    saved = {r.check: r for r in store.latest_results(node)}
    assert set(saved) == set(results)  # every result is in the store, with its evidence
    assert all(saved[c].verdict == results[c]["verdict"] for c in results)
    evidence = store.evidence_of(list(saved.values()))
    assert all(evidence.get(saved[c].id) for c in results)


def test_four_nodes_one_healthy_three_faulty(rack):
    outcomes = run_burnin(rack, FOUR)
    assert set(outcomes) == set(FOUR)
    for node in FOUR:
        assert_as_expected(rack, outcomes[node])


def test_every_fault_is_caught_by_the_right_check(rack):
    rest = [n for n in NODE_FAULT if n not in FOUR]
    outcomes = run_burnin(rack, rest)
    for node in rest:
        assert_as_expected(rack, outcomes[node])


def test_results_and_evaluate_again_from_the_store(rack, tmp_path: Path):
    """`burnin results` shows the findings; the saved evidence re-judges to the same verdict."""
    name, base, store = rack
    if store.get_node("node02").state == "configured":  # this worker has not burnt it in yet
        run_burnin(rack, ["node02"])
    res = CliRunner().invoke(burnin_main, [*base, "results", "node02", "--json"])
    assert res.exit_code == 0, res.output
    shown = {r["check"]: r for r in json.loads(res.stdout)["results"]}
    assert shown["kernel_log"]["verdict"] == "FAIL"
    assert any(f["action"] == "REBOOT" for f in shown["kernel_log"]["findings"])
    (kernel_log,) = [r for r in store.latest_results("node02") if r.check == "kernel_log"]
    evidence = store.evidence(kernel_log)
    saved = tmp_path / "dmesg.txt"
    saved.write_text(evidence)
    res = CliRunner().invoke(
        burnin_main,
        [*base, "evaluate", "--check", "kernel_log", "--profile", "h100-sxm-8x400g", str(saved), "--json"],
    )
    assert json.loads(res.stdout)["verdict"] == "FAIL" and res.exit_code == 1
    # Without --check the stored dmesg is recognised as a kernel log and judged the same.
    res = CliRunner().invoke(
        burnin_main, [*base, "evaluate", "--profile", "h100-sxm-8x400g", str(saved), "--json"]
    )
    doc = json.loads(res.stdout)
    assert (doc["tool"], doc["check"], doc["verdict"]) == ("dmesg / journalctl -k", "kernel_log", "FAIL")


def test_a_node_whose_host_key_changed_is_refused_with_one_clear_line(rack):
    """Burn-in connects pinned to the key recorded for the node (paramiko's RejectPolicy): a host
    at its address showing another key (re-imaged, or an impostor ready with canned PASS outputs)
    is sent no script, and each of the node's results says why, in one line."""
    from bringup.lab.nodes import ed25519_keypair
    from bringup.ssh.hostkey_records import record
    from bringup.ssh.hostkeys import fingerprint

    name, base, store = rack
    node = store.get_node("node01")
    real = list(node.ssh_host_keys)
    assert len(real) == 1 and real[0].startswith("ssh-ed25519 ")  # recorded as provisioning would
    recorded = " ".join(ed25519_keypair()[1].decode().split()[:2])  # the key it "was provisioned" with
    record(store, "node01", [recorded], "provision run 99 (pxe)")
    try:
        res = CliRunner().invoke(
            burnin_main,
            [*base, "run", "--rack", name, "--nodes", "node01", "--stages", "preflight", "--json", *QUICK],
        )
        (outcome,) = json.loads(res.stdout)
    finally:
        record(store, "node01", real, "lab up (restored)")
    assert res.exit_code != 0 and outcome["verdict"] != "PASS", res.output
    # Every check that runs on the node over SSH; the BMC's event log is read through Redfish.
    results = [r for s in outcome["stages"] for r in s["results"] if r["check"] != "bmc_event_log"]
    reasons = {r["reason"] for r in results}
    today = store.get_node("node01").hardware["ssh_host_keys_recorded"]["at"][:10]
    line = re.compile(
        re.escape("SSH host key of node01 (")
        + r"10\.[0-9.]+"  # the inventory's address: the lab's nodes are reached there
        + re.escape(
            f") does not match the key recorded when it was provisioned on {today} (provision run 99 (pxe)) "
            f"(it shows {fingerprint(real[0])}): re-imaged or impersonated? re-provision it"
        )
    )
    assert reasons and all(line.search(r) and "\n" not in r for r in reasons), reasons
    assert all(r["verdict"] == "UNKNOWN" for r in results)
