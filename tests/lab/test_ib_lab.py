"""The ib stage on the virtual rack: `burnin run --stages ib` over real SSH, the ib_write_bw
stand-ins really pairing up over the lab network, perfquery read before and after.

Four nodes, node03 with a degraded port (mlx5_3 at ~60% of line rate): the stage fails exactly
that port, its finding names both ends of each failing pair, and the other nodes pass. Then,
on three nodes (an odd count: 3-cycles), symbol errors rising under load on node02's mlx5_2 fail
that port although its bandwidth is fine. Last, on the lab's simulated fabric (every node's
mlx5_0 on a leaf of the lab's cabling plan), the switch port at the far end of node04's mlx5_0
counting symbol errors under load is named by both ends, by the plan's switch name and place
once the rack's ``fabric_plan`` points at the lab's plan (docs/fabric.md)."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from burnin.cli import main as burnin_main
from tests.lab.conftest import lab_inventory_dir, node_ssh, ready_for_burnin, require_root

pytestmark = pytest.mark.lab

NODES = ["node01", "node02", "node03", "node04"]
DEGRADED = ("node03", "mlx5_3")  # the fault ib-port-degraded (catalog.json)


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    """4 lab nodes, node03 with a degraded IB port; enrolled, discovered, configured."""
    require_root()
    from bringup.lab.rack import VirtualRack

    root = tmp_path_factory.mktemp("iblab")
    inv = lab_inventory_dir(root / "inventories")
    name = f"i{uuid.uuid4().hex[:7]}"
    spec = root / "faults.yml"
    spec.write_text(f"nodes:\n  {DEGRADED[0]}: [ib-port-degraded]\n")
    # The ib stage needs SSH, the stand-ins and the simulated fabric only (no Slurm, apt repository...).
    from bringup.lab.fabric import FabricService

    lab = VirtualRack(name, root / "state", inv, services=lambda: [FabricService()])
    db = root / "fleet.db"
    try:
        state = lab.up(len(NODES), spec)
        base, store = ready_for_burnin(name, inv, db, NODES)
        yield name, base, store, state
    finally:
        lab.down()


def node_guid(rack, node: str, hca: str) -> str:
    """The HCA's GUID as the node's own sysfs shows it (a088:c200:03e0:4776 -> 0xa088c20003e04776):
    every lab node has its own GUIDs, so a finding's GUID says which node it is about."""
    rc, out, err = node_ssh(rack[3], node, f"cat /sys/bus/pci/devices/*/infiniband/{hca}/node_guid")
    assert rc == 0, err
    return "0x" + out.strip().replace(":", "")


def run_ib(rack, nodes: list[str]) -> dict[str, dict]:
    name, base, _, _ = rack
    args = [*base, "run", "--rack", name, "--nodes", ",".join(nodes), "--stages", "ib", "--json"]
    res = CliRunner().invoke(burnin_main, [*args, "--set", "diag.ib_load_seconds=2"])
    assert res.exit_code in (0, 1), res.output
    outcomes = {o["node"]: o for o in json.loads(res.stdout)}
    assert set(outcomes) == set(nodes)
    return outcomes


def ib_result(outcome: dict) -> dict:
    ((stage,),) = [outcome["stages"]]
    assert stage["stage"] == "ib"
    (result,) = stage["results"]
    assert result["check"] == "ib_bandwidth"
    return result


def test_degraded_port_fails_exactly_that_port_and_names_both_ends(rack):
    _, _, store, _ = rack
    outcomes = run_ib(rack, NODES)
    verdicts = {n: o["verdict"] for n, o in outcomes.items()}
    assert verdicts == {"node01": "PASS", "node02": "PASS", "node03": "FAIL", "node04": "PASS"}, {
        n: ib_result(o)["findings"] or ib_result(o)["reason"] for n, o in outcomes.items()
    }
    node, hca = DEGRADED
    result = ib_result(outcomes[node])
    ports = result["metrics"]["ports"]
    assert len(ports) == 8 and {k for k, v in ports.items() if v["verdict"] != "PASS"} == {hca}
    assert ports[hca]["gbps"] == pytest.approx(0.6 * 392.34, abs=0.5)  # per direction, both rounds
    assert all(v["gbps"] >= 388 for k, v in ports.items() if k != hca)
    (finding,) = result["findings"]
    assert finding["severity"] == "critical" and finding["action"] == "REPLACE_CABLE"
    assert f"{node} {hca} port 1 (GUID {node_guid(rack, node, hca)}, LID 104)" in finding["message"]
    partners = {r["partner"] for r in ports[hca]["rounds"]}
    assert len(partners) == 2 and node not in partners  # two different partners, rail-aligned
    guids = {n: node_guid(rack, n, hca) for n in (node, *partners)}
    assert len(set(guids.values())) == 3  # one port GUID per node
    for partner in partners:  # the other end of each failing pair, named with its own GUID
        assert f"{partner} {hca} port 1 (GUID {guids[partner]}, LID 104)" in finding["message"]
    for other in ("node01", "node02", "node04"):
        assert store.get_node(other).state == "burnin"
        assert outcomes[other]["state"] == "burnin"
    assert store.get_node(node).state == "failed"
    (saved,) = [r for r in store.latest_results(node) if r.check == "ib_bandwidth"]
    evidence = store.evidence(saved)
    assert saved.verdict == "FAIL" and "RDMA_Write Bidirectional BW Test" in evidence
    assert re.search(rf"\$ ib_write_bw -d {hca} -i 1 -p \d+ --report_gbits -D 2 -F -b --out_json", evidence)
    assert "# Port extended counters: Lid 104 port 1" in evidence  # perfquery before and after


def test_symbol_errors_under_load_fail_the_port_on_an_odd_rack(rack):
    """Three nodes (3-cycles of one-way sessions); node02 now has symbol errors on mlx5_2."""
    _, _, _, state = rack
    rc, _, err = node_ssh(
        state, "node02", 'echo \'{"faults": ["ib-symbol-errors"]}\' > /etc/bringup-lab/faults.json'
    )
    assert rc == 0, err
    nodes = ["node01", "node02", "node04"]
    outcomes = run_ib(rack, nodes)
    assert {n: o["verdict"] for n, o in outcomes.items()} == {
        "node01": "PASS",
        "node02": "FAIL",
        "node04": "PASS",
    }
    result = ib_result(outcomes["node02"])
    ports = result["metrics"]["ports"]
    assert {k for k, v in ports.items() if v["verdict"] != "PASS"} == {"mlx5_2"}
    assert ports["mlx5_2"]["gbps"] >= 388  # the bandwidth is fine: the counters fail it
    assert ports["mlx5_2"]["counters"]["SymbolErrorCounter"] == 2 * 12 * 2  # 2 rounds x 2 s x 12/s
    assert {r["mode"] for r in ports["mlx5_2"]["rounds"]} == {"one-way"}
    (finding,) = result["findings"]
    assert "SymbolErrorCounter rose by 48" in finding["message"] and finding["action"] == "REPLACE_CABLE"


def test_a_switch_port_with_symbol_errors_under_load_is_named_by_both_ends(rack):
    """node04's mlx5_0 cable reaches su2-leaf0 port 2 (the lab's plan: node03 and node04 on
    su2-leaf0); that switch port counts symbol errors while mlx5_0 sends, mlx5_0 itself none:
    RESEAT at the switch, named by GUID and LID, then by the plan's name and place."""
    from bringup.cli.main import main as bringup_main
    from bringup.lab.fabric import SWITCHES, plan_path

    _, base, store, state = rack

    def repaired(node: str) -> None:  # a node failed by a run before is burnt in again
        if store.get_node(node).state == "failed":
            res = CliRunner().invoke(
                bringup_main, [*base, "nodes", "mark-repaired", node, "--reason", "retest"]
            )
            assert res.exit_code == 0, res.output

    repaired("node02")  # node02's symbol errors (the test above) are gone now
    for node, faults in (("node02", []), ("node04", ["ib-switch-port-symbol-errors"])):
        rc, _, err = node_ssh(
            state, node, f"echo '{json.dumps({'faults': faults})}' > /etc/bringup-lab/faults.json"
        )
        assert rc == 0, err
    nodes = ["node01", "node02", "node04"]
    far = "switch su2-leaf0 (GUID {}, LID {}) port 2".format(SWITCHES["su2-leaf0"][0], "{lid}")
    named = "switch su2-leaf0 (rack R02 U42) port 2 (cabled to node04 mlx5_0 port 1)"
    inventory = Path(state.inventory)
    for with_plan in (False, True):
        if with_plan:  # node04 failed the run before; the rack is given the lab's plan
            repaired("node04")
            text = inventory.read_text()
            doc = yaml.safe_load(text)
            doc["all"]["vars"]["fabric_plan"] = str(plan_path(state.state_dir))
            first = text.splitlines(keepends=True)[0]  # lab up's marker comment stays
            inventory.write_text((first if first.startswith("#") else "") + yaml.safe_dump(doc))
        outcomes = run_ib(rack, nodes)
        assert {n: o["verdict"] for n, o in outcomes.items()} == {
            "node01": "PASS",
            "node02": "PASS",
            "node04": "FAIL",
        }, {n: o.get("stages") or o.get("skipped") for n, o in outcomes.items()}
        for healthy in ("node01", "node02"):
            assert ib_result(outcomes[healthy])["findings"] == []
        result = ib_result(outcomes["node04"])
        ports = result["metrics"]["ports"]
        assert {k for k, v in ports.items() if v["verdict"] != "PASS"} == {"mlx5_0"}
        assert ports["mlx5_0"].get("counters", {}).get("SymbolErrorCounter", 0) == 0  # the HCA end is clean
        assert ports["mlx5_0"]["switch_counters"]["SymbolErrorCounter"] > 0
        (finding,) = result["findings"]
        assert finding["action"] == "RESEAT" and "the HCA end saw none" in finding["message"]
        if with_plan:
            assert finding["message"].startswith(named), finding["message"]
        else:
            assert re.match(re.escape(far).replace(r"\{lid\}", r"\d+"), finding["message"]), finding[
                "message"
            ]
