"""Kernel log classification on every dmesg_* sample (tests/fixtures/samples/index.tsv)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

import pytest

from burnin.parsers import ParseError
from burnin.parsers.kernel_log import (
    AerEvent,
    FallenOffBusEvent,
    LinkFlapEvent,
    ModuleEvent,
    PcieLimitedEvent,
    SuspiciousEvent,
    SxidEvent,
    XidEvent,
    parse_kernel_log,
)
from burnin.parsers.xid_catalog import XID_CATALOG
from tests.unit.burnin.parsers._samples import names_expecting_misses


def kinds(events) -> Counter:
    return Counter(e.kind for e in events)


def of(events, cls):
    return [e for e in events if isinstance(e, cls)]


@pytest.mark.parametrize("name", names_expecting_misses("dmesg_", "PASS"))
def test_every_sample_parses_into_typed_events(sample, name):
    events = parse_kernel_log(sample(name))
    assert events, name
    for e in events:
        assert e.kind in {
            "xid",
            "sxid",
            "aer",
            "fallen_off_bus",
            "pcie_limited",
            "link_flap",
            "module_event",
            "host_error",
            "suspicious",
        }
        assert e.raw and e.message


def test_xid48_63_94_iso_time(sample):
    events = parse_kernel_log(sample("dmesg_xid48_63_94_dbe_row_remap_h100.txt"))
    xids = of(events, XidEvent)
    assert [x.xid for x in xids] == [48, 63] + [94] * 9
    assert {x.bdf for x in xids} == {"0000:19:00.0"}
    assert xids[0].wallclock == datetime(2024, 11, 15, 12, 2, 3, 470068, tzinfo=timezone.utc)
    assert "double bit error (DBE)" in xids[0].detail
    assert xids[0].pid is None and xids[0].process is None  # pid='<unknown>', name=<unknown>
    assert (xids[3].pid, xids[3].process, xids[3].detail) == (1248209, "python3.10", "Ch 00000008")
    assert xids[1].info.mnemonic == "INFOROM_DRAM_RETIREMENT_EVENT"
    # the nvidia-peermem ERROR noise is kept as 'suspicious', not mistaken for Xids
    assert kinds(events)["suspicious"] == 30
    assert all("nvidia-peermem" in e.message for e in of(events, SuspiciousEvent))


def test_xid13_43_decode_prefix(sample):
    events = parse_kernel_log(sample("dmesg_xid13_43_app_fault_excerpt.txt"))
    assert kinds(events) == Counter({"xid": 32})
    assert Counter(e.xid for e in events) == Counter({13: 30, 43: 2})
    assert {e.level for e in events} == {"warn"}
    x43 = [e for e in events if e.xid == 43]
    assert [(e.pid, e.process) for e in x43] == [(2815167, "pt_main_thread"), (2823801, "pt_main_thread")]
    assert events[0].detail == "Graphics SM Warp Exception on (GPC 8, TPC 5, SM 0): Out Of Range Address"
    assert XID_CATALOG[13].bucket == "RESTART_APP"


def test_xid119_dmesg_T_with_rpc_history_and_call_trace(sample):
    events = parse_kernel_log(sample("dmesg_xid119_gsp_rpc_timeout_h100.txt"))
    xids = of(events, XidEvent)
    assert [x.xid for x in xids] == [119] * 5
    assert xids[0].bdf == "0000:9b:00.0"
    assert xids[0].timestamp == "Sun Feb 23 16:24:18 2025"
    assert xids[0].wallclock == datetime(2025, 2, 23, 16, 24, 18)
    assert [x.process for x in xids] == ["nvidia-smi", "nvidia-smi", "nvidia-smi", "cache_mgr_main", "gpud"]
    assert xids[0].info.bucket == "RESET_GPU"
    suspicious = of(events, SuspiciousEvent)
    assert [s.matched for s in suspicious] == [
        "Call Trace",
        "error",
    ]  # + 'Rate limiting GSP RPC error prints'


def test_xid45_journald_caused_by_previous(sample):
    events = parse_kernel_log(sample("dmesg_xid45_caused_by_previous_xid145_149.txt"))
    assert len(events) == 7 and all(isinstance(e, XidEvent) for e in events)
    assert {e.source for e in events} == {"kernel"}
    assert [(e.bdf, e.xid, e.caused_by_xid, e.root_xid) for e in events[:2]] == [
        ("0000:dc:00.0", 45, 149, 149),
        ("0000:ed:00.0", 45, 145, 145),
    ]
    assert Counter(e.root_xid for e in events) == Counter({145: 5, 149: 2})
    assert XID_CATALOG[149].bucket == "WORKFLOW_NVLINK5_ERR"


def test_xid79_with_crashdump_continuation(sample):
    events = parse_kernel_log(sample("dmesg_xid79_fallen_off_bus_crashdump.txt"))
    assert kinds(events) == Counter({"xid": 1, "fallen_off_bus": 1})
    xid = of(events, XidEvent)[0]
    assert (xid.xid, xid.bdf, xid.pid, xid.fallen_off_bus) == (79, "0000:09:00.0", 0, True)
    assert xid.uptime_s == pytest.approx(1084456.074562)
    assert of(events, FallenOffBusEvent)[0].bdf == "0000:09:00.0"
    assert XID_CATALOG[79].bucket == "RESTART_BM"


def test_fallen_off_bus_without_xid_multiline(sample):
    events = parse_kernel_log(sample("dmesg_gpu_fallen_off_bus_at_probe_no_xid.txt"))
    fob = of(events, FallenOffBusEvent)
    assert len(fob) == 1 and not of(events, XidEvent)
    assert fob[0].bdf == "0000:b3:00.0"
    assert fob[0].message == (
        "NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has "
        "fallen off the bus and is not responding to commands."
    )
    assert fob[0].raw.count("\n") == 2  # three physical lines
    assert [s.matched for s in of(events, SuspiciousEvent)] == ["failed"]  # the probe routine failed


def test_aer_surprise_down_then_xid79(sample):
    events = parse_kernel_log(sample("dmesg_aer_surprise_down_then_xid79_fallen_off_bus.txt"))
    assert [e.kind for e in events] == ["aer", "aer", "xid"]
    corrected, fatal = of(events, AerEvent)
    assert (corrected.bdf, corrected.severity, corrected.error_type) == (
        "0000:00:02.0",
        "corrected",
        "Data Link Layer",
    )
    assert corrected.error_names == ("Replay Timer Timeout",)
    assert (corrected.status, corrected.mask) == ("00001000", "00002000")
    assert (fatal.severity, fatal.error_type, fatal.error_names) == (
        "fatal",
        "Transaction Layer",
        ("Surprise Down Error",),
    )
    assert fatal.raw.count("\n") == 3  # header + PCIe Bus Error + status + error bit lines merged
    assert (events[2].xid, events[2].bdf) == (79, "0000:02:00.0")


def test_aer_uncorrected_fatal_relative_stamps(sample):
    events = parse_kernel_log(sample("dmesg_aer_uncorrected_fatal_cmpltto_recovery_failed.txt"))
    aers = of(events, AerEvent)
    assert len(aers) == len(events) == 8
    fatal = [a for a in aers if a.severity == "fatal"]
    assert len(fatal) == 1
    assert fatal[0].bdf == "0000:00:03.0"
    assert fatal[0].error_names == ("SDES", "CmpltTO")
    assert fatal[0].timestamp == "+0.000001"
    assert [a.detail for a in aers if a.detail == "device recovery failed"] == ["device recovery failed"] * 2
    assert {a.bdf for a in aers if a.detail.startswith("can't recover")} == {"0000:03:00.0", "0000:03:00.1"}


def test_sxid_triplets(sample):
    events = parse_kernel_log(sample("dmesg_sxid_22013_nonfatal_nvswitch_h100.txt"))
    sxids = of(events, SxidEvent)
    assert len(sxids) == 8 and len(events) == 8  # the 'loading NVIDIA ... Module' banner is no event
    assert {(s.switch, s.bdf, s.sxid) for s in sxids} == {("nvidia-nvswitch3", "0000:04:00.0", 22013)}
    flagged = [s for s in sxids if s.fatal is not None]
    assert [(s.fatal, s.link) for s in flagged] == [(False, 44), (False, 45), (False, 46)]
    assert [s.severity for s in sxids if s.severity is not None] == [0, 0]


def test_imbue_lines(sample):
    events = parse_kernel_log(sample("dmesg_imbue_doctest_lines_xid94_xid64_sxid_pcie_limited.txt"))
    assert kinds(events) == Counter({"xid": 2, "sxid": 1, "pcie_limited": 3})
    x94, x64 = of(events, XidEvent)
    assert (x94.xid, x94.bdf, x94.pid, x94.process) == (94, "0000:0f:00.0", 2503421, "python3")
    assert x64.xid == 64 and "All reserved rows for bank are remapped" in x64.detail
    assert x64.info.bucket == "RESET_GPU"
    (sx,) = of(events, SxidEvent)
    assert (sx.sxid, sx.fatal, sx.link, sx.switch, sx.bdf) == (
        12028,
        False,
        61,
        "nvidia-nvswitch2",
        "0000:85:00.0",
    )
    nic = of(events, PcieLimitedEvent)[0]
    assert (nic.bdf, nic.driver, nic.speed_gts, nic.width) == ("0000:9c:00.0", "mlx5_core", 32.0, 8)
    assert (nic.limiting_bdf, nic.capable_speed_gts, nic.capable_width) == ("0000:97:01.0", 32.0, 16)
    # the doctest artefact after the closing parenthesis does not hide the event
    assert of(events, PcieLimitedEvent)[1].capable_width == 2


def test_pcie_limited_variants(sample):
    events = parse_kernel_log(sample("dmesg_pcie_bandwidth_limited_by_x4_x8.txt"))
    limited = of(events, PcieLimitedEvent)
    assert len(events) == len(limited) == 4  # healthy 'available PCIe bandwidth (...)' lines are no events
    assert [(e.bdf, e.width, e.capable_width) for e in limited] == [
        ("0000:9c:00.0", 8, 16),
        ("0000:56:00.0", 4, 8),
        (None, 4, 16),  # wrapped paste without the device prefix, '(capable ...' joined back
        ("0000:02:00.0", 4, 8),
    ]
    assert limited[2].limiting_bdf == "0000:00:03.3" and limited[2].capable_gbps == pytest.approx(252.048)
    assert limited[3].source == "kernel" and limited[3].timestamp == "Oct 24 19:36:33"


def test_pcie_limited_old_kernel_format():
    line = "[    1.5] pci 0000:3b:00.0: 31.504 Gb/s available PCIe bandwidth, limited by 8 GT/s x4 link at 0000:3a:00.0 (capable of 126.016 Gb/s with 8 GT/s x16 link)"  # noqa: E501
    (e,) = parse_kernel_log(line)
    assert isinstance(e, PcieLimitedEvent)
    assert (e.speed_gts, e.width, e.capable_speed_gts, e.capable_width) == (8.0, 4, 8.0, 16)


def test_boot_log_healthy_lines_are_not_events(sample):
    events = parse_kernel_log(sample("dmesg_boot_mlx5_pcie_bw_nvswitch_h100.txt"))
    assert not of(events, PcieLimitedEvent)
    modules = of(events, ModuleEvent)
    assert len(events) == len(modules) == 12
    assert Counter(m.status for m in modules) == Counter({"Cable plugged": 10, "Cable unplugged": 2})
    assert {m.bdf for m in modules if m.status == "Cable unplugged"} == {"0000:1b:00.1", "0000:9d:00.1"}
    assert all(m.level == "info" and not m.error for m in modules)


def test_link_flaps_and_module_events(sample):
    events = parse_kernel_log(sample("dmesg_mlx5_ib_link_flap_and_module_events.txt"))
    flaps = of(events, LinkFlapEvent)
    ib6 = [f for f in flaps if f.interface == "ib6"]
    assert Counter(f.state for f in ib6) == Counter({"down": 6, "up": 6})
    assert {f.source for f in ib6} == {"systemd-networkd[5398]"}
    assert [(f.interface, f.state, f.bdf) for f in flaps if f.interface != "ib6"] == [
        ("enp1s0f0np0", "up", "0000:01:00.0")
    ]
    modules = of(events, ModuleEvent)
    assert [(m.bdf, m.module, m.status) for m in modules] == [
        ("0000:0b:00.1", 1, "Cable unplugged"),  # the mail line-wrap before 'unplugged' is joined back
        ("0000:01:00.0", 0, "Cable plugged"),
        ("0000:63:00.1", 1, "Cable unplugged"),
    ]
    failed = [s for s in of(events, SuspiciousEvent) if s.bdf == "0000:d2:00.0"]
    assert failed and failed[0].matched == "failed" and failed[0].source == "kernel"
    assert failed[0].uptime_s == pytest.approx(123.456795)


def test_module_event_error_variant():
    line = "[ 77.1] mlx5_core 0000:d2:00.0: Port module event[error]: module 3, Cable error, High Temperature"
    (e,) = parse_kernel_log(line)
    assert isinstance(e, ModuleEvent)
    assert (e.module, e.status, e.error, e.detail) == (3, "Cable error", True, "High Temperature")


@pytest.mark.parametrize(
    ("line", "timestamp", "level"),
    [
        ("<3>[  12.5] NVRM: Xid (PCI:0000:19:00): 31, pid=7, name=x, fault", "12.5", "err"),
        ("kern  :err   : [  12.5] NVRM: Xid (PCI:0000:19:00): 31, fault", "12.5", "err"),
        ("[Jan21 10:14] NVRM: Xid (PCI:0000:19:00): 31, fault", "Jan21 10:14", None),
        ("NVRM: Xid (PCI:0000:19:00): 31, fault", None, None),
        (
            "2024-11-15T05:39:15+0000 gpu01 kernel: NVRM: Xid (PCI:0000:19:00): 31, fault",
            "2024-11-15T05:39:15+0000",
            None,
        ),
    ],
)
def test_prefix_styles(line, timestamp, level):
    (e,) = parse_kernel_log(line)
    assert isinstance(e, XidEvent) and e.xid == 31 and e.bdf == "0000:19:00.0"
    assert (e.timestamp, e.level) == (timestamp, level)


def test_clean_and_comment_only_logs_have_no_events():
    assert parse_kernel_log("") == []
    assert parse_kernel_log("# a comment\n[    0.000000] Linux version 6.8.0\n") == []


def test_non_text_is_a_parse_error():
    with pytest.raises(ParseError):
        parse_kernel_log(b"NVRM: Xid")  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["<0>\n", "<4>\n<6>\n", "[    1.000000]\n", "kernel:\n"])
def test_prefixes_with_no_message_are_not_a_kernel_log(text: str) -> None:
    # Found by the evaluate property test: '<0>' alone was counted as one kernel-log line, so
    # the kernel_log check judged it a clean log (PASS). A record is a prefix AND a message.
    from burnin.parsers.kernel_log import require_kernel_log

    with pytest.raises(ParseError, match="not a kernel log"):
        require_kernel_log(text)


def test_an_empty_record_among_real_ones_is_still_a_log() -> None:
    from burnin.parsers.kernel_log import require_kernel_log

    text = "[    0.000000] Linux version 6.1.0\n[    0.000001] \n[    0.000002] Command line: ro\n"
    assert require_kernel_log(text) == 2


def test_nvlink5_xids_carry_their_printed_severity(sample):
    events = parse_kernel_log(sample("dmesg_blackwell_xid145_149_nvlink5_fatal_PARTIAL.txt"))
    assert [(e.xid, e.bdf, e.nvlink_unit, e.fatal) for e in of(events, XidEvent)] == [
        (145, "0008:01:00.0", "RLW_SRC_TRACK", False),
        (149, "0008:01:00.0", "NETIR", True),
        (149, "0008:01:00.0", "NETIR_LINK_EVT", True),
    ]
    other = parse_kernel_log("NVRM: Xid (PCI:0000:9b:00): 94, pid=1, name=python3, Contained: SM (0x1).\n")
    assert [(e.nvlink_unit, e.fatal) for e in other] == [(None, None)]


def test_nvlink5_xid_with_pid_and_name_keeps_its_unit(sample):
    events = of(parse_kernel_log(sample("dmesg_blackwell_xid145_149_nvlink5_nonfatal_PARTIAL.txt")), XidEvent)
    assert events[1].process == "ray::WorkerDict" and events[1].nvlink_unit == "RLW_RXPIPE"
    assert {e.fatal for e in events} == {False}


def test_an_nvlink5_message_ending_inside_its_severity_word_says_which_word():
    head = "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE "
    assert [e.fatal for e in parse_kernel_log(head + "Non")] == [False]
    assert [e.fatal for e in parse_kernel_log(head + "Fa")] == [True]
    assert [(e.nvlink_unit, e.fatal) for e in parse_kernel_log(head.rstrip())] == [(None, None)]
