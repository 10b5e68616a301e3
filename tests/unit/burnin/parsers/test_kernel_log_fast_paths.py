"""The kernel-log parser's fast paths read a line as its general path does: an ISO-stamped line
is read in one step only when nothing else follows the stamp, and a line is skipped by
``_events`` only when it holds none of the words its patterns need (an ASCII line: IGNORECASE
matches non-ASCII letters to ASCII ones, so those lines are never skipped)."""

from __future__ import annotations

from datetime import datetime, timezone

from burnin.parsers.kernel_log import (
    AerEvent,
    FallenOffBusEvent,
    LinkFlapEvent,
    SuspiciousEvent,
    XidEvent,
    parse_kernel_log,
    read_kernel_log,
)

STAMP = datetime(2024, 11, 15, 5, 39, 15, tzinfo=timezone.utc)


def test_an_iso_stamp_then_a_decode_prefix_keeps_both():
    line = "2024-11-15T05:39:15,491363+00:00 kern  :warn  : mlx5_core 0000:d2:00.0: cmd failed"
    (e,) = parse_kernel_log(line)
    assert isinstance(e, SuspiciousEvent)
    assert (e.timestamp, e.level, e.source) == ("2024-11-15T05:39:15,491363+00:00", "warn", None)
    assert e.wallclock == STAMP.replace(microsecond=491363)
    assert (e.message, e.bdf, e.matched) == ("mlx5_core 0000:d2:00.0: cmd failed", "0000:d2:00.0", "failed")


def test_an_iso_stamp_then_an_uptime_stamp_keeps_the_wallclock():
    (e,) = parse_kernel_log("2024-11-15T05:39:15+00:00 [  12.5] NVRM: Xid (PCI:0000:19:00): 31, fault")
    assert isinstance(e, XidEvent) and e.xid == 31
    assert (e.timestamp, e.uptime_s, e.wallclock) == ("12.5", 12.5, STAMP)


def test_kernel_colon_inside_an_iso_line_is_message_not_a_journald_tag():
    (e,) = parse_kernel_log("2024-11-15T05:39:15+00:00 NVRM: Xid (PCI:0000:19:00): 31, kernel: fault")
    assert isinstance(e, XidEvent)
    assert (e.timestamp, e.wallclock, e.source, e.detail) == (
        "2024-11-15T05:39:15+00:00",
        STAMP,
        None,
        "kernel: fault",
    )


def test_iso_lines_count_and_keep_their_stamp():
    text = (
        "2024-11-15T05:39:15+00:00 mlx5_core 0000:1a:00.0: Port module event: module 0, Cable plugged\n" * 2
    )
    count, events = read_kernel_log(text)
    assert count == 2 and len(events) == 2
    assert all(e.wallclock == STAMP and e.timestamp == "2024-11-15T05:39:15+00:00" for e in events)


def test_non_ascii_letters_that_ignorecase_folds_are_still_classified():
    (flap,) = parse_kernel_log("[    1.0] eth0: lin\u212a up")  # KELVIN SIGN matches 'k'
    assert isinstance(flap, LinkFlapEvent) and (flap.interface, flap.state) == ("eth0", "up")
    (fallen,) = parse_kernel_log("[    1.0] NVRM: GPU 0000:19:00.0 has fallen off the bu\u017f")  # long s
    assert isinstance(fallen, FallenOffBusEvent) and fallen.bdf == "0000:19:00.0"


def test_a_pcie_bus_error_line_without_aer_prefix_opens_a_report():
    text = (
        "[    1.0] pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n"
        "[    1.0] pcieport 0000:00:01.0:   device [8086:347a] error status/mask=00000001/00002000\n"
    )
    (e,) = parse_kernel_log(text)
    assert isinstance(e, AerEvent)
    assert (e.bdf, e.severity, e.error_type, e.status, e.mask) == (
        "0000:00:01.0",
        "corrected",
        "Physical Layer",
        "00000001",
        "00002000",
    )
