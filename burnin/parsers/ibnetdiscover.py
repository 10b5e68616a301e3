"""``ibnetdiscover -p`` (infiniband-diags): one line per port of the fabric, with its cable peer.

    CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0 ( 'o0001 HCA-1' - 'ib-i1l1s01' )
    SW  2052 37 0x506b4b03005c2740 4x ???                                    'ib-i4l1s01'

Fields: kind (CA/SW), LID, port, GUID, width, speed, then ``- kind LID port GUID`` of the peer
and ``( 'name' - 'peer name' )`` (older versions print a lone port's name without quotes:
``SW 479 22 0x0002c9020040f161 4x QDR   Infiniscale-IV Mellanox Technologies``). A port with no peer and speed ``???`` is down; ``4x SDR`` is a
link that trained at the lowest speed. ``switch_port_for`` finds the switch port an HCA port is
cabled to, so a finding can name both ends of a cable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from burnin.parsers._common import parser, split_lines
from burnin.parsers.errors import ParseError


@dataclass(frozen=True)
class IbnetPort:
    kind: str  # 'CA' or 'SW'
    lid: int
    port: int
    guid: str  # '0x7cfe9003003b4bde' (lower case)
    width: str | None  # '4x'
    speed: str | None  # 'EDR', 'NDR', 'SDR'; None for '???' (down)
    name: str | None  # node description: 'o0001 HCA-1', 'ib-i1l1s01'
    peer_kind: str | None = None
    peer_lid: int | None = None
    peer_port: int | None = None
    peer_guid: str | None = None
    peer_name: str | None = None

    @property
    def up(self) -> bool:
        return self.peer_guid is not None and self.speed is not None

    def peer_text(self) -> str:
        """'switch ib-i1l1s01 (0x7cfe9003009ce5b0) port 10', for findings."""
        kind = {"SW": "switch", "CA": "HCA"}.get(self.peer_kind or "", "peer")
        name = f" {self.peer_name}" if self.peer_name else ""
        return f"{kind}{name} ({self.peer_guid}) port {self.peer_port}"


_LINE_RE = re.compile(
    r"^(?P<kind>CA|SW)\s+(?P<lid>\d+)\s+(?P<port>\d+)\s+(?P<guid>0x[0-9a-fA-F]+)\s+(?P<width>\d+x)\s+(?P<speed>\S+)"
    r"(?:\s+-\s+(?P<pkind>CA|SW)\s+(?P<plid>\d+)\s+(?P<pport>\d+)\s+(?P<pguid>0x[0-9a-fA-F]+))?"
    r"\s*(?:\(\s*'(?P<name>[^']*)'\s*-\s*'(?P<pname>[^']*)'\s*\)|'(?P<alone>[^']*)'|(?P<bare>[^'(\s-][^']*?))?\s*$"
)


def guid_key(guid: str | None) -> int | None:
    """A GUID as a number, so '0xA088C2...' and '0xa088c2...' (and without 0x) compare equal."""
    if not guid:
        return None
    try:
        return int(guid, 16)
    except ValueError:
        return None


@parser
def parse_ibnetdiscover_ports(text: str) -> list[IbnetPort]:
    """``ibnetdiscover -p``: every port line; other lines (headers, warnings) are skipped."""
    ports = []
    for line in split_lines(text):
        m = _LINE_RE.match(line.strip())
        if not m:
            continue
        speed = m.group("speed")
        ports.append(
            IbnetPort(
                kind=m.group("kind"),
                lid=int(m.group("lid")),
                port=int(m.group("port")),
                guid=m.group("guid").lower(),
                width=m.group("width"),
                speed=None if speed.strip("?") == "" else speed,
                name=next(
                    (n for n in (m.group("name"), m.group("alone"), m.group("bare")) if n is not None), None
                ),
                peer_kind=m.group("pkind"),
                peer_lid=int(m.group("plid")) if m.group("plid") else None,
                peer_port=int(m.group("pport")) if m.group("pport") else None,
                peer_guid=m.group("pguid").lower() if m.group("pguid") else None,
                peer_name=m.group("pname"),
            )
        )
    if not ports:
        raise ParseError("not 'ibnetdiscover -p' output: no 'CA|SW lid port guid width speed' line")
    return ports


def switch_port_for(ports: Iterable[IbnetPort], guid: str | None) -> IbnetPort | None:
    """The CA port line of this port GUID whose cable goes to a switch (None when unknown)."""
    key = guid_key(guid)
    if key is None:
        return None
    for port in ports:
        if port.kind == "CA" and guid_key(port.guid) == key and port.peer_kind == "SW":
            return port
    return None
