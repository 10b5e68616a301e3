"""The InfiniBand and fabric tools are listed among the others, each once (burnin/evaluate/markers_fabric.py)."""

from __future__ import annotations

from burnin.evaluate.markers import TOOLS
from burnin.evaluate.markers_fabric import FABRIC_TOOLS
from burnin.evaluate.recognise import recognise


def test_every_fabric_tool_is_one_of_the_tools_once():
    names = [t.name for t in TOOLS]
    assert {t.name for t in FABRIC_TOOLS} <= set(names)
    assert len(names) == len(set(names))


def test_an_ibstat_port_block_is_recognised_as_ibstat():
    text = (
        "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n\t\tRate: 400\n"
    )
    assert recognise(text).tool.name == "ibstat"
