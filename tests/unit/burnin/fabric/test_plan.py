"""The cabling plan: a CSV or a rail-optimised fat tree, switches named by place; a malformed
plan names its file, line and field."""

from __future__ import annotations

import pytest

from burnin.fabric.plan import End, PlanError, load_plan, parse_cabling_csv, parse_plan_yaml

CSV = """# rack R01
node,hca,hca_port,switch,switch_port,speed,width
gpu0001,mlx5_0,1,leaf1,1,NDR,4x
gpu0001,mlx5_1,1,leaf2,1,,
leaf1,-,33,spine1,1,NDR,4x
"""


def test_a_csv_plan_reads_hca_and_switch_cables():
    links = parse_cabling_csv(CSV, "c.csv")
    assert [(lk.a, lk.b, lk.speed, lk.width, lk.line) for lk in links] == [
        (End("gpu0001", "mlx5_0", 1), End("leaf1", None, 1), "NDR", "4x", 3),
        (End("gpu0001", "mlx5_1", 1), End("leaf2", None, 1), None, None, 4),
        (End("leaf1", None, 33), End("spine1", None, 1), "NDR", "4x", 5),
    ]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("node,hca,switch,switch_port\n", "c.csv: line 1: field hca_port: column missing"),
        (
            "node,hca,hca_port,switch,switch_port\ngpu1,mlx5_0,one,leaf1,1\n",
            "c.csv: line 2: field hca_port: 'one'",
        ),
        (
            "node,hca,hca_port,switch,switch_port\ngpu1,mlx5_0,1,leaf1\n",
            "c.csv: line 2: 4 fields, the header has 5",
        ),
        ("node,hca,hca_port,switch,switch_port\ngpu1,,1,leaf1,1\n", "c.csv: line 2: field hca: empty"),
        (
            "node,hca,hca_port,switch,switch_port,speed\ngpu1,mlx5_0,1,leaf1,1,FAST\n",
            "c.csv: line 2: field speed: 'FAST' is not an InfiniBand speed",
        ),
        (
            "node,hca,hca_port,switch,switch_port\ngpu1,mlx5_0,1,leaf1,1\ngpu2,mlx5_0,1,leaf1,1\n",
            "c.csv: line 3: field switch_port: leaf1 port 1 is already cabled on line 2",
        ),
    ],
)
def test_a_malformed_csv_names_file_line_and_field(text, where):
    with pytest.raises(PlanError) as err:
        parse_cabling_csv(text, "c.csv")
    assert str(err.value).startswith(where)


TREE = """
switches:
  su1-leaf0: {guid: "0x0002c903000a0001", rack: R01, unit: U40}
fat_tree:
  scalable_units: 2
  nodes_per_unit: 4
  rails: 8
  spines: 4
  uplinks: 2
"""


def test_a_fat_tree_gives_every_hca_its_rail_leaf_and_every_leaf_its_uplinks():
    plan = parse_plan_yaml(TREE, "p.yml")
    hca = [lk for lk in plan.links if lk.a.hca is not None]
    up = [lk for lk in plan.links if lk.a.hca is None]
    assert len(hca) == 2 * 4 * 8 and len(up) == 2 * 8 * 4 * 2
    assert (hca[0].a, hca[0].b) == (End("gpu0001", "mlx5_0", 1), End("su1-leaf0", None, 1))
    node6 = next(lk for lk in hca if lk.a == End("gpu0006", "mlx5_7", 1))
    assert node6.b == End("su2-leaf7", None, 2)  # unit 2, second node, rail 7
    # su2-leaf7 is leaf 15 (0-based): its second uplink to spine 4 on leaf port 4+3*2+1+1, spine port 15*2+2
    assert any(lk.a == End("su2-leaf7", None, 12) and lk.b == End("spine4", None, 32) for lk in up)
    assert len({lk.b for lk in plan.links}) == len(plan.links)  # no switch port used twice
    assert plan.describe(End("su1-leaf0", None, 3)) == "switch su1-leaf0 (rack R01 U40) port 3"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            TREE.replace("rails: 8", "rails: eight"),
            "p.yml: line 7: field fat_tree.rails: 'eight' is not a whole number",
        ),
        (
            TREE.replace("spines: 4", "spines: 4\n  leaves: 3"),
            "p.yml: line 9: field fat_tree.leaves: unknown key",
        ),
        (
            TREE + '  leaf: "leaf{unit}"\n',
            "p.yml: line 10: field fat_tree.leaf: 'leaf{unit}' is not a name template",
        ),
        (TREE.replace('"0x0002c903000a0001"', "zz"), "p.yml: line 3: field switches.su1-leaf0.guid: 'zz'"),
        ("switches: {}\n", "p.yml: give one of cabling (a CSV file) or fat_tree"),
        ("fat_tree: [\n", "p.yml: line 2: not YAML"),
    ],
)
def test_a_malformed_yaml_plan_names_file_line_and_field(text, where):
    with pytest.raises(PlanError) as err:
        parse_plan_yaml(text, "p.yml")
    assert str(err.value).startswith(where)


def test_a_yaml_plan_reads_the_csv_it_names(tmp_path):
    (tmp_path / "cables.csv").write_text(CSV)
    (tmp_path / "plan.yml").write_text(
        "speed: NDR\nswitches:\n  leaf1: {rack: R01, unit: U42}\ncabling: cables.csv\n"
    )
    plan = load_plan(tmp_path / "plan.yml")
    assert len(plan.links) == 3 and plan.speed == "NDR"
    assert plan.describe(plan.links[0].b) == "switch leaf1 (rack R01 U42) port 1"
    assert len(load_plan(tmp_path / "cables.csv").links) == 3
    (tmp_path / "bad.yml").write_text("cabling: nowhere.csv\n")
    with pytest.raises(PlanError, match=r"bad.yml: line 1: field cabling: nowhere.csv: file not found"):
        load_plan(tmp_path / "bad.yml")
