"""burnin fabric verify's comparison: each fault type found once, named by both physical ends,
with its action; the healthy fabric gives no finding. The fabric is printed from the plan by
bringup/lab/fabric_sim.py, a fault being a change to the cables laid; real captures are parsed too."""

from __future__ import annotations

from bringup.lab.fabric_sim import ibnetdiscover_text, planned_cables, swap_switch_ends
from burnin.fabric.pkeys import parse_pkey_tables
from burnin.fabric.plan import End, parse_plan_yaml
from burnin.fabric.verify import EXIT_CLEAN, EXIT_FINDINGS, verify
from burnin.parsers.ibnetdiscover import parse_ibnetdiscover_ports
from tests.unit.burnin.parsers._samples import load

PLAN = """
speed: NDR
width: 4x
switches:
  su1-leaf0: {guid: "0x0002c903000a0001", rack: R01, unit: U40}
  su1-leaf1: {guid: "0x0002c903000a0002", rack: R01, unit: U41}
  su2-leaf0: {guid: "0x0002c903000a0003", rack: R02, unit: U40}
  su2-leaf1: {guid: "0x0002c903000a0004", rack: R02, unit: U41}
  spine1: {guid: "0x0002c903000b0001", rack: R09, unit: U20}
  spine2: {guid: "0x0002c903000b0002", rack: R09, unit: U21}
fat_tree:
  scalable_units: 2
  nodes_per_unit: 4
  rails: 2
  spines: 2
"""


def plan():
    return parse_plan_yaml(PLAN, "plan.yml")


def run(p, cables, **kw):
    pkeys = kw.pop("pkeys", None)
    return verify(p, parse_ibnetdiscover_ports(ibnetdiscover_text(p, cables, **kw)), pkeys)


def index(p, a: End) -> int:
    return next(i for i, link in enumerate(p.links) if link.a == a)


def test_the_healthy_fabric_gives_no_finding():
    p = plan()
    done = run(p, planned_cables(p))
    assert done.findings == [] and done.exit_code == EXIT_CLEAN
    assert (done.planned_links, done.seen_links, done.islands) == (24, 24, 1)
    assert done.pkeys_checked is False


def test_two_swapped_cables_are_one_finding_naming_all_four_ends():
    p = plan()
    i, j = index(p, End("gpu0001", "mlx5_0", 1)), index(p, End("gpu0002", "mlx5_0", 1))
    done = run(p, swap_switch_ends(planned_cables(p), i, j))
    assert [f.kind for f in done.findings] == ["swapped"] and done.exit_code == EXIT_FINDINGS
    f = done.findings[0]
    assert f.action == "SWAP_CABLES"
    assert "gpu0001 mlx5_0 port 1 is cabled to switch su1-leaf0 (rack R01 U40) port 2" in f.message
    assert "gpu0002 mlx5_0 port 1 to switch su1-leaf0 (rack R01 U40) port 1" in f.message


def test_a_missing_cable_names_both_ends_and_says_reseat():
    p = plan()
    cables = planned_cables(p)
    del cables[index(p, End("gpu0003", "mlx5_1", 1))]
    done = run(p, cables)
    assert [f.line() for f in done.findings] == [
        "missing: no cable seen between gpu0003 mlx5_1 port 1 and switch su1-leaf1 (rack R01 U41) port 3"
        " -> RESEAT: reseat the cable at both ends; replace it if the link stays down"
    ]


def test_an_unexpected_cable_between_planned_switches():
    p = plan()
    extra = (End("su1-leaf0", None, 40), End("su2-leaf1", None, 40))
    done = run(p, planned_cables(p) + [extra])
    assert [(f.kind, f.action, f.ends) for f in done.findings] == [
        (
            "unexpected",
            "FIX_PLAN",
            ("switch su1-leaf0 (rack R01 U40) port 40", "switch su2-leaf1 (rack R02 U41) port 40"),
        )
    ]


def test_a_cable_at_the_wrong_port_says_where_it_belongs():
    p = plan()
    cables = planned_cables(p)
    i = index(p, End("gpu0004", "mlx5_0", 1))
    cables[i] = (cables[i][0], End("su1-leaf0", None, 30))
    done = run(p, cables)
    assert [f.message for f in done.findings] == [
        "gpu0004 mlx5_0 port 1 is cabled to switch su1-leaf0 (rack R01 U40) port 30;"
        " the plan has switch su1-leaf0 (rack R01 U40) port 4"
    ]
    assert done.findings[0].action == "MOVE_CABLE"


def test_wrong_width_and_wrong_speed_are_found_switch_side_too():
    p = plan()
    uplink = p.links[index(p, End("su2-leaf1", None, 5))]
    hca = p.links[index(p, End("gpu0005", "mlx5_0", 1))]
    rates = {frozenset((uplink.a, uplink.b)): ("1x", "NDR"), frozenset((hca.a, hca.b)): ("4x", "HDR")}
    done = run(p, planned_cables(p), rates=rates)
    assert [(f.kind, f.action) for f in done.findings] == [("degraded", "REPLACE_CABLE")] * 2
    messages = sorted(f.message for f in done.findings)
    assert messages[0] == (
        "gpu0005 mlx5_0 port 1 at 4x HDR; switch su2-leaf0 (rack R02 U40) port 1 at 4x HDR: the plan has 4x NDR"
    )
    assert messages[1].startswith(
        "switch spine1 (rack R09 U20) port 4 at 1x NDR; switch su2-leaf1 (rack R02 U41)"
    )


def test_a_fabric_in_two_islands_is_split_with_its_members():
    p = plan()
    # every uplink of scalable unit 2 left out: its two leaves and four nodes are an island
    cables = [
        c
        for c in planned_cables(p)
        if not (c[0].device.startswith("su2") and c[1].device.startswith("spine"))
    ]
    done = run(p, cables)
    split = [f for f in done.findings if f.kind == "split"]
    assert done.islands == 2 and len(split) == 1 and split[0].action == "FIX_CABLING"
    assert (
        "the fabric is in 2 islands: island 1: 4 switch(es) [spine1, spine2, su1-leaf0, su1-leaf1], 4 node(s)"
        in split[0].message
    )
    assert (
        "island 2: 2 switch(es) [su2-leaf0, su2-leaf1], 4 node(s) [gpu0005, gpu0006, gpu0007, gpu0008]"
        in split[0].message
    )
    assert sum(f.kind == "missing" for f in done.findings) == 4  # the four uplinks, each named


def test_devices_seen_nowhere_are_unreached():
    p = plan()
    cables = [c for c in planned_cables(p) if "su2" not in c[0].device + c[1].device]  # unit 2 unpowered
    done = run(p, cables)
    unreached = [f for f in done.findings if f.kind == "unreached"]
    assert len(unreached) == 1 and "2 switch(es) [su2-leaf0, su2-leaf1], 4 node(s)" in unreached[0].message


def test_two_switches_with_one_guid_are_a_duplicate():
    p = parse_plan_yaml(PLAN.replace('guid: "0x0002c903000a0004", ', ""), "plan.yml")
    done = run(p, planned_cables(p), guids={"su2-leaf1": 0x0002C903000A0003})
    dup = [f for f in done.findings if f.kind == "duplicate_guid"]
    assert dup and dup[0].action == "REPLACE_DEVICE"
    assert "GUID 0x0002c903000a0003 is on 2 devices: 'su2-leaf0', 'su2-leaf1'" in dup[0].message


def test_a_pkey_table_that_differs_is_named_with_its_switch_port():
    p = plan()
    full, tenant = (
        load("smpquery_pkeys_hca_default_full_SYNTHETIC.txt"),
        load("smpquery_pkeys_hca_tenant_0x8010_SYNTHETIC.txt"),
    )
    text = "".join(f"== gpu000{n} mlx5_0 1 ==\n{tenant if n == 3 else full}" for n in (1, 2, 3, 4))
    done = run(p, planned_cables(p), pkeys=parse_pkey_tables(text, "pkeys.txt"))
    assert done.pkeys_checked
    assert [f.line() for f in done.findings] == [
        "pkey: gpu0003 mlx5_0 port 1 (cabled to switch su1-leaf0 (rack R01 U40) port 3) holds P_Keys 0x7fff 0x8010;"
        " the other 3 port(s) hold 0xffff -> RECONFIGURE: fix the partitions (the subnet manager's partitions.conf)"
        " for this port"
    ]


def test_real_capture_read_against_a_csv_plan():
    """treydock's HDR capture: the worker's HCA is where a CSV plan puts it, the SHARP
    aggregation node (inside the leaf) is not a finding; the spine ports seen down are unplanned."""
    from burnin.fabric.plan import Plan, parse_cabling_csv

    links = parse_cabling_csv(
        "node,hca,hca_port,switch,switch_port,speed,width\nworker20,mlx5_3,1,5FB0405-leaf-IB01,79,HDR,4x\n",
        "c.csv",
    )
    done = verify(Plan("c.csv", links), parse_ibnetdiscover_ports(load("ibnetdiscover_p_hdr_leaf_spine.txt")))
    assert done.findings == []
    moved = parse_cabling_csv(
        "node,hca,hca_port,switch,switch_port\nworker20,mlx5_3,1,5FB0405-leaf-IB01,80\n", "c.csv"
    )
    done = verify(Plan("c.csv", moved), parse_ibnetdiscover_ports(load("ibnetdiscover_p_hdr_leaf_spine.txt")))
    assert [f.kind for f in done.findings] == ["wrong_port"]
    assert done.findings[0].ends == (
        "worker20 mlx5_3 port 1",
        "switch 5FB0405-leaf-IB01 port 79",
        "switch 5FB0405-leaf-IB01 port 80",
    )


CSV_PLAN = """node,hca,hca_port,switch,switch_port
node1,mlx5_0,1,leaf1,1
node2,mlx5_0,1,leaf1,2
node3,mlx5_0,1,leaf1,3
"""


def test_findings_name_the_hca_first_when_a_switch_name_sorts_before_it():
    """'leaf1' sorts before 'node1': the swap and the wrong port still say where the HCA is."""
    from burnin.fabric.plan import Plan, parse_cabling_csv

    p = Plan("c.csv", parse_cabling_csv(CSV_PLAN, "c.csv"))
    done = run(p, swap_switch_ends(planned_cables(p), 0, 1))
    assert [f.message for f in done.findings] == [
        "node1 mlx5_0 port 1 is cabled to switch leaf1 port 2 and node2 mlx5_0 port 1 to switch leaf1 port 1:"
        " the plan has them the other way round"
    ]
    cables = planned_cables(p)
    cables[0] = (cables[0][0], End("leaf1", None, 3))  # node1 on node3's port, node3 unplugged
    del cables[2]
    done = run(p, cables)
    assert [(f.kind, f.message) for f in done.findings] == [
        (
            "wrong_port",
            "node1 mlx5_0 port 1 is cabled to switch leaf1 port 3; the plan has switch leaf1 port 1",
        ),
        (
            "missing",
            "no cable seen between node3 mlx5_0 port 1 and switch leaf1 port 3 (node3 not seen in the fabric)",
        ),
    ]


def test_two_hcas_with_one_guid_are_a_duplicate():
    p = plan()
    guids = {"gpu0001 mlx5_0": 0xB83FD20300000042, "gpu0002 mlx5_0": 0xB83FD20300000042}
    done = run(p, planned_cables(p), guids=guids)
    dup = [f for f in done.findings if f.kind == "duplicate_guid"]
    assert [f.message for f in dup] == [
        "GUID 0xb83fd20300000042 is on 2 devices: 'gpu0001 mlx5_0', 'gpu0002 mlx5_0'"
    ]


def test_the_collector_is_paused_only_while_verifying():
    import gc

    from burnin.fabric.verify import gc_paused

    p = plan()
    assert gc.isenabled()
    run(p, planned_cables(p))
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()
