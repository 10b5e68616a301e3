"""perfquery parser on the real captures (tests/fixtures/samples/index.tsv), sysfs counter names,
and saturation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.parsers import ParseError
from burnin.parsers.perfquery import (
    COUNTER_MAX,
    ERROR_COUNTERS,
    counters_from_sysfs,
    is_saturated,
    parse_perfquery,
)
from burnin.parsers.sysfs import parse_ib_sysfs


def test_extended_counters_two_ports(sample):
    ports = parse_perfquery(sample("perfquery_x_clean_2ports.txt"))
    assert [(p.lid, p.port, p.extended, p.cap_mask) for p in ports] == [
        (1719, 1, True, "0x5300"),
        (1719, 2, True, "0x5300"),
    ]
    first = ports[0].counters
    assert len(first) == 25 and first["PortXmitData"] == 36298026860928 and first["CounterSelect"] == 0
    assert {name: first[name] for name in ERROR_COUNTERS} == dict.fromkeys(ERROR_COUNTERS, 0)
    assert first["PortXmitWait"] == 22730501  # congestion, not an error: not among ERROR_COUNTERS
    assert "PortXmitWait" not in ERROR_COUNTERS


def test_error_counters_of_a_switch_port(sample):
    (port,) = parse_perfquery(sample("perfquery_x_errors_switch.txt"))
    assert (port.lid, port.port) == (2052, 1)
    errors = {n: port.counters[n] for n in ERROR_COUNTERS if port.counters[n]}
    assert errors == {"LinkDownedCounter": 1, "PortXmitDiscards": 20046}
    assert port.counters["PortRcvSwitchRelayErrors"] == 7


def test_other_counter_sets_are_read_by_their_header(sample):
    (port,) = parse_perfquery(sample("perfquery_rcv_error_details.txt"))
    assert (port.lid, port.port, port.extended) == (1719, 1, False)
    assert port.counters["PortLocalPhysicalErrors"] == 0 and len(port.counters) == 8


def test_sysfs_counters_get_perfquery_names_and_saturation_shows(sample):
    devices = parse_ib_sysfs(sample("sysfs_class_infiniband_h100_mlx5_0_1_counters.txt"))
    counters = counters_from_sysfs(devices["mlx5_1"].ports[1].counters)
    assert counters["LinkDownedCounter"] == 255 and counters["PortRcvErrors"] == 14
    assert counters["ExcessiveBufferOverrunErrors"] == 15
    assert set(ERROR_COUNTERS) <= set(counters)
    # 8-bit link_downed at 255 and 4-bit excessive_buffer_overrun at 15: "at least", not a number
    assert is_saturated("LinkDownedCounter", counters["LinkDownedCounter"])
    assert is_saturated("ExcessiveBufferOverrunErrors", counters["ExcessiveBufferOverrunErrors"])
    assert not is_saturated("PortRcvErrors", counters["PortRcvErrors"])
    assert not is_saturated("LinkDownedCounter", 254)
    assert is_saturated("PortXmitData", 2**64 - 1) and not is_saturated("PortXmitData", 2**40)


def test_counter_widths_are_the_iba_ones():
    assert COUNTER_MAX["SymbolErrorCounter"] == 65535 and COUNTER_MAX["LinkDownedCounter"] == 255
    assert COUNTER_MAX["LocalLinkIntegrityErrors"] == 15
    assert set(ERROR_COUNTERS) <= set(COUNTER_MAX)


def test_headerless_block_takes_its_port_from_portselect():
    (port,) = parse_perfquery("PortSelect:......................3\nSymbolErrorCounter:..............7\n")
    assert port.port == 3 and port.lid is None and port.counters["SymbolErrorCounter"] == 7


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ibwarn: [1234] mad_rpc: _do_madrpc failed; dport (Lid 12)\n",
        "# Port counters: Lid 1 port 1\n",
        "hello",
    ],
)
def test_no_counters_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_perfquery(text)


def test_a_failed_query_names_the_tool_warning():
    with pytest.raises(ParseError, match="ibwarn"):
        parse_perfquery("ibwarn: [1234] mad_rpc: _do_madrpc failed; dport (Lid 12)\n")


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_counters_or_a_parse_error(text):
    try:
        parse_perfquery(text)
    except ParseError as exc:
        assert not exc.internal, exc
