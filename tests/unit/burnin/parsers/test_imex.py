"""burnin/parsers/imex.py: `nvidia-imex-ctl -N` behind the check's `IMEX daemon:` line."""

from __future__ import annotations

import pytest

from burnin.parsers.errors import ParseError
from burnin.parsers.imex import parse_imex_domain
from tests.unit.burnin.parsers._samples import load

UP = load("nvidia_imex_ctl_N_18_trays_up_DERIVED.txt")
NODE7_DOWN = load("nvidia_imex_ctl_N_18_trays_node7_down_DERIVED.txt")


def test_a_whole_rack_is_18_ready_nodes_all_connected_and_up():
    domain = parse_imex_domain(UP)
    assert domain.daemon == "active" and domain.domain_state == "UP"
    assert [n.index for n in domain.nodes] == list(range(18))
    assert {n.state for n in domain.nodes} == {"READY"} and domain.nodes[0].version == "570.172"
    assert len(domain.links) == 18 * 18 and set(domain.links.values()) == {"C"}


def test_a_node_down_keeps_its_state_and_its_row_and_column():
    domain = parse_imex_domain(NODE7_DOWN)
    assert domain.domain_state == "DEGRADED"
    assert domain.node(7).state == "UNAVAILABLE" and domain.node(7).address == "10.20.3.18"
    assert domain.links[(7, 0)] == "I" and domain.links[(0, 7)] == "N" and domain.links[(0, 1)] == "C"


def test_node_lines_without_a_version_as_older_daemons_print_them():
    text = "Nodes:\nNode #0   - 10.136.206.48   - READY\n\n Nodes From\\To  0\n       0        C\nDomain State: UP\n"
    domain = parse_imex_domain(text)
    assert domain.nodes[0].version is None and domain.links == {(0, 0): "C"} and domain.daemon is None


def test_a_cut_output_without_its_domain_state_is_refused():
    with pytest.raises(ParseError, match="Domain State"):
        parse_imex_domain(UP.split("Domain State")[0])


def test_a_matrix_row_with_a_cell_missing_is_refused():
    with pytest.raises(ParseError, match="cells"):
        parse_imex_domain(UP.replace("       3        C   C", "       3        C", 1))


def test_text_that_is_no_imex_output_is_refused():
    with pytest.raises(ParseError):
        parse_imex_domain("nvidia-imex-ctl: command not found\n")
