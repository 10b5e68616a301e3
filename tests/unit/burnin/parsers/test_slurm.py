"""Slurm parsers on real captures of Slurm 22.05.8 (tests/fixtures/slurm-capture.md)."""

from __future__ import annotations

from datetime import datetime

import pytest

from burnin.parsers import ParseError
from burnin.parsers.slurm import parse_scontrol_nodes, parse_scontrol_reservations, parse_sinfo_nodes

HEALTH_REASON = "bringup: gpu_inventory: 7 GPU(s) found, the profile has 8 (nvidia-smi says 7 attached)"
IB_REASON = "bringup: ib_ports: mlx5_6 port 1 is Down (Polling), the profile wants Active"


def test_sinfo_drained_draining_and_not_responding(sample):
    nodes = {n.name: n for n in parse_sinfo_nodes(sample("slurm_22_05_sinfo_N_state_user_time_reason.txt"))}
    assert list(nodes) == ["node01", "node02", "node03"]
    n1, n2, n3 = nodes["node01"], nodes["node02"], nodes["node03"]
    assert (n1.state, n1.drain, n1.reason, n1.user) == ("draining", True, HEALTH_REASON, "root")
    assert n1.since == datetime(2026, 11, 24, 6, 41, 4)
    assert (n2.state, n2.drain, n2.reason) == ("drained", True, "disk replaced, waiting on vendor")
    assert (n3.state, n3.drain, n3.flags, n3.reason) == ("drained", True, ("not_responding",), IB_REASON)
    assert n3.label == "drained*"


def test_sinfo_idle_node_has_no_reason_nor_setter(sample):
    nodes = {
        n.name: n for n in parse_sinfo_nodes(sample("slurm_22_05_sinfo_N_state_user_time_reason_idle.txt"))
    }
    n1 = nodes["node01"]
    assert (n1.state, n1.drain, n1.reason, n1.user, n1.since) == ("idle", False, "", "", None)
    assert n1.label == "idle"


def test_scontrol_states_reasons_and_setters(sample):
    nodes = {n.name: n for n in parse_scontrol_nodes(sample("slurm_22_05_scontrol_show_node_o.txt"))}
    n1, n2, n3 = nodes["node01"], nodes["node02"], nodes["node03"]
    assert (n1.state, n1.drain, n1.reason, n1.user) == ("allocated", True, HEALTH_REASON, "root")
    assert n1.since == datetime(2026, 11, 24, 6, 41, 4)
    assert (n2.state, n2.drain, n2.reason) == ("idle", True, "disk replaced, waiting on vendor")
    assert (n3.state, n3.drain, n3.flags) == ("down", True, ("not_responding",))
    assert n3.reason == IB_REASON and n3.label == "down+drain*"


def test_scontrol_idle_node(sample):
    (node,) = parse_scontrol_nodes(sample("slurm_22_05_scontrol_show_node_o_idle.txt"))
    assert (node.name, node.state, node.drain, node.flags, node.reason, node.since) == (
        "node01",
        "idle",
        False,
        (),
        "",
        None,
    )


def test_a_reason_holding_key_value_text_and_pipes_stays_whole(sample):
    """Reasons are free text: `x=y` in scontrol's, `|` in sinfo's (the last field) are the reason's."""
    line = sample("slurm_22_05_scontrol_show_node_o_idle.txt").rstrip("\n")
    text = line + " Reason=swap PSU=2 | ticket OS=9 [alice@2026-11-24T07:00:00]\n"
    (node,) = parse_scontrol_nodes(text)
    assert (node.reason, node.user) == ("swap PSU=2 | ticket OS=9", "alice")
    (node,) = parse_sinfo_nodes("node07|drained|alice(1000)|2026-11-24T07:00:00|a|b|c\n")
    assert (node.reason, node.user) == ("a|b|c", "alice")


def test_unknown_node_and_empty_output_are_no_nodes():
    assert parse_scontrol_nodes("Node nodeXX not found\n") == []
    assert parse_sinfo_nodes("") == []


@pytest.mark.parametrize(
    "text",
    [
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n",  # sinfo's default format
        "node01 idle\n",
        "node01|idle|Unknown|yesterday|some reason\n",  # not a Slurm time
        "node01|idle!!?|Unknown|Unknown|none\n",
    ],
)
def test_other_sinfo_shapes_are_refused(text):
    with pytest.raises(ParseError):
        parse_sinfo_nodes(text)


def test_other_scontrol_shapes_are_refused(sample):
    with pytest.raises(ParseError):
        parse_scontrol_nodes("NodeName=node01 Arch=x86_64\n")  # no State=
    with pytest.raises(ParseError):
        parse_scontrol_nodes("   NodeName=node01 State=IDLE\n")  # not -o (multi-line form)


def test_reservations_and_the_nodes_each_covers(sample):
    found = parse_scontrol_reservations(sample("slurm_22_05_scontrol_show_reservation_o.txt"))
    by = {r.name: r for r in found}
    assert list(by) == ["maint-cap", "maint-all", "later"]
    cap, everything, later = by["maint-cap"], by["maint-all"], by["later"]
    assert cap.nodes == ("node01", "node02", "node04")  # Nodes=node[01-02,04]
    assert (cap.state, cap.flags) == ("ACTIVE", ("MAINT", "IGNORE_JOBS", "SPEC_NODES"))
    assert everything.nodes == ("node01", "node02", "node03", "node04") and "ALL_NODES" in everything.flags
    assert (later.nodes, later.state) == (("node03",), "INACTIVE")


def test_no_reservation_and_lines_that_are_not_one():
    assert parse_scontrol_reservations("Reservation nosuch not found\n") == []
    assert parse_scontrol_reservations("No reservations in the system\n") == []
    assert parse_scontrol_reservations("ReservationName=lic Nodes=(null) State=ACTIVE\n")[0].nodes == ()
    for bad in (
        "   ReservationName=r Nodes=node01\n",  # not -o (multi-line form)
        "ReservationName=r StartTime=2026-11-24T15:06:22 State=ACTIVE\n",  # no Nodes=
        "ReservationName=r Nodes=node[01-\n",  # not a hostlist
    ):
        with pytest.raises(ParseError):
            parse_scontrol_reservations(bad)
