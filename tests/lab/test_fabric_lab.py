"""`burnin fabric verify` on the lab's simulated fabric (docs/fabric.md, "On the lab").

A 4-node lab (the fabric service only: SSH and the stand-ins are all this needs) writes its
cabling plan to its state dir. As an operator does, the test runs `ibnetdiscover -p` on a node
over SSH (on a node of each part when the fabric is split), the P_Key loop on every node, and
`burnin fabric verify --plan <the lab's plan> --ibnetdiscover F [--pkeys F]` on the saved outputs:

1. the healthy fabric: no finding, exit 0;
2. each fabric fault, switched on with `bringup lab fault NODE add`: its one finding, both
   physical ends named, the right action, exit 1; switched off again;
3. the split: two islands, with their members.
"""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from bringup.cli.main import main as bringup_main
from burnin.cli import main as burnin_main
from tests.lab.conftest import lab_inventory_dir, node_ssh, require_root

pytestmark = pytest.mark.lab
NODES = ["node01", "node02", "node03", "node04"]
# The port's LID from ibstat's mlx5_0 block (the lab's fake sysfs has no /sys/class/infiniband).
PKEYS_LOOP = (
    "h=mlx5_0; lid=$(ibstat | awk \"/^CA '$h'/{f=1} f&&/Base lid/{print \\$3; exit}\"); "
    'echo "== $(hostname -s) $h 1 =="; smpquery -C "$h" -P 1 pkeys "$lid"'
)
LEAF1 = "switch su1-leaf0 (rack R01 U42)"


@pytest.fixture(scope="module")
def fabric_lab(tmp_path_factory):
    require_root()
    from bringup.lab.fabric import FabricService, plan_path
    from bringup.lab.rack import VirtualRack

    root = tmp_path_factory.mktemp("fabriclab")
    inv = lab_inventory_dir(root / "inventories")
    name = f"fb{uuid.uuid4().hex[:6]}"
    rack = VirtualRack(name, root / "state", inv, services=lambda: [FabricService()])
    try:
        state = rack.up(len(NODES))
        yield {"state": state, "name": name, "root": root, "inv": inv, "plan": plan_path(state.state_dir)}
    finally:
        rack.down()


def lab_fault(lab, node: str, action: str, fault: str) -> None:
    got = CliRunner().invoke(
        bringup_main,
        ["--inventory-dir", str(lab["inv"]), "lab", "fault", node, action, fault, "--name", lab["name"],
         "--lab-dir", str(lab["root"] / "state")],
    )  # fmt: skip
    assert got.exit_code == 0, got.output


def verify(lab, tmp_path, from_nodes=("node01",), pkeys=False) -> tuple[int, dict, str]:
    """Save ibnetdiscover -p from each node named (and the P_Key tables of every node), then
    `burnin fabric verify` on them: (exit status, --json result, text output)."""
    args = ["fabric", "verify", "--plan", str(lab["plan"])]
    for node in from_nodes:
        rc, out, err = node_ssh(lab["state"], node, "ibnetdiscover -p")
        assert rc == 0, f"{node}: ibnetdiscover -p: {err}"
        (tmp_path / f"{node}.ibnet").write_text(out)
        args += ["--ibnetdiscover", str(tmp_path / f"{node}.ibnet")]
    if pkeys:
        tables = []
        for node in NODES:
            rc, out, err = node_ssh(lab["state"], node, PKEYS_LOOP)
            assert rc == 0 and out.startswith(f"== {node} mlx5_0 1 =="), (node, out, err)
            tables.append(out)
        (tmp_path / "pkeys.txt").write_text("".join(tables))
        args += ["--pkeys", str(tmp_path / "pkeys.txt")]
    text = CliRunner().invoke(burnin_main, args)
    done = CliRunner().invoke(burnin_main, [*args, "--json"])
    assert done.exit_code == text.exit_code, (done.output, text.output)
    return done.exit_code, json.loads(done.output), text.output


def test_lab_up_writes_the_plan(fabric_lab):
    plan = fabric_lab["plan"]
    assert plan.is_file() and (plan.parent / "cables.csv").is_file()
    assert "node04,mlx5_0,1,su2-leaf0,2" in (plan.parent / "cables.csv").read_text()


def test_the_healthy_fabric_gives_no_finding(fabric_lab, tmp_path):
    rc, done, text = verify(fabric_lab, tmp_path, pkeys=True)
    assert (rc, done["findings"], done["islands"], done["pkeys_checked"]) == (0, [], 1, True), text
    assert (done["seen_links"], done["planned_links"]) == (8, 8)


def test_swapped_cables(fabric_lab, tmp_path):
    lab_fault(fabric_lab, "node01", "add", "fabric-swapped-cables")
    try:
        rc, done, text = verify(fabric_lab, tmp_path)
    finally:
        lab_fault(fabric_lab, "node01", "remove", "fabric-swapped-cables")
    assert rc == 1 and [f["kind"] for f in done["findings"]] == ["swapped"], text
    line = text.splitlines()[0]
    for end in ("node01 mlx5_0 port 1", "node02 mlx5_0 port 1", f"{LEAF1} port 1", f"{LEAF1} port 2"):
        assert end in line, line
    assert done["findings"][0]["action"] == "SWAP_CABLES"


def test_missing_cable(fabric_lab, tmp_path):
    lab_fault(fabric_lab, "node02", "add", "fabric-missing-cable")
    try:
        rc, done, text = verify(fabric_lab, tmp_path)
        on_node = node_ssh(fabric_lab["state"], "node02", "ibstat; ibnetdiscover -p")
    finally:
        lab_fault(fabric_lab, "node02", "remove", "fabric-missing-cable")
    assert rc == 1 and [f["kind"] for f in done["findings"]] == ["missing"], text
    assert done["findings"][0]["ends"] == ["node02 mlx5_0 port 1", f"{LEAF1} port 2"]
    assert done["findings"][0]["action"] == "RESEAT"
    mlx5_0 = on_node[1].split("CA 'mlx5_1'")[0]
    assert on_node[0] != 0 and "State: Down" in mlx5_0 and "Physical state: Polling" in mlx5_0


def test_split_fabric_is_two_islands_with_their_members(fabric_lab, tmp_path):
    lab_fault(fabric_lab, "node03", "add", "fabric-split")
    try:
        rc, done, text = verify(fabric_lab, tmp_path, from_nodes=("node01", "node03"))
        rc_one, one, _ = verify(fabric_lab, tmp_path, from_nodes=("node01",))
    finally:
        lab_fault(fabric_lab, "node03", "remove", "fabric-split")
    assert rc == 1 and done["islands"] == 2, text
    assert [f["kind"] for f in done["findings"] if f["kind"] != "missing"] == ["split"], text
    split = next(f for f in done["findings"] if f["kind"] == "split")
    assert split["action"] == "FIX_CABLING"
    island1, island2 = split["message"].split("island 2:")
    assert all(n in island1 for n in ("node01", "node02", "su1-leaf0", "spine1", "spine2")), island1
    assert all(n in island2 for n in ("node03", "node04", "su2-leaf0")), island2
    assert "node03" not in island1 and "node01" not in island2
    # the uplinks not laid are named end to end
    missing = [f["ends"] for f in done["findings"] if f["kind"] == "missing"]
    assert sorted(missing) == [
        ["switch su2-leaf0 (rack R02 U42) port 3", "switch spine1 (rack R09 U20) port 2"],
        ["switch su2-leaf0 (rack R02 U42) port 4", "switch spine2 (rack R09 U22) port 2"],
    ]
    # from one side only, the other part is named as unreached
    assert rc_one == 1 and "unreached" in [f["kind"] for f in one["findings"]]


def test_wrong_pkey(fabric_lab, tmp_path):
    lab_fault(fabric_lab, "node04", "add", "fabric-wrong-pkey")
    try:
        rc, done, text = verify(fabric_lab, tmp_path, pkeys=True)
    finally:
        lab_fault(fabric_lab, "node04", "remove", "fabric-wrong-pkey")
    assert rc == 1 and [f["kind"] for f in done["findings"]] == ["pkey"], text
    assert done["findings"][0]["ends"] == ["node04 mlx5_0 port 1", "switch su2-leaf0 (rack R02 U42) port 2"]
    assert done["findings"][0]["action"] == "RECONFIGURE"


def test_back_to_healthy_after_every_fault_is_removed(fabric_lab, tmp_path):
    rc, done, text = verify(fabric_lab, tmp_path, from_nodes=("node01", "node03"), pkeys=True)
    assert (rc, done["findings"], done["islands"]) == (0, [], 1), text
