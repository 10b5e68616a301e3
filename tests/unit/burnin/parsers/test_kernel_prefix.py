"""A kernel-log line's prefixes read off: /dev/kmsg records, locale month names, stamps no list
holds, and what is not a kernel line at all."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.parsers.kernel_prefix import _read_prefixes, is_continuation, is_kmsg_dictionary, strip_prefixes


def test_a_kmsg_record_gives_level_and_uptime() -> None:
    entry, found = strip_prefixes("3,3964,206764307,-;nvme nvme0: controller is down; will reset")
    assert found
    assert (entry.level, entry.uptime_s, entry.timestamp) == ("err", 206.764307, "206.764307")
    assert entry.message == "nvme nvme0: controller is down; will reset"


def test_a_kmsg_level_is_the_priority_modulo_eight() -> None:
    entry, _ = strip_prefixes("12,7,1000,-;systemd[1]: hello")  # facility 1 (user), level 4
    assert entry.level == "warn"


@pytest.mark.parametrize("month", ["Mär", "févr.", "janv.", "ene", "dic", "мар", "Okt", "Dez"])
def test_a_syslog_stamp_in_any_locale_is_a_prefix(month: str) -> None:
    entry, found = strip_prefixes(f"{month}  2 10:00:01 gpu01 kernel: EDAC MC0: 1 UE error")
    assert found and entry.source == "kernel"
    assert entry.message == "EDAC MC0: 1 UE error"
    assert entry.timestamp == f"{month}  2 10:00:01"


def test_a_short_iso_zone_without_colon_is_read() -> None:
    entry, _ = strip_prefixes("2024-01-01T00:00:00+0100 gpu01 kernel: mce: [Hardware Error]: x")
    assert entry.base()["wallclock"] == datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=1)))


def test_dmesg_T_in_another_locale_keeps_the_stamp_but_no_wallclock() -> None:
    entry, found = strip_prefixes("[Di Mär 12 10:00:01 2024] NVRM: Xid (PCI:0000:3b:00): 79, x")
    assert found and entry.message.startswith("NVRM: Xid")
    assert entry.timestamp == "Di Mär 12 10:00:01 2024" and entry.base()["wallclock"] is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("2024/01/01 00:00:00 gpu01 kernel: NVRM: x", "NVRM: x"),
        ("1704067200.123 gpu01 NVRM: x", "NVRM: x"),
        (
            "gpu01 | nvme nvme3: Removing after probe failure status: -19",
            "nvme nvme3: Removing after probe failure status: -19",
        ),
        ("EDAC MC1: 1 CE memory read error", "EDAC MC1: 1 CE memory read error"),
        (
            "mlx5_core 0000:08:00.0: print_health_info:425:(pid 912): x",
            "mlx5_core 0000:08:00.0: print_health_info:425:(pid 912): x",
        ),
    ],
)
def test_a_kernel_message_after_an_unknown_stamp_or_none_is_a_kernel_line(line: str, message: str) -> None:
    entry, found = strip_prefixes(line)
    assert found and entry.message == message


@pytest.mark.parametrize(
    "line",
    [
        "GPU 0000:3b:00.0 temperature 40 C",
        "hello world",
        "    NVRM: GPU at PCI:0000:3b:00: GPU-1234",  # indented: the line before it continues
        "Attached GPUs : 8",
    ],
)
def test_other_text_is_not_a_kernel_line(line: str) -> None:
    assert not strip_prefixes(line)[1]


def test_kmsg_dictionary_lines_continue_their_record() -> None:
    assert is_continuation(" SUBSYSTEM=pci") and is_kmsg_dictionary(" SUBSYSTEM=pci")
    assert is_kmsg_dictionary(" DEVICE=+pci:0000:3b:00.0")
    assert not is_kmsg_dictionary("  NVRM: GPU at PCI:0000:3b:00")


PIECES = [
    "kern  :info  : ", "daemon:warn: ", "<4>", "2025-01-17T15:36:26,128279+00:00 ", "2024-01-01 00:00:00 ",
    "[  12.345678] ", "[ +0.000844] ", "[Mon Jan 27 19:27:15 2020] ", "Feb 23 03:28:16 ", "gpu01 ", "kernel: ",
    "tag[12]: ", "6,3964,206764307,-;", "NVRM: Xid (PCI:0000:3b:00): 79, x", "mlx5_core 0000:1a:00.0: y",
    "févr. 12 ", "]: ", " ", "x", "k",
]  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=6).map("".join))
def test_the_one_step_reading_of_dmesg_lines_is_the_general_one(line: str) -> None:
    assert strip_prefixes(line) == _read_prefixes(line)


def test_the_one_step_reading_is_taken_and_can_differ_from_a_wrong_one() -> None:
    line = "kern  :info  : 2025-01-17T15:36:26,128279+00:00 mlx5_core 0000:1a:00.0: x"
    entry, _ = strip_prefixes(line)
    assert (entry.level, entry.timestamp, entry.message) == (
        "info",
        "2025-01-17T15:36:26,128279+00:00",
        "mlx5_core 0000:1a:00.0: x",
    )
    # an ISO stamp then an uptime stamp: the loop reads both (the one step alone would stop early)
    assert strip_prefixes("2024-11-15T05:39:15+00:00 [  12.5] NVRM: x")[0].uptime_s == 12.5
