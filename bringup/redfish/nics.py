"""Network ports from Redfish JSON, merged by MAC, and the provisioning NIC rule (pure).

Sources, in the order they are trusted: ``Systems/*/EthernetInterfaces`` (what the host
sees; empty on an iDRAC before the first boot), ``Chassis/*/NetworkAdapters/*/
NetworkDeviceFunctions`` (the cards themselves, ``Ethernet.PermanentMACAddress``), their
``Ports``/``NetworkPorts``, then vendor OEM resources. The burned-in (permanent) MAC is
preferred everywhere: an OS or a bond may have changed the current one, and DHCP
reservations are written from it.

Where each port sits comes from ``nic_placement``.

Only Ethernet functions give MACs: a Fibre Channel (WWPN/WWNN) or InfiniBand (GUID) function is
recorded apart, whatever its ``NetDevFuncType`` says or leaves out (Cisco VICs list fc0/fc1
with a WWPN, an Ethernet MAC and no type).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any

from bringup.core.errors import BadInput
from bringup.redfish.nic_placement import (
    FQDD,
    LOCATION_RANK,
    ONBOARD,
    adapter_location,
    oem_location_strings,
    place,
)

__all__ = ["LOCATION_RANK", "ONBOARD", "place"]


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
        return self.location in ONBOARD

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
    texts = (ident, doc.get("Name"), doc.get("Description"), *oem_location_strings(doc))
    loc, slot, port = place(*texts, location=doc.get("Location"))
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


def _wwn(value: Any) -> str | None:
    """``20:00:3c:57:31:cc:14:0c`` from a WWPN/WWNN spelling; None for empty or all-zero."""
    if not isinstance(value, str):
        return None
    digits = re.sub(r"[^0-9a-fA-F]", "", value)
    if len(digits) != 16 or set(digits) == {"0"}:
        return None
    digits = digits.lower()
    return ":".join(digits[i : i + 2] for i in range(0, 16, 2))


def _guid(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() and set(value) - set("0x:-") else None


def function_kind(fn: dict[str, Any]) -> str:
    """``ethernet``, ``fc``, ``ib`` or ``other`` (iSCSI offload, disabled...).

    A WWPN/WWNN makes a Fibre Channel function (FC or FCoE) whatever ``NetDevFuncType`` says or
    leaves out: Cisco VICs list fc0/fc1 with a WWPN, an ``Ethernet.MACAddress`` and no type,
    and that MAC is no port the node can PXE-boot from. Port GUIDs make an InfiniBand one."""
    kind = str(fn.get("NetDevFuncType") or "")
    fc = fn.get("FibreChannel") if isinstance(fn.get("FibreChannel"), dict) else {}
    ib = fn.get("InfiniBand") if isinstance(fn.get("InfiniBand"), dict) else {}
    if kind in ("FibreChannel", "FibreChannelOverEthernet") or any(
        _wwn(fc.get(k)) for k in ("PermanentWWPN", "WWPN", "PermanentWWNN", "WWNN")
    ):
        return "fc"
    if kind == "InfiniBand" or any(
        _guid(ib.get(k)) for k in ("PermanentPortGUID", "PortGUID", "PermanentNodeGUID", "NodeGUID")
    ):
        return "ib"
    return "ethernet" if kind in ("", "Ethernet") else "other"


def _assigned_port(fn: dict[str, Any]) -> tuple[str | None, int | None]:
    """The physical port a function is assigned to (``Links.PhysicalPortAssignment`` or the
    older top-level one): its id (``Port-1``) and number."""
    links = fn.get("Links") if isinstance(fn.get("Links"), dict) else {}
    ref = links.get("PhysicalPortAssignment") or fn.get("PhysicalPortAssignment")
    path = ref.get("@odata.id") if isinstance(ref, dict) else None
    if not isinstance(path, str) or not path.strip("/"):
        return None, None
    ident = path.rstrip("/").rsplit("/", 1)[-1]
    m = re.search(r"(\d+)$", ident)
    return ident, int(m.group(1)) if m else None


def from_device_function(adapter: dict[str, Any], fn: dict[str, Any]) -> Nic | None:
    if function_kind(fn) != "ethernet":
        return None  # FC/FCoE, InfiniBand, iSCSI offload: their identities are not MACs
    eth = fn.get("Ethernet") if isinstance(fn.get("Ethernet"), dict) else {}
    mac, permanent, current = _macs(eth.get("PermanentMACAddress"), eth.get("MACAddress"))
    if not mac:
        return None
    ident = str(fn.get("Id") or mac)
    texts = (ident, adapter.get("Id"), adapter.get("Name"), *oem_location_strings(adapter))
    loc, slot, port = place(*texts, location=adapter_location(adapter))
    if port is None:
        port = _assigned_port(fn)[1]
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


def fibre_channel_function(adapter: dict[str, Any], fn: dict[str, Any]) -> dict[str, Any] | None:
    """A Fibre Channel (or FCoE) function's identity: WWPN, WWNN, the port it is assigned to."""
    if function_kind(fn) != "fc":
        return None
    fc = fn.get("FibreChannel") if isinstance(fn.get("FibreChannel"), dict) else {}
    return {
        "id": fn.get("Id"),
        "adapter": adapter.get("Id"),
        "wwpn": _wwn(fc.get("PermanentWWPN")) or _wwn(fc.get("WWPN")),
        "wwnn": _wwn(fc.get("PermanentWWNN")) or _wwn(fc.get("WWNN")),
        "port": _assigned_port(fn)[0],
        "type": fn.get("NetDevFuncType"),
    }


def from_port(adapter: dict[str, Any], doc: dict[str, Any]) -> list[Nic]:
    """A ``Port`` (``Ethernet.AssociatedMACAddresses``) or legacy ``NetworkPort``."""
    if str(doc.get("LinkNetworkTechnology") or "Ethernet") not in ("Ethernet", "Unknown"):
        return []  # a Fibre Channel or InfiniBand port: its addresses are not Ethernet MACs
    eth = doc.get("Ethernet") if isinstance(doc.get("Ethernet"), dict) else {}
    raw = eth.get("AssociatedMACAddresses") or doc.get("AssociatedNetworkAddresses") or []
    ident = str(doc.get("Id") or "")
    if ident and adapter.get("Id") and not FQDD.search(ident):
        ident = f"{adapter['Id']}/{ident}"  # port ids ("1", "2") repeat across adapters
    texts = (ident, adapter.get("Id"), adapter.get("Name"), *oem_location_strings(adapter))
    loc, slot, port = place(*texts, location=[doc.get("Location"), *adapter_location(adapter)])
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
    if function_kind(fn) != "ib":
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


def describe(nic: Nic) -> str:
    """Where a port sits, in words: ``embedded port 1``, ``slot 3 port 2``, ``placement unknown``."""
    if nic.location is None:
        where = "placement unknown"
    elif nic.location == "slot" and nic.slot is not None:
        where = f"slot {nic.slot}"
    else:
        where = nic.location
    return where + (f" port {nic.port}" if nic.port is not None else "")


MAX_CANDIDATES = 8  # named in the flag's line; the record keeps them all


@dataclass(frozen=True)
class Choice:
    """The provisioning NIC a rule chose and why, or why none was (``candidates``: the ports
    a person must choose between; then the node is flagged and provisioning refuses it)."""

    rule: NicRule
    nic: Nic | None
    reason: str
    candidates: tuple[Nic, ...] = ()

    @property
    def flag_kind(self) -> str | None:
        if self.nic is not None or not self.candidates:
            return None
        return "ambiguous" if self.rule.kind == "onboard" else "no-match"

    @property
    def message(self) -> str:
        if self.flag_kind is None:
            return self.reason
        named = ", ".join(f"{n.id} ({describe(n)}, {n.mac})" for n in self.candidates[:MAX_CANDIDATES])
        more = len(self.candidates) - MAX_CANDIDATES
        named += f" and {more} more" if more > 0 else ""
        head = (
            "provisioning NIC ambiguous"
            if self.flag_kind == "ambiguous"
            else f"provisioning NIC rule {self.rule}"
        )
        return (
            f"{head}: candidates {named} ({self.reason}); set provisioning_nic for this host "
            "(slot:N[:PORT], fqdd:ID or mac:MAC)"
        )

    def record(self) -> dict[str, Any] | None:
        """``hardware.provisioning_nic``."""
        if self.nic is None:
            return None
        return {"id": self.nic.id, "mac": self.nic.mac, "rule": str(self.rule), "reason": self.reason}

    def flag(self) -> dict[str, Any] | None:
        """``hardware.provisioning_nic_flag``: set while no port can be chosen without a guess."""
        if self.flag_kind is None:
            return None
        return {
            "kind": self.flag_kind,
            "rule": str(self.rule),
            "message": self.message,
            "candidates": [
                {"id": n.id, "mac": n.mac, "location": n.location, "slot": n.slot, "port": n.port}
                for n in self.candidates
            ],
        }


def _by_rule(nics: list[Nic], rule: NicRule) -> Nic | None:
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


def decide(nics: list[Nic], rule: NicRule) -> Choice:
    """The provisioning NIC for ``rule``, never a guess.

    ``onboard`` takes the first port of the best-placed onboard network (embedded before
    integrated, then the lowest adapter and port numbers). When no port is known to be
    onboard, or the onboard ports do not say which is first, there is nothing to go by but
    the BMC's listing order (``3.2`` before ``L.1`` on a Cisco C240): that is a flag with the
    candidates, for a person to settle with an explicit rule. One Ethernet port alone is no
    choice at all. An explicit rule that matches nothing is a flag too."""
    ordered = order(nics)
    if not ordered:
        return Choice(rule, None, "the BMC reports no Ethernet port")
    if rule.kind != "onboard":
        nic = _by_rule(ordered, rule)
        if nic is not None:
            return Choice(rule, nic, f"rule {rule}: {describe(nic)}")
        return Choice(rule, None, f"no NIC matches the rule {rule}", tuple(ordered))
    onboard = [n for n in ordered if n.onboard]
    if onboard:
        group = [n for n in onboard if n.location == onboard[0].location]
        best = group[0]
        if best.port is not None or len(group) == 1:
            return Choice(rule, best, f"onboard: {describe(best)}, the first onboard port")
        return Choice(rule, None, "the onboard ports do not say which is port 1", tuple(group))
    if len(ordered) == 1:
        return Choice(rule, ordered[0], f"onboard: the only Ethernet port ({describe(ordered[0])})")
    if all(n.location is None for n in ordered):
        why = "the BMC publishes no NIC's placement"
    else:
        why = "no port is known to be onboard"
    return Choice(rule, None, why, tuple(ordered))


def choose_provisioning(nics: list[Nic], rule: NicRule) -> Nic | None:
    """The NIC ``decide`` chose, or None (flagged, or no NIC)."""
    return decide(nics, rule).nic


def from_record(record: dict[str, Any]) -> Nic:
    """A Nic again from ``hardware.nics`` (as ``Nic.record`` wrote it)."""
    names = {f.name for f in fields(Nic)}
    return Nic(**{k: v for k, v in record.items() if k in names})
