"""``lspci -vv`` / ``-vvv`` (with or without ``-D`` / ``-nn``), and grep'd excerpts of it.

LnkSta annotations ``(ok)`` / ``(downgraded)`` are kept as printed; older pciutils print
none, so compare LnkSta against LnkCap yourself (``speed_state`` is None then).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from burnin.parsers._common import normalize_bdf, parser, split_lines
from burnin.parsers.errors import ParseError


@dataclass(frozen=True)
class LspciDevice:
    bdf: str | None  # canonical '0000:b1:00.1'; None for a grep'd excerpt without the header line
    description: str | None  # 'Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]'
    class_name: str | None  # 'Ethernet controller', '3D controller', 'PCI bridge'
    vendor_id: str | None  # from '-nn' output '[10de:2330]', else None
    device_id: str | None
    express_type: str | None  # 'Endpoint', 'Root Port', 'Downstream Port', 'Upstream Port', ...
    physical_slot: str | None  # 'Physical Slot: 3'
    slot_number: int | None  # SltCap 'Slot #167' (ports with a slot)
    numa_node: int | None
    kernel_driver: str | None
    link_cap_speed_gts: float | None  # LnkCap 'Speed 32GT/s'
    link_cap_width: int | None  # LnkCap 'Width x16'
    link_sta_speed_gts: float | None  # LnkSta speed; None for 'unknown'
    link_sta_width: int | None
    link_sta_speed_state: str | None  # 'ok' / 'downgraded' / None (not printed)
    link_sta_width_state: str | None
    # flag lines as name -> bool ('CorrErr+' -> True); empty when the line is absent
    devsta: dict[str, bool] = field(default_factory=dict)
    ue_status: dict[str, bool] = field(default_factory=dict)  # AER UESta
    ce_status: dict[str, bool] = field(default_factory=dict)  # AER CESta
    # Vital Product Data '[SN] Serial number: MT2304XZ02VD' (NICs, HCAs): names the card for an RMA
    serial: str | None = None

    @property
    def downgraded(self) -> bool:
        """lspci itself marked speed or width '(downgraded)'."""
        return "downgraded" in (self.link_sta_speed_state, self.link_sta_width_state)


_HEADER_RE = re.compile(
    r"^(?P<bdf>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<desc>(?P<cls>[^:]+?)"
    r"(?: \[[0-9a-fA-F]{4}\])?:\s*.*)$"
)
_SPEED_RE = re.compile(
    r"Speed\s+(?:(?P<speed>\d+(?:\.\d+)?)GT/s|(?P<unknown>unknown))(?:\s*\((?P<state>[a-z]+)\))?", re.I
)
_WIDTH_RE = re.compile(r"Width\s+x(?P<width>\d+)(?:\s*\((?P<state>[a-z]+)\))?", re.I)


def _flags(text: str) -> dict[str, bool]:
    return {
        m.group(1): m.group(2) == "+" for m in re.finditer(r"\b([A-Za-z][A-Za-z0-9]*)([+-])(?=\s|$|,)", text)
    }


def _device(bdf: str | None, desc: str | None, cls: str | None, body: list[str]) -> LspciDevice:
    values: dict = {"devsta": {}, "ue_status": {}, "ce_status": {}}
    for raw in body:
        line = raw.strip()
        key, _, rest = line.partition(":")
        key = key.strip()
        if key == "LnkCap":
            if m := _SPEED_RE.search(rest):
                values["link_cap_speed_gts"] = float(m.group("speed")) if m.group("speed") else None
            if m := _WIDTH_RE.search(rest):
                values["link_cap_width"] = int(m.group("width"))
        elif key == "LnkSta":
            if m := _SPEED_RE.search(rest):
                values["link_sta_speed_gts"] = float(m.group("speed")) if m.group("speed") else None
                values["link_sta_speed_state"] = m.group("state").lower() if m.group("state") else None
            if m := _WIDTH_RE.search(rest):
                values["link_sta_width"] = int(m.group("width"))
                values["link_sta_width_state"] = m.group("state").lower() if m.group("state") else None
        elif key == "DevSta":
            values["devsta"] = _flags(rest)
        elif key == "UESta":
            values["ue_status"] = _flags(rest)
        elif key == "CESta":
            values["ce_status"] = _flags(rest)
        elif key == "Physical Slot":
            values["physical_slot"] = rest.strip() or None
        elif key == "NUMA node" and rest.strip().lstrip("-").isdigit():
            values["numa_node"] = int(rest.strip())
        elif key == "Kernel driver in use":
            values["kernel_driver"] = rest.strip() or None
        elif m := re.match(r"^Capabilities: \[[0-9a-f]+\] Express \(v\d\) (.+?)(?:, MSI.*)?$", line):
            express = m.group(1).strip()
            if express.endswith(("(Slot+)", "(Slot-)")):
                express = express[: -len("(Slot+)")].strip()
            values["express_type"] = express
        if (m := re.match(r"^\[SN\] Serial number:\s*(\S+)", line)) and "serial" not in values:
            values["serial"] = m.group(1)
        if (m := re.match(r"^Slot #(\d+)", line)) and "slot_number" not in values:
            values["slot_number"] = int(m.group(1))
    ids = re.findall(r"\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]", desc or "")
    return LspciDevice(
        bdf=normalize_bdf(bdf) if bdf else None,
        description=desc,
        class_name=cls,
        vendor_id=ids[-1][0].lower() if ids else None,
        device_id=ids[-1][1].lower() if ids else None,
        express_type=values.get("express_type"),
        physical_slot=values.get("physical_slot"),
        slot_number=values.get("slot_number"),
        numa_node=values.get("numa_node"),
        kernel_driver=values.get("kernel_driver"),
        link_cap_speed_gts=values.get("link_cap_speed_gts"),
        link_cap_width=values.get("link_cap_width"),
        link_sta_speed_gts=values.get("link_sta_speed_gts"),
        link_sta_width=values.get("link_sta_width"),
        link_sta_speed_state=values.get("link_sta_speed_state"),
        link_sta_width_state=values.get("link_sta_width_state"),
        devsta=values["devsta"],
        ue_status=values["ue_status"],
        ce_status=values["ce_status"],
        serial=values.get("serial"),
    )


@parser
def parse_lspci_vv(text: str) -> list[LspciDevice]:
    """One record per device block. Lines before the first header that carry LnkCap/LnkSta
    (``lspci -vv -s X | grep Lnk``) form a device with ``bdf=None``."""
    devices: list[LspciDevice] = []
    current: tuple[str | None, str | None, str | None] | None = None
    body: list[str] = []
    orphan: list[str] = []
    for line in split_lines(text):
        m = _HEADER_RE.match(line)
        if m:
            if current is not None:
                devices.append(_device(*current, body))
            current = (m.group("bdf"), m.group("desc").strip(), m.group("cls").strip())
            body = []
        elif current is not None:
            if line[:1].isspace() or not line.strip():
                body.append(line)
            else:
                devices.append(_device(*current, body))
                current, body = None, []
                orphan.append(line)
        else:
            orphan.append(line)
    if current is not None:
        devices.append(_device(*current, body))
    if any(re.match(r"^\s*Lnk(Cap|Sta):", ln) for ln in orphan):
        devices.insert(0, _device(None, None, None, orphan))
    if not devices:
        raise ParseError("not lspci -vv output: no device header ('bb:dd.f class: ...') and no LnkCap/LnkSta")
    return devices
