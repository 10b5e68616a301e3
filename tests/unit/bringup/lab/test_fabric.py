"""The lab's fabric: its plan, the cables each fabric fault leaves, and what each node sees,
checked with the product's own verifier (burnin fabric verify's comparison)."""

from __future__ import annotations

import pytest

from bringup.lab.fabric import (
    PKEY_TABLES,
    FabricFaultError,
    islands,
    lab_plan,
    laid_cables,
    node_views,
)
from bringup.lab.standins import known_faults
from bringup.lab.state import LabNode
from burnin.fabric.pkeys import parse_pkey_tables
from burnin.fabric.verify import verify
from burnin.parsers.ibnetdiscover import parse_ibnetdiscover_ports
from tests.unit.burnin.parsers._samples import load

NAMES = ["node01", "node02", "node03", "node04"]
NODES = [LabNode(n, i, "10.0.0.1", "02:00", "S", "U", "http://b") for i, n in enumerate(NAMES)]


def _verify(faults, from_nodes=("node01",)):
    plan = lab_plan(NAMES)
    views = node_views(plan, NODES, faults)
    ports = [p for n in from_nodes for p in parse_ibnetdiscover_ports(views[n]["ibnetdiscover"])]
    return views, verify(plan, ports)


def test_the_plan_is_two_leaves_and_two_spines():
    plan = lab_plan(NAMES)
    assert len(plan.links) == 4 + 4
    assert {link.b.device for link in plan.links if link.a.hca} == {"su1-leaf0", "su2-leaf0"}
    assert plan.describe(plan.links[0].b) == "switch su1-leaf0 (rack R01 U42) port 1"


def test_every_fabric_fault_is_in_the_catalog():
    assert {"fabric-swapped-cables", "fabric-missing-cable", "fabric-split", "fabric-wrong-pkey"} <= set(
        known_faults()
    )


def test_the_healthy_fabric_verifies_clean_and_ibstat_facts_agree():
    views, done = _verify({})
    assert done.findings == [] and done.islands == 1
    hca = views["node02"]["hcas"]["mlx5_0"]
    port = next(
        p for p in parse_ibnetdiscover_ports(views["node01"]["ibnetdiscover"]) if p.name == "node02 mlx5_0"
    )
    assert (port.lid, hca["guid"], hca["state"]) == (hca["lid"], port.guid, "Active")
    assert hca["guid"] == "0xa088c20002e3142a"  # the node's renumbered ibstat GUID (dispatch.node_guid)


def test_swapped_cables_name_four_ends():
    _, done = _verify({"node01": ["fabric-swapped-cables"]})
    assert [f.kind for f in done.findings] == ["swapped"]
    line = done.findings[0].line()
    assert "node01 mlx5_0 port 1" in line and "node02 mlx5_0 port 1" in line and "SWAP_CABLES" in line


def test_a_missing_cable_downs_the_hca_and_is_found_elsewhere():
    views, done = _verify({"node02": ["fabric-missing-cable"]})
    assert [f.kind for f in done.findings] == ["missing"]
    assert (
        "node02 mlx5_0 port 1" in done.findings[0].line()
        and "su1-leaf0 (rack R01 U42) port 2" in done.findings[0].line()
    )
    assert views["node02"]["ibnetdiscover"] is None and views["node02"]["hcas"]["mlx5_0"]["state"] == "Down"


def test_a_split_is_two_islands_each_node_seeing_its_own():
    faults = {"node03": ["fabric-split"]}
    assert len(islands(laid_cables(lab_plan(NAMES), faults))) == 2
    views, done = _verify(faults, ("node01", "node03"))
    split = [f for f in done.findings if f.kind == "split"]
    assert len(split) == 1 and done.islands == 2
    assert "node03" in split[0].line() and "node01" in split[0].line()
    alone = parse_ibnetdiscover_ports(views["node03"]["ibnetdiscover"])
    assert {p.name for p in alone} == {"su2-leaf0", "node03 mlx5_0", "node04 mlx5_0"}


def test_wrong_pkey_is_one_table_apart():
    views = node_views(lab_plan(NAMES), NODES, {"node04": ["fabric-wrong-pkey"]})
    assert views["node04"]["hcas"]["mlx5_0"]["pkeys"] == PKEY_TABLES["fabric-wrong-pkey"]
    text = "".join(f"== {n} mlx5_0 1 ==\n" + load(views[n]["hcas"]["mlx5_0"]["pkeys"]) for n in NAMES)
    plan = lab_plan(NAMES)
    ports = parse_ibnetdiscover_ports(views["node01"]["ibnetdiscover"])
    done = verify(plan, ports, parse_pkey_tables(text, "pkeys.txt"))
    assert [f.kind for f in done.findings] == ["pkey"] and "node04 mlx5_0" in done.findings[0].line()


def test_a_swap_needs_a_neighbour():
    with pytest.raises(FabricFaultError, match="needs another node"):
        laid_cables(lab_plan(["node01", "node02", "node03"]), {"node03": ["fabric-swapped-cables"]})


def test_the_stand_ins_answer_from_the_node_view(tmp_path):
    import subprocess

    from bringup.lab.fabric import write_view
    from bringup.lab.standins import install_standins

    views = node_views(
        lab_plan(NAMES), NODES, {"node02": ["fabric-missing-cable"], "node04": ["fabric-wrong-pkey"]}
    )
    roots = {}
    for name in ("node01", "node02", "node04"):
        roots[name] = tmp_path / name
        install_standins(roots[name], [])
        write_view(roots[name], views[name])

    def run(node, *args):
        return subprocess.run(
            [roots[node] / "usr/local/bin" / args[0], *args[1:]], capture_output=True, text=True
        )

    ibstat = run("node02", "ibstat").stdout.split("CA 'mlx5_1'")[0]  # node02's cable is not laid
    assert "State: Down" in ibstat and "Physical state: Polling" in ibstat and "Rate: 10\n" in ibstat
    hca = views["node01"]["hcas"]["mlx5_0"]
    ibstat = run("node01", "ibstat").stdout
    first, rest = ibstat.split("CA 'mlx5_1'")
    assert (
        f"Base lid: {hca['lid']}\n" in first
        and f"SM lid: {hca['sm_lid']}\n" in first
        and "State: Active" in first
    )
    assert "Base lid: 102\n" in rest  # HCAs off the lab fabric stay as recorded
    got = run("node01", "ibnetdiscover", "-p")
    assert got.returncode == 0 and got.stdout == views["node01"]["ibnetdiscover"]
    assert run("node02", "ibnetdiscover", "-p").returncode == 1  # no link: discovery fails
    assert run("node01", "ibnetdiscover").returncode == 1  # only -p is simulated
    lid = views["node04"]["hcas"]["mlx5_0"]["lid"]
    got = run("node04", "smpquery", "-C", "mlx5_0", "-P", "1", "pkeys", str(lid))
    assert got.returncode == 0 and got.stdout.startswith("   0: 0x7fff 0x8010")
    assert run("node04", "smpquery", "-C", "mlx5_0", "-P", "1", "pkeys", str(lid + 1)).returncode == 1
    assert run(
        "node01",
        "smpquery",
        "-C",
        "mlx5_0",
        "-P",
        "1",
        "pkeys",
        str(views["node01"]["hcas"]["mlx5_0"]["lid"]),
    ).stdout.startswith("   0: 0xffff")


def _lab_state(tmp_path, names):
    from bringup.lab.state import LabState

    state = LabState("t", "abc123", "blabc123", str(tmp_path), "inv.yml", "now", nodes=[
        LabNode(n, i, "10.0.0.1", "02:00", "S", "U", "http://b") for i, n in enumerate(names)
    ])  # fmt: skip
    for n in names:
        (tmp_path / "nodes" / n / "root" / "etc" / "bringup-lab").mkdir(parents=True)
    state.save()
    return state


def test_switching_a_fabric_fault_rewrites_every_node_view(tmp_path):
    import json

    from bringup.lab.fabric import NODE_FILE, plan_path, write_lab_fabric
    from bringup.lab.faults import switch_node_fault

    state = _lab_state(tmp_path, NAMES)
    write_lab_fabric(state)
    assert plan_path(tmp_path).is_file()

    def seen(node):
        view = json.loads((tmp_path / "nodes" / node / "root" / NODE_FILE).read_text())
        return {p.name for p in parse_ibnetdiscover_ports(view["ibnetdiscover"])}

    assert "node04 mlx5_0" in seen("node01")
    assert switch_node_fault(tmp_path, "t", "node03", "add", "fabric-split") == ["fabric-split"]
    assert "node04 mlx5_0" not in seen("node01") and "node01 mlx5_0" not in seen("node04")
    switch_node_fault(tmp_path, "t", "node03", "remove", "fabric-split")
    assert "node04 mlx5_0" in seen("node01")


def test_a_fabric_fault_the_plan_cannot_make_is_refused_before_writing(tmp_path):
    from bringup.lab.faults import FaultSwitchError, switch_node_fault
    from bringup.lab.standins import FAULTS_FILE

    state = _lab_state(tmp_path, NAMES[:3])  # node03 alone on su2-leaf0
    with pytest.raises(FaultSwitchError, match="needs another node"):
        switch_node_fault(tmp_path, "t", "node03", "add", "fabric-swapped-cables")
    assert not (tmp_path / "nodes" / "node03" / "root" / FAULTS_FILE).exists()
    assert state.load(tmp_path).nodes[2].faults == []


def test_perfquery_answers_the_far_end_the_ib_stage_discovers(tmp_path):
    """The ib stage finds the far end of mlx5_0 in ``ibnetdiscover -p`` by ibstat's port GUID
    and reads it with ``perfquery -x -C mlx5_0 -P 1 LID PORT``: the stand-in answers for that
    switch port only, and gives the local port the LID ibstat shows."""
    import subprocess

    from bringup.lab.fabric import write_view
    from bringup.lab.standins import install_standins
    from bringup.lab.standins.sysfs import build_fake_sysfs
    from burnin.parsers.ibnetdiscover import switch_port_for
    from burnin.parsers.ibstat import parse_ibstat

    views = node_views(lab_plan(NAMES), NODES, {})
    root = tmp_path / "node03"
    identity = root / "etc/bringup-lab/identity.json"  # node03's IB GUIDs, as lab/rack.py writes
    identity.parent.mkdir(parents=True)
    identity.write_text('{"index": 2}')
    install_standins(root, [])
    build_fake_sysfs(root, [])
    write_view(root, views["node03"])

    def run(*args):
        return subprocess.run([root / "usr/local/bin" / args[0], *args[1:]], capture_output=True, text=True)

    (port,) = [p for h in parse_ibstat(run("ibstat").stdout).hcas if h.name == "mlx5_0" for p in h.ports]
    fabric = parse_ibnetdiscover_ports(views["node03"]["ibnetdiscover"])
    link = switch_port_for(fabric, port.port_guid)
    assert link is not None and link.peer_name == "su2-leaf0" and link.peer_port == 1
    own = run("perfquery", "-x", "-C", "mlx5_0", "-P", "1")
    assert own.returncode == 0 and f"Lid {port.base_lid} port 1" in own.stdout
    far = run("perfquery", "-x", "-C", "mlx5_0", "-P", "1", str(link.peer_lid), str(link.peer_port))
    assert far.returncode == 0, far.stderr
    assert f"Lid {link.peer_lid} port {link.peer_port}" in far.stdout
    other = next(p for p in fabric if p.kind == "SW" and p.lid != link.peer_lid)  # a spine or leaf
    wrong = run("perfquery", "-x", "-C", "mlx5_0", "-P", "1", str(other.lid), str(link.peer_port))
    assert wrong.returncode == 1 and "not the far end" in wrong.stderr
    wrong = run("perfquery", "-x", "-C", "mlx5_0", "-P", "1", str(link.peer_lid), str(link.peer_port + 1))
    assert wrong.returncode == 1


def test_the_plan_is_written_cables_first(tmp_path, monkeypatch):
    """Nodes start in parallel, each writing the plan unless plan.yml exists: plan.yml must come
    last, so a node that sees it also finds the cables.csv it names."""
    import bringup.lab.fabric as fabric

    state = _lab_state(tmp_path, NAMES)
    written = []
    real = fabric.atomic_write
    monkeypatch.setattr(
        fabric, "atomic_write", lambda path, text: (written.append(path.name), real(path, text))
    )
    fabric.lab_views(state)
    assert written[-1] == "plan.yml" and "cables.csv" in written
