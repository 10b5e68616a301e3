"""Host basics: ``df -P -k``, ``zpool status -x``, ``ofed_info -s``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from burnin.parsers._common import parser, split_lines
from burnin.parsers.errors import ParseError


@dataclass(frozen=True)
class DfEntry:
    filesystem: str
    size_kib: int
    used_kib: int
    avail_kib: int
    use_percent: int | None  # None when df prints '-'
    mount_point: str  # may contain spaces


_DF_HEADER_RE = re.compile(r"^Filesystem\s+(?P<unit>\d+[KMG]?|\d+-blocks|1K-blocks|Size)", re.I)
_DF_ROW_RE = re.compile(
    r"^(?P<fs>\S+)\s+(?P<size>\d+)\s+(?P<used>\d+)\s+(?P<avail>\d+)\s+(?P<pct>\d+%|-)\s+(?P<mnt>/.*)$"
)


@parser
def parse_df(text: str) -> list[DfEntry]:
    """``df -P -k`` (POSIX format, 1024-byte blocks). A ``512-blocks`` header (``df -P``
    without ``-k``) is converted to KiB. No data row at all is a ParseError."""
    factor = 1.0
    entries: list[DfEntry] = []
    for line in split_lines(text):
        if m := _DF_HEADER_RE.match(line):
            unit = m.group("unit").lower()
            factor = 0.5 if unit.startswith("512") else 1.0
            continue
        m = _DF_ROW_RE.match(line.rstrip())
        if not m:
            continue
        pct = m.group("pct")
        entries.append(
            DfEntry(
                filesystem=m.group("fs"),
                size_kib=int(int(m.group("size")) * factor),
                used_kib=int(int(m.group("used")) * factor),
                avail_kib=int(int(m.group("avail")) * factor),
                use_percent=int(pct[:-1]) if pct.endswith("%") else None,
                mount_point=m.group("mnt"),
            )
        )
    if not entries:
        raise ParseError("not 'df -P -k' output: no filesystem row")
    return entries


@dataclass(frozen=True)
class ZpoolVdev:
    name: str
    state: str
    read_errors: int | None
    write_errors: int | None
    checksum_errors: int | None
    depth: int  # 0 = the pool row, 1 = top-level vdev, ...
    note: str | None = None  # trailing text, e.g. 'cannot open'


@dataclass(frozen=True)
class ZpoolReport:
    name: str
    state: str | None  # 'ONLINE', 'DEGRADED', 'FAULTED', 'SUSPENDED', ...
    status: str | None
    action: str | None
    scan: str | None
    errors: str | None  # the 'errors:' line, e.g. 'No known data errors'
    vdevs: tuple[ZpoolVdev, ...] = ()


@dataclass(frozen=True)
class ZpoolStatus:
    all_healthy: bool  # zpool printed 'all pools are healthy'
    no_pools: bool  # zpool printed 'no pools available'
    pools: tuple[ZpoolReport, ...]  # the pools it reported on (unhealthy ones, with -x)


_ZKEY_RE = re.compile(r"^\s*(pool|state|status|action|see|scan|config|errors):\s?(.*)$")
_VDEV_RE = re.compile(
    r"^(?P<indent>\s*)(?P<name>\S+)\s+(?P<state>[A-Z]+)\s+(?P<r>\S+)\s+(?P<w>\S+)\s+(?P<c>\S+)(?:\s+(?P<note>.*))?$"
)


def _count(value: str) -> int | None:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)", value)
    if not m:
        return None
    scale = {"": 1, "K": 1_000, "M": 1_000_000, "G": 1_000_000_000, "T": 1_000_000_000_000}[m.group(2)]
    return int(float(m.group(1)) * scale)


@parser
def parse_zpool_status_x(text: str) -> ZpoolStatus:
    """``zpool status -x``: 'all pools are healthy', 'no pools available', or pool reports."""
    all_healthy = bool(re.search(r"all pools are healthy", text))
    no_pools = bool(re.search(r"no pools available", text))
    pools: list[dict] = []
    key: str | None = None
    base_indent: int | None = None
    for line in split_lines(text):
        if m := _ZKEY_RE.match(line):
            key = m.group(1)
            value = m.group(2).strip()
            if key == "pool":
                pools.append({"name": value, "vdevs": []})
                base_indent = None
            elif pools:
                pools[-1][key] = value
            continue
        if not pools or not line.strip():
            continue
        if key == "config":
            m = _VDEV_RE.match(line.expandtabs(8))
            if m and m.group("name") != "NAME":
                indent = len(m.group("indent"))
                if base_indent is None:
                    base_indent = indent
                pools[-1]["vdevs"].append(
                    ZpoolVdev(
                        name=m.group("name"),
                        state=m.group("state"),
                        read_errors=_count(m.group("r")),
                        write_errors=_count(m.group("w")),
                        checksum_errors=_count(m.group("c")),
                        depth=max((indent - base_indent) // 2, 0),
                        note=(m.group("note") or "").strip() or None,
                    )
                )
        elif key in ("status", "action", "scan", "errors") and line[:1].isspace():
            pools[-1][key] = f"{pools[-1].get(key, '')} {line.strip()}".strip()
    if not (all_healthy or no_pools or pools):
        raise ParseError("not 'zpool status -x' output")
    return ZpoolStatus(
        all_healthy=all_healthy,
        no_pools=no_pools,
        pools=tuple(
            ZpoolReport(
                name=p["name"],
                state=p.get("state") or None,
                status=p.get("status") or None,
                action=p.get("action") or None,
                scan=p.get("scan") or None,
                errors=p.get("errors") or None,
                vdevs=tuple(p["vdevs"]),
            )
            for p in pools
        ),
    )


@dataclass(frozen=True)
class OfedVersion:
    version: str  # '24.04-0.6.6.0' (MLNX_OFED) / '24.04-0.6.6' (DOCA-OFED)
    flavour: str  # 'mlnx_ofed' or 'doca_ofed' (DOCA prints 'OFED-internal-...')
    raw: str  # the line as printed


_OFED_RE = re.compile(r"^(?P<prefix>MLNX_OFED_LINUX|OFED-internal|OFED)-(?P<version>\d[\w.\-]*?):?\s*$")


@parser
def parse_ofed_version(text: str) -> OfedVersion:
    """``ofed_info -s``: 'MLNX_OFED_LINUX-24.04-0.6.6.0:' or DOCA's 'OFED-internal-24.04-0.6.6:'."""
    lines = split_lines(text)
    for at, line in enumerate(lines):
        if m := _OFED_RE.match(line.strip()):
            if at == len(lines) - 1 and not line.rstrip().endswith(":"):
                # ofed_info -s ends its version with ':': the last line, unfinished, was cut in it
                raise ParseError(
                    f"the output ends in the version line without its ':': it was cut ({line.strip()!r})"
                )
            flavour = "mlnx_ofed" if m.group("prefix") == "MLNX_OFED_LINUX" else "doca_ofed"
            return OfedVersion(m.group("version"), flavour, line.strip())
    raise ParseError("not 'ofed_info -s' output: no 'MLNX_OFED_LINUX-x:' / 'OFED-internal-x:' line")
