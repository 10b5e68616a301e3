"""``perfquery`` (infiniband-diags) port counters, and the same counters read from sysfs.

``perfquery -x`` prints one block per port: ``# Port extended counters: Lid 1719 port 1 (CapMask:
...)`` then ``Name:.....value`` lines; plain ``perfquery`` prints ``# Port counters: ...``. The
error counters of the IBA PortCounters attribute are narrow (LinkDownedCounter 8 bits,
LocalLinkIntegrityErrors 4 bits, SymbolErrorCounter 16 bits...) and stop at their maximum: a
counter at its maximum is "at least this", not a number, so a rise cannot be seen
(``is_saturated``). sysfs (``/sys/class/infiniband/<ca>/ports/<n>/counters/<name>``) has the same
counters under other names (``SYSFS_NAMES``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from burnin.parsers._common import parser, split_lines, to_int
from burnin.parsers.errors import ParseError

# The error counters a burn-in diffs before/after load (docs/reference.md, InfiniBand).
ERROR_COUNTERS: tuple[str, ...] = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortXmitDiscards",
    "ExcessiveBufferOverrunErrors",
    "LocalLinkIntegrityErrors",
)

# Largest value of each IBA PortCounters field (IBA spec, PortCounters attribute widths).
COUNTER_MAX: dict[str, int] = {
    "SymbolErrorCounter": 0xFFFF,
    "LinkErrorRecoveryCounter": 0xFF,
    "LinkDownedCounter": 0xFF,
    "PortRcvErrors": 0xFFFF,
    "PortRcvRemotePhysicalErrors": 0xFFFF,
    "PortRcvSwitchRelayErrors": 0xFFFF,
    "PortXmitDiscards": 0xFFFF,
    "PortXmitConstraintErrors": 0xFF,
    "PortRcvConstraintErrors": 0xFF,
    "LocalLinkIntegrityErrors": 0xF,
    "ExcessiveBufferOverrunErrors": 0xF,
    "VL15Dropped": 0xFFFF,
}
_WIDE_MAX = (0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)  # 32-bit data counters, 64-bit extended counters

# sysfs counter file -> perfquery name (drivers/infiniband/core/sysfs.c).
SYSFS_NAMES: dict[str, str] = {
    "symbol_error": "SymbolErrorCounter",
    "link_error_recovery": "LinkErrorRecoveryCounter",
    "link_downed": "LinkDownedCounter",
    "port_rcv_errors": "PortRcvErrors",
    "port_rcv_remote_physical_errors": "PortRcvRemotePhysicalErrors",
    "port_rcv_switch_relay_errors": "PortRcvSwitchRelayErrors",
    "port_xmit_discards": "PortXmitDiscards",
    "port_xmit_constraint_errors": "PortXmitConstraintErrors",
    "port_rcv_constraint_errors": "PortRcvConstraintErrors",
    "excessive_buffer_overrun_errors": "ExcessiveBufferOverrunErrors",
    "local_link_integrity_errors": "LocalLinkIntegrityErrors",
    "VL15_dropped": "VL15Dropped",
    "port_xmit_data": "PortXmitData",
    "port_rcv_data": "PortRcvData",
    "port_xmit_packets": "PortXmitPkts",
    "port_rcv_packets": "PortRcvPkts",
    "port_xmit_wait": "PortXmitWait",
}


@dataclass(frozen=True)
class PerfqueryPort:
    lid: int | None
    port: int | None  # from the block header, else PortSelect
    extended: bool  # 'Port extended counters' (perfquery -x): 64-bit data counters
    cap_mask: str | None
    counters: dict[str, int] = field(default_factory=dict)


def is_saturated(name: str, value: int) -> bool:
    """True when the counter sits at its maximum: it may have counted more than it shows."""
    return value == COUNTER_MAX.get(name, -1) or value in _WIDE_MAX


def counters_from_sysfs(counters: Mapping[str, int]) -> dict[str, int]:
    """sysfs ``counters/<file>`` values keyed by their perfquery names (unknown files dropped)."""
    return {SYSFS_NAMES[name]: value for name, value in counters.items() if name in SYSFS_NAMES}


# '# Port extended counters: Lid 1719 port 1 (CapMask: 0x5300 ...)', '# Port counters: ...',
# '# PortRcvErrorDetails counters: Lid 1719 port 1' (perfquery -E).
_HEAD_RE = re.compile(
    r"^#\s*(?P<kind>[\w ]*?)\s*counters:\s*Lid\s+(?P<lid>\d+)\s+port\s+(?P<port>\d+|all)"
    r"(?:\s*\(CapMask:\s*(?P<cap>[^\s)]+))?",
    re.I,
)
_COUNTER_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*):\.*\s*(0[xX][0-9a-fA-F]+|\d+)\s*$")
_PROBLEM_RE = re.compile(r"^\s*(ibwarn|ibpanic|iberror)\b.*$")


@parser
def parse_perfquery(text: str) -> list[PerfqueryPort]:
    """``perfquery [-x]`` output: one record per port block, in order."""
    blocks: list[dict] = []
    problems: list[str] = []
    current: dict | None = None
    for line in split_lines(text):
        if m := _HEAD_RE.match(line.strip()):
            port = m.group("port")
            current = {
                "lid": int(m.group("lid")),
                "port": int(port) if port.isdigit() else None,
                "extended": "extended" in m.group("kind").lower(),
                "cap_mask": m.group("cap"),
                "counters": {},
            }
            blocks.append(current)
        elif m := _COUNTER_RE.match(line.strip()):
            if current is None:  # no header line (a trimmed capture): one anonymous block
                current = {"lid": None, "port": None, "extended": False, "cap_mask": None, "counters": {}}
                blocks.append(current)
            current["counters"].setdefault(m.group(1), to_int(m.group(2)))
        elif m := _PROBLEM_RE.match(line):
            problems.append(m.group(0).strip())
    ports = []
    for block in blocks:
        counters = block["counters"]
        if not counters:
            continue
        port = block["port"] if block["port"] is not None else counters.get("PortSelect")
        ports.append(PerfqueryPort(block["lid"], port, block["extended"], block["cap_mask"], counters))
    if not ports:
        detail = f": {problems[0]}" if problems else ""
        raise ParseError(f"not perfquery output: no '# Port counters' block with counters{detail}")
    return ports
