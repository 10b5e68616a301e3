"""ibnetdiscover -p parser on the real capture: cable peers, down ports, the switch port of an HCA."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.parsers import ParseError
from burnin.parsers.ibnetdiscover import guid_key, parse_ibnetdiscover_ports, switch_port_for


def test_ports_and_their_peers(sample):
    ports = parse_ibnetdiscover_ports(sample("ibnetdiscover_p_edr.txt"))
    assert len(ports) == 9
    ca = ports[0]
    assert (ca.kind, ca.lid, ca.port, ca.guid, ca.width, ca.speed) == (
        "CA",
        134,
        1,
        "0x7cfe9003003b4bde",
        "4x",
        "EDR",
    )
    assert (ca.peer_kind, ca.peer_lid, ca.peer_port, ca.peer_guid) == ("SW", 1719, 10, "0x7cfe9003009ce5b0")
    assert (ca.name, ca.peer_name, ca.up) == ("o0001 HCA-1", "ib-i1l1s01", True)
    down = next(p for p in ports if p.port == 37)
    assert (down.kind, down.speed, down.peer_guid, down.name, down.up) == (
        "SW",
        None,
        None,
        "ib-i4l1s01",
        False,
    )
    sdr = next(p for p in ports if p.speed == "SDR")  # trained at the lowest speed, no peer listed
    assert sdr.port == 80 and not sdr.up


def test_switch_port_of_an_hca_port(sample):
    ports = parse_ibnetdiscover_ports(sample("ibnetdiscover_p_edr.txt"))
    link = switch_port_for(ports, "0x7CFE9003003B4B96")  # GUIDs compare as numbers
    assert link is not None and (link.peer_name, link.peer_port) == ("ib-i1l1s01", 11)
    assert link.peer_text() == "switch ib-i1l1s01 (0x7cfe9003009ce5b0) port 11"
    assert switch_port_for(ports, "0x7cfe9003009ce5b0") is None  # a switch GUID is not an HCA port
    assert switch_port_for(ports, None) is None and switch_port_for(ports, "0xdead") is None
    assert guid_key("a088c20300e3142a") == guid_key("0xA088C20300E3142A") and guid_key("zz") is None


@pytest.mark.parametrize("text", ["", "CA 1 x\n", "#\n# Topology file\n"])
def test_not_ibnetdiscover(text):
    with pytest.raises(ParseError):
        parse_ibnetdiscover_ports(text)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_ports_or_a_parse_error(text):
    try:
        parse_ibnetdiscover_ports(text)
    except ParseError as exc:
        assert not exc.internal, exc


def test_hdr_leaf_and_spine_names_keep_their_text(sample):
    """A real HDR capture: names with stray spaces, down spine ports, an HCA named 'host mlx5_N'."""
    ports = parse_ibnetdiscover_ports(sample("ibnetdiscover_p_hdr_leaf_spine.txt"))
    assert len(ports) == 5
    worker = next(p for p in ports if p.name == "worker20 mlx5_3")
    assert (worker.speed, worker.peer_port, worker.peer_name) == ("HDR", 79, "5FB0405-leaf-IB01 ")
    assert [p.up for p in ports if p.kind == "SW"] == [False, False, True]


def test_a_node_description_without_quotes_is_read(sample):
    """Older infiniband-diags print a switch's description bare: the line is still a port."""
    ports = parse_ibnetdiscover_ports(sample("ibnetdiscover_p_qdr_unquoted_name.txt"))
    assert [(p.kind, p.lid, p.port, p.speed, p.name) for p in ports] == [
        ("SW", 479, 22, "QDR", "Infiniscale-IV Mellanox Technologies")
    ]
