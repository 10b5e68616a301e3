"""sysfs values: PCIe link speed/width files, AER counter files, InfiniBand port files.

Kernel formats (drivers/pci/pci-sysfs.c, pci.c): ``current_link_speed`` is ``"32.0 GT/s PCIe"``
on current kernels, ``"32 GT/s"`` on old ones (before ~5.3), ``"Unknown"`` when the link is
down; ``*_link_width`` is a plain decimal lane count. ``aer_dev_{correctable,nonfatal,fatal}``
print one ``Name count`` pair per line ending with ``TOTAL_ERR_*``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from burnin.parsers._common import clean, parser, split_lines, to_float
from burnin.parsers.errors import ParseError

MAX_LINK_WIDTH = 32  # the widest link the PCIe specification defines (x32)
# PCIe generation by transfer rate in GT/s.
_GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6, 128.0: 7}


@parser
def parse_link_speed(text: str) -> float | None:
    """'32.0 GT/s PCIe' / '32 GT/s' -> 32.0; 'Unknown' -> None. Anything else is a ParseError."""
    value = text.strip()
    if value.lower().startswith("unknown"):
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*GT/s(?:\s+PCIe)?", value)
    if not m:
        raise ParseError(f"not a sysfs link speed: {value[:60]!r}")
    speed = float(m.group(1))
    if speed_to_gen(speed) is None:  # '999 GT/s' would pass any floor: not a real reading
        raise ParseError(f"not a PCIe link speed (no generation runs at it): {value[:60]!r}")
    return speed


@parser
def parse_link_width(text: str) -> int:
    """'16' -> 16 (``current_link_width`` / ``max_link_width``)."""
    value = text.strip()
    if not re.fullmatch(r"\d{1,3}", value) or int(value) > MAX_LINK_WIDTH:
        raise ParseError(f"not a sysfs link width: {value[:60]!r}")
    return int(value)


def speed_to_gen(gts: float | None) -> int | None:
    """2.5 -> 1, 5 -> 2, 8 -> 3, 16 -> 4, 32 -> 5, 64 -> 6 (128 -> 7); None for unknown speeds."""
    if gts is None or isinstance(gts, bool) or not isinstance(gts, (int, float)):
        return None
    for speed, gen in _GENERATIONS.items():
        if abs(gts - speed) < 0.05:
            return gen
    return None


@parser
def parse_aer_counters(text: str) -> dict[str, int]:
    """``aer_dev_correctable`` / ``aer_dev_nonfatal`` / ``aer_dev_fatal``: 'RxErr 0' ... 'TOTAL_ERR_COR 0'."""
    counters: dict[str, int] = {}
    for line in split_lines(text):
        m = re.fullmatch(r"\s*(\S+)\s+(\d+)\s*", line)
        if m:
            counters[m.group(1)] = int(m.group(2))
        elif line.strip():
            raise ParseError(f"not an AER counter line: {line.strip()[:60]!r}")
    if not counters:
        raise ParseError("no AER counters")
    return counters


@dataclass(frozen=True)
class IbSysfsPort:
    state: str | None  # 'ACTIVE' (from '4: ACTIVE')
    state_code: int | None
    phys_state: str | None  # 'LinkUp'
    phys_state_code: int | None
    rate: float | None  # Gb/s, from '400 Gb/sec (4X NDR)'
    rate_text: str | None  # '4X NDR'
    link_layer: str | None
    # counters/<name> and hw_counters/<name>; 8/16/32-bit counters saturate (link_downed 255):
    # always diff before/after a burn-in window and treat the maximum as "at least".
    counters: dict[str, int] = field(default_factory=dict)
    hw_counters: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class IbSysfsDevice:
    name: str
    board_id: str | None
    fw_ver: str | None
    hca_type: str | None
    ports: dict[int, IbSysfsPort]


_IB_LINE_RE = re.compile(
    r"^\s*(?:/sys/class/infiniband/)?(?P<path>[\w.\-]+(?:/[\w.\-]+)*)\s*:\s?(?P<value>.*)$"
)


def _coded(value: str | None) -> tuple[int | None, str | None]:
    m = re.match(r"^\s*(\d+):(.*)$", value or "")
    return (int(m.group(1)), clean(m.group(2))) if m else (None, clean(value))


@parser
def parse_ib_sysfs(text: str) -> dict[str, IbSysfsDevice]:
    """``path: value`` lines under /sys/class/infiniband, as printed by
    ``grep -H . /sys/class/infiniband/*/ports/*/{state,rate,...} .../counters/*`` (the
    '/sys/class/infiniband/' prefix is optional). Keyed by device name."""
    raw: dict[str, dict] = {}
    for line in split_lines(text):
        m = _IB_LINE_RE.match(line)
        if not m:
            continue
        parts = m.group("path").split("/")
        value = m.group("value").strip()
        dev = raw.setdefault(parts[0], {"attrs": {}, "ports": {}})
        if len(parts) == 2:
            dev["attrs"][parts[1]] = value
        elif len(parts) >= 4 and parts[1] == "ports" and parts[2].isdigit():
            port = dev["ports"].setdefault(int(parts[2]), {"attrs": {}, "counters": {}, "hw_counters": {}})
            if len(parts) == 4:
                port["attrs"][parts[3]] = value
            elif len(parts) == 5 and parts[3] in ("counters", "hw_counters") and re.fullmatch(r"\d+", value):
                port[parts[3]][parts[4]] = int(value)
    devices: dict[str, IbSysfsDevice] = {}
    for name, dev in raw.items():
        if not dev["ports"] and not dev["attrs"].keys() & {"board_id", "fw_ver", "hca_type", "node_guid"}:
            continue
        ports = {}
        for number, port in dev["ports"].items():
            attrs = port["attrs"]
            state_code, state = _coded(attrs.get("state"))
            phys_code, phys = _coded(attrs.get("phys_state"))
            rate_text = re.search(r"\(([^()]*)\)", attrs.get("rate", ""))
            ports[number] = IbSysfsPort(
                state=state,
                state_code=state_code,
                phys_state=phys,
                phys_state_code=phys_code,
                rate=to_float(attrs.get("rate")),
                rate_text=rate_text.group(1) if rate_text else None,
                link_layer=clean(attrs.get("link_layer")),
                counters=port["counters"],
                hw_counters=port["hw_counters"],
            )
        devices[name] = IbSysfsDevice(
            name=name,
            board_id=clean(dev["attrs"].get("board_id")),
            fw_ver=clean(dev["attrs"].get("fw_ver")),
            hca_type=clean(dev["attrs"].get("hca_type")),
            ports=ports,
        )
    if not devices:
        raise ParseError("no /sys/class/infiniband '<dev>/ports/<n>/<file>: value' lines")
    return devices
