"""df / zpool / ofed_info (no real captures exist: realistic strings written here)."""

from __future__ import annotations

import pytest

from burnin.parsers import ParseError
from burnin.parsers.host import parse_df, parse_ofed_version, parse_zpool_status_x

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
