"""df / zpool / ofed_info (no real captures exist: realistic strings written here) and sysfs values."""

from __future__ import annotations

import pytest

from burnin.parsers import ParseError
from burnin.parsers.host import parse_df, parse_ofed_version, parse_zpool_status_x
from burnin.parsers.sysfs import (
    parse_aer_counters,
    parse_ib_sysfs,
    parse_link_speed,
    parse_link_width,
    speed_to_gen,
)

DF = """Filesystem     1024-blocks       Used  Available Capacity Mounted on
/dev/nvme0n1p2   959862832  123456789  787564321      14% /
tmpfs             65842216          0   65842216       0% /dev/shm
/dev/md0        7501476528 7126402704  375073824      95% /raid
server:/export   104857600   52428800   52428800      50% /mnt/shared data
"""


def test_df_posix():
    entries = parse_df(DF)
    assert [e.mount_point for e in entries] == ["/", "/dev/shm", "/raid", "/mnt/shared data"]
    raid = entries[2]
    assert (raid.filesystem, raid.size_kib, raid.used_kib, raid.avail_kib, raid.use_percent) == (
        "/dev/md0",
        7501476528,
        7126402704,
        375073824,
        95,
    )


def test_df_512_blocks_and_dash_percent():
    text = "Filesystem 512-blocks Used Available Capacity Mounted on\nproc 0 0 0 - /proc\n/dev/sda1 2000 1000 1000 50% /boot\n"
    proc, boot = parse_df(text)
    assert proc.use_percent is None
    assert (boot.size_kib, boot.used_kib) == (1000, 500)


def test_df_garbage():
    with pytest.raises(ParseError):
        parse_df("df: /raid: Transport endpoint is not connected\n")


ZPOOL_DEGRADED = """  pool: tank
 state: DEGRADED
status: One or more devices could not be opened.  Sufficient replicas exist for
\tthe pool to continue functioning in a degraded state.
action: Attach the missing device and online it using 'zpool online'.
   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-2Q
  scan: scrub repaired 0B in 00:00:01 with 0 errors on Sun Mar 10 00:24:01 2024
config:

\tNAME        STATE     READ WRITE CKSUM
\ttank        DEGRADED     0     0     0
\t  mirror-0  DEGRADED     0     0     0
\t    sda     ONLINE       0     0     0
\t    sdb     UNAVAIL      0     0     0  cannot open

errors: No known data errors
"""


def test_zpool_degraded():
    z = parse_zpool_status_x(ZPOOL_DEGRADED)
    assert not z.all_healthy and not z.no_pools
    (pool,) = z.pools
    assert (pool.name, pool.state, pool.errors) == ("tank", "DEGRADED", "No known data errors")
    assert pool.status.endswith("continue functioning in a degraded state.")
    assert [(v.name, v.state, v.depth) for v in pool.vdevs] == [
        ("tank", "DEGRADED", 0),
        ("mirror-0", "DEGRADED", 1),
        ("sda", "ONLINE", 2),
        ("sdb", "UNAVAIL", 2),
    ]
    assert pool.vdevs[3].note == "cannot open"


def test_zpool_healthy_none_and_errors():
    assert parse_zpool_status_x("all pools are healthy\n").all_healthy
    assert parse_zpool_status_x("no pools available\n").no_pools
    text = ZPOOL_DEGRADED.replace("No known data errors", "2 data errors, use '-v' for a list").replace(
        "sda     ONLINE       0     0     0", "sda     ONLINE       0     0    12"
    )
    pool = parse_zpool_status_x(text).pools[0]
    assert pool.errors == "2 data errors, use '-v' for a list"
    assert pool.vdevs[2].checksum_errors == 12
    with pytest.raises(ParseError):
        parse_zpool_status_x("zpool: command not found\n")


@pytest.mark.parametrize(
    ("text", "version", "flavour"),
    [
        ("MLNX_OFED_LINUX-24.04-0.6.6.0:\n", "24.04-0.6.6.0", "mlnx_ofed"),
        ("MLNX_OFED_LINUX-5.8-2.0.3.0:", "5.8-2.0.3.0", "mlnx_ofed"),
        ("OFED-internal-24.04-0.6.6:\n", "24.04-0.6.6", "doca_ofed"),
    ],
)
def test_ofed_version(text, version, flavour):
    v = parse_ofed_version(text)
    assert (v.version, v.flavour) == (version, flavour)


def test_ofed_missing():
    with pytest.raises(ParseError):
        parse_ofed_version("bash: ofed_info: command not found\n")


# --- sysfs (formats from sysfs_pci_link_speed_width_format_reference.txt) -----------------------


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
