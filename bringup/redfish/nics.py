"""Network ports from Redfish JSON, merged by MAC, and the provisioning NIC rule (pure).

Sources, in the order they are trusted: ``Systems/*/EthernetInterfaces`` (what the host
sees; empty on an iDRAC before the first boot), ``Chassis/*/NetworkAdapters/*/
NetworkDeviceFunctions`` (the cards themselves, ``Ethernet.PermanentMACAddress``), their
``Ports``/``NetworkPorts``, then vendor OEM resources. The burned-in (permanent) MAC is
preferred everywhere: an OS or a bond may have changed the current one, and DHCP
reservations are written from it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from bringup.errors import BadInput

# Where a port sits, best first for the "onboard" rule.
LOCATION_RANK = {"embedded": 0, "integrated": 1, "slot": 2, "mezzanine": 3}

_FQDD = re.compile(
    r"NIC\.(?P<kind>Embedded|LOM|Integrated|FlexLOM|OCP|Slot|Mezzanine)\.(?P<num>\d+)[-.](?P<port>\d+)",
    re.IGNORECASE,
)
_KIND = {
    "embedded": "embedded",
    "lom": "embedded",
    "integrated": "integrated",
    "flexlom": "integrated",
    "ocp": "integrated",
    "slot": "slot",
    "mezzanine": "mezzanine",
}
_SLOT_WORDS = re.compile(r"\bslot\s*(\d+)", re.IGNORECASE)


@dataclass
class Nic:
    id: str
    mac: str
    source: str  # EthernetInterfaces | NetworkDeviceFunctions | Ports | OEM
    permanent: bool  # mac is the burned-in PermanentMACAddress
    name: str | None = None
    adapter: str | None = None
    location: str | None = None  # embedded | integrated | slot | mezzanine
    slot: int | None = None
    port: int | None = None
    link_status: str | None = None
    speed_mbps: int | None = None
    current_mac: str | None = None  # set when the current MAC differs from the permanent one

    @property
    def onboard(self) -> bool | None:
        if self.location is None:
            return None
        return self.location in ("embedded", "integrated")

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "onboard": self.onboard}


def normalise_mac(value: Any) -> str | None:
    """``aa:bb:cc:dd:ee:ff`` from the usual spellings; None for empty or all-zero MACs."""
    if not isinstance(value, str):
        return None
    digits = re.sub(r"[^0-9a-fA-F]", "", value)
    if len(digits) != 12 or set(digits) == {"0"}:
        return None
    digits = digits.lower()
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2))


def place(*texts: Any, location: Any = None) -> tuple[str | None, int | None, int | None]:
    """(location, slot, port) from an FQDD/StructuredName, names, or a DMTF Location."""
    for text in texts:
        if isinstance(text, str) and (m := _FQDD.search(text)):
            kind = _KIND[m.group("kind").lower()]
            num, port = int(m.group("num")), int(m.group("port"))
            return kind, num if kind == "slot" else None, port
    part = location.get("PartLocation") if isinstance(location, dict) else None
    if isinstance(part, dict):
        kind = str(part.get("LocationType") or "").lower()
        ordinal = part.get("LocationOrdinalValue")
        if kind == "slot":
            return "slot", ordinal if isinstance(ordinal, int) else None, None
        if kind in ("embedded", "integrated"):
            return "embedded" if kind == "embedded" else "integrated", None, None
        label = part.get("ServiceLabel")
        if isinstance(label, str) and (m := _SLOT_WORDS.search(label)):
            return "slot", int(m.group(1)), None
    for text in texts:
        if not isinstance(text, str):
            continue
        if m := _SLOT_WORDS.search(text):
            return "slot", int(m.group(1)), None
        low = text.lower()
        if "embedded" in low or "onboard" in low or re.search(r"\blom\b", low):
            return "embedded", None, None
    return None, None, None


def _macs(permanent: Any, current: Any) -> tuple[str | None, bool, str | None]:
    perm, cur = normalise_mac(permanent), normalise_mac(current)
    if perm:
        return perm, True, cur if cur and cur != perm else None
    return cur, False, None


def from_ethernet_interface(doc: dict[str, Any]) -> Nic | None:
    if str(doc.get("EthernetInterfaceType") or "Physical") != "Physical":
        return None  # host-interface/virtual NICs (e.g. the USB NIC to the BMC)
    mac, permanent, current = _macs(doc.get("PermanentMACAddress"), doc.get("MACAddress"))
    if not mac:
        return None
    ident = str(doc.get("Id") or mac)
    loc, slot, port = place(ident, doc.get("Name"), doc.get("Description"), location=doc.get("Location"))
    speed = doc.get("SpeedMbps")
    return Nic(
        id=ident,
        mac=mac,
        source="EthernetInterfaces",
        permanent=permanent,
        name=doc.get("Name"),
        location=loc,
        slot=slot,
        port=port,
        link_status=doc.get("LinkStatus"),
        speed_mbps=speed if isinstance(speed, int) else None,
        current_mac=current,
    )


def from_device_function(adapter: dict[str, Any], fn: dict[str, Any]) -> Nic | None:
    if str(fn.get("NetDevFuncType") or "Ethernet") != "Ethernet":
        return None  # InfiniBand / FibreChannel functions carry GUIDs/WWNs, not MACs
    eth = fn.get("Ethernet") if isinstance(fn.get("Ethernet"), dict) else {}
    mac, permanent, current = _macs(eth.get("PermanentMACAddress"), eth.get("MACAddress"))
    if not mac:
        return None
    ident = str(fn.get("Id") or mac)
    loc, slot, port = place(ident, adapter.get("Id"), adapter.get("Name"), location=adapter.get("Location"))
    return Nic(
        id=ident,
        mac=mac,
        source="NetworkDeviceFunctions",
        permanent=permanent,
        name=fn.get("Name") or adapter.get("Model") or adapter.get("Name"),
        adapter=adapter.get("Id"),
        location=loc,
        slot=slot,
        port=port,
        current_mac=current,
    )


def from_port(adapter: dict[str, Any], doc: dict[str, Any]) -> list[Nic]:
    """A ``Port`` (``Ethernet.AssociatedMACAddresses``) or legacy ``NetworkPort``."""
    eth = doc.get("Ethernet") if isinstance(doc.get("Ethernet"), dict) else {}
    raw = eth.get("AssociatedMACAddresses") or doc.get("AssociatedNetworkAddresses") or []
    ident = str(doc.get("Id") or "")
    if ident and adapter.get("Id") and not _FQDD.search(ident):
        ident = f"{adapter['Id']}/{ident}"  # port ids ("1", "2") repeat across adapters
    loc, slot, port = place(ident, adapter.get("Id"), adapter.get("Name"), location=adapter.get("Location"))
    number = doc.get("PhysicalPortNumber")
    if port is None and isinstance(number, str) and number.isdigit():
        port = int(number)
    out = []
    for value in raw if isinstance(raw, list) else []:
        mac = normalise_mac(value)
        if mac:
            out.append(
                Nic(
                    id=ident or mac,
                    mac=mac,
                    source="Ports",
                    permanent=False,
                    name=doc.get("Name"),
                    adapter=adapter.get("Id"),
                    location=loc,
                    slot=slot,
                    port=port,
                    link_status=doc.get("LinkStatus"),
                )
            )
    return out


def infiniband_function(adapter: dict[str, Any], fn: dict[str, Any]) -> dict[str, Any] | None:
    """An InfiniBand function's GUIDs (the HCAs of a GPU node), or None."""
    if fn.get("NetDevFuncType") != "InfiniBand":
        return None
    ib = fn.get("InfiniBand") if isinstance(fn.get("InfiniBand"), dict) else {}
    return {
        "id": fn.get("Id"),
        "adapter": adapter.get("Id"),
        "port_guid": ib.get("PermanentPortGUID") or ib.get("PortGUID"),
        "node_guid": ib.get("PermanentNodeGUID") or ib.get("NodeGUID"),
    }


def merge(nics: list[Nic]) -> list[Nic]:
    """One Nic per MAC: the first (most trusted) source wins, later ones fill its gaps."""
    by_mac: dict[str, Nic] = {}
    for nic in nics:
        have = by_mac.get(nic.mac)
        if have is None:
            by_mac[nic.mac] = nic
            continue
        for attr in ("name", "adapter", "location", "slot", "port", "link_status", "speed_mbps"):
            if getattr(have, attr) is None and getattr(nic, attr) is not None:
                setattr(have, attr, getattr(nic, attr))
        have.permanent = have.permanent or nic.permanent
    return list(by_mac.values())


# -- the provisioning NIC -------------------------------------------------------------------


@dataclass(frozen=True)
class NicRule:
    """``onboard`` (default), ``slot:N[:PORT]``, ``fqdd:NIC.Slot.3-1-1`` (or ``id:``), ``mac:MAC``."""

    kind: str
    value: str | int | None = None
    port: int = 1

    def __str__(self) -> str:
        if self.kind == "onboard":
            return "onboard"
        if self.kind == "slot":
            return f"slot:{self.value}" + (f":{self.port}" if self.port != 1 else "")
        return f"{self.kind}:{self.value}"


def parse_rule(text: str | None) -> NicRule:
    if text is None or str(text).strip() in ("", "onboard"):
        return NicRule("onboard")
    text = str(text).strip()
    kind, _, rest = text.partition(":")
    kind = kind.lower()
    if kind == "slot":
        num, _, port = rest.partition(":")
        if not num.isdigit() or (port and not port.isdigit()):
            raise BadInput(f"provisioning NIC rule {text!r}: expected slot:N or slot:N:PORT")
        return NicRule("slot", int(num), int(port) if port else 1)
    if kind in ("fqdd", "id") and rest:
        return NicRule("id", rest)
    if kind == "mac" and normalise_mac(rest):
        return NicRule("mac", normalise_mac(rest))
    raise BadInput(
        f"provisioning NIC rule {text!r}: use onboard, slot:N[:PORT], fqdd:NIC.Slot.3-1-1 or mac:AA:BB:..."
    )


def _natural(text: str) -> list[Any]:
    return [int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", text)]


def order(nics: list[Nic]) -> list[Nic]:
    """Onboard first, then by slot, port and id (the order a person reads a rack's back)."""
    indexed = list(enumerate(nics))
    indexed.sort(
        key=lambda item: (
            LOCATION_RANK.get(item[1].location or "", 9),
            item[1].slot or 0,
            item[1].port or 0,
            _natural(item[1].id) if item[1].location else [],
            item[0],
        )
    )
    return [n for _, n in indexed]


def choose_provisioning(nics: list[Nic], rule: NicRule) -> Nic | None:
    if not nics:
        return None
    if rule.kind == "onboard":
        return order(nics)[0]
    if rule.kind == "mac":
        return next((n for n in nics if n.mac == rule.value), None)
    if rule.kind == "id":
        want = str(rule.value).lower()
        return next((n for n in nics if n.id.lower() == want), None)
    in_slot = order([n for n in nics if n.location == "slot" and n.slot == rule.value])
    by_port = [n for n in in_slot if n.port == rule.port]
    if by_port:
        return by_port[0]
    return in_slot[rule.port - 1] if len(in_slot) >= rule.port else None
