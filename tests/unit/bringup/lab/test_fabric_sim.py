"""The simulated fabric's ibnetdiscover -p: both directions of each cable, in the format the
real captures have, down ports where the plan cables a switch port no cable reaches."""

from __future__ import annotations

from bringup.lab.fabric_sim import ibnetdiscover_text, planned_cables, swap_switch_ends
from burnin.fabric.plan import parse_plan_yaml
from burnin.parsers.ibnetdiscover import parse_ibnetdiscover_ports

PLAN = "fat_tree: {scalable_units: 1, nodes_per_unit: 2, rails: 1, spines: 1}\n"


def test_every_cable_is_printed_from_both_ends():
    plan = parse_plan_yaml(PLAN, "p.yml")
    ports = parse_ibnetdiscover_ports(ibnetdiscover_text(plan, planned_cables(plan)))
    assert len(ports) == 2 * len(plan.links) == 6
    ca = next(p for p in ports if p.name == "gpu0001 mlx5_0")
    assert (ca.kind, ca.port, ca.width, ca.speed, ca.peer_name, ca.peer_port) == (
        "CA",
        1,
        "4x",
        "NDR",
        "su1-leaf0",
        1,
    )


def test_a_swap_and_a_missing_cable_show_in_the_text():
    plan = parse_plan_yaml(PLAN, "p.yml")
    cables = swap_switch_ends(planned_cables(plan), 0, 1)[:-1]  # nodes swapped, the uplink left out
    ports = parse_ibnetdiscover_ports(ibnetdiscover_text(plan, cables))
    ca = next(p for p in ports if p.name == "gpu0001 mlx5_0")
    assert ca.peer_port == 2
    down = [p for p in ports if not p.up]
    assert [(p.name, p.port) for p in down] == [("su1-leaf0", 3)]  # the spine is reached by no cable
