"""sysfs values: PCIe link speed and width (formats from sysfs_pci_link_speed_width_format_reference.txt),
AER counters, IB port counters."""

from __future__ import annotations

import pytest

from burnin.parsers import ParseError
from burnin.parsers.sysfs import (
    parse_aer_counters,
    parse_ib_sysfs,
    parse_link_speed,
    parse_link_width,
    speed_to_gen,
)


@pytest.mark.parametrize(
    ("text", "gts"),
    [
        ("32.0 GT/s PCIe\n", 32.0),
        ("32 GT/s\n", 32.0),
        ("2.5 GT/s PCIe", 2.5),
        ("16.0 GT/s PCIe", 16.0),
        ("64.0 GT/s PCIe", 64.0),
        ("Unknown\n", None),
    ],
)
def test_link_speed(text, gts):
    assert parse_link_speed(text) == gts


def test_link_speed_and_width_garbage():
    with pytest.raises(ParseError):
        parse_link_speed("fast")
    assert parse_link_width("16\n") == 16
    with pytest.raises(ParseError):
        parse_link_width("x16")


@pytest.mark.parametrize(
    ("gts", "gen"),
    [(2.5, 1), (5, 2), (5.0, 2), (8, 3), (16.0, 4), (32.0, 5), (64, 6), (3.0, None), (None, None)],
)
def test_speed_to_gen(gts, gen):
    assert speed_to_gen(gts) == gen


def test_speed_round_trip_from_reference(sample):
    ref = sample("sysfs_pci_link_speed_width_format_reference.txt")
    quoted = ["2.5 GT/s PCIe", "5.0 GT/s PCIe", "8.0 GT/s PCIe", "16.0 GT/s PCIe", "32.0 GT/s PCIe"]
    for value in quoted:
        assert f'"{value}"' in ref  # the kernel table quoted by the reference
    assert [speed_to_gen(parse_link_speed(v)) for v in quoted] == [1, 2, 3, 4, 5]


def test_aer_counters():
    text = (
        "RxErr 3\nBadTLP 1\nBadDLLP 0\nRollover 0\nTimeout 2\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\n"
        "TOTAL_ERR_COR 6\n"
    )
    counters = parse_aer_counters(text)
    assert counters["RxErr"] == 3 and counters["TOTAL_ERR_COR"] == 6 and len(counters) == 9
    fatal = parse_aer_counters("Undefined 0\nDLP 0\nSDES 1\nTLP 0\nCmpltTO 4\nTOTAL_ERR_FATAL 5\n")
    assert (fatal["SDES"], fatal["CmpltTO"], fatal["TOTAL_ERR_FATAL"]) == (1, 4, 5)
    with pytest.raises(ParseError):
        parse_aer_counters("cat: aer_dev_fatal: No such file or directory\n")


def test_ib_sysfs_counters(sample):
    devices = parse_ib_sysfs(sample("sysfs_class_infiniband_h100_mlx5_0_1_counters.txt"))
    assert sorted(devices) == ["mlx5_0", "mlx5_1"]
    p0, p1 = devices["mlx5_0"].ports[1], devices["mlx5_1"].ports[1]
    assert (p0.state, p0.state_code, p0.phys_state, p0.rate, p0.rate_text) == (
        "ACTIVE",
        4,
        "LinkUp",
        400,
        "4X NDR",
    )
    assert devices["mlx5_0"].fw_ver == "28.41.1000" and devices["mlx5_0"].hca_type == "MT4129"
    assert p1.counters["link_downed"] == 255  # saturated 8-bit counter
    assert p0.counters["link_downed"] == 0
    assert (p1.counters["port_rcv_errors"], p1.counters["excessive_buffer_overrun_errors"]) == (14, 15)
    assert p0.counters["port_xmit_wait"] == 2489603687


def test_ib_sysfs_grep_form():
    text = (
        "/sys/class/infiniband/mlx5_3/ports/1/state:1: DOWN\n"
        "/sys/class/infiniband/mlx5_3/ports/1/phys_state:3: Disabled\n"
        "/sys/class/infiniband/mlx5_3/ports/1/counters/symbol_error:7\n"
        "/sys/class/infiniband/mlx5_3/ports/1/hw_counters/rx_icrc_encapsulated:0\n"
    )
    port = parse_ib_sysfs(text)["mlx5_3"].ports[1]
    assert (port.state, port.state_code, port.phys_state) == ("DOWN", 1, "Disabled")
    assert port.counters == {"symbol_error": 7} and port.hw_counters == {"rx_icrc_encapsulated": 0}
