"""Where a network port sits, from everything vendors publish (pure).

Placement: embedded on the board, in the vendor's integrated network slot, in a
PCIe slot or on a mezzanine/network module. It is read from: DMTF
``Location.PartLocation`` (``LocationType``, ``LocationOrdinalValue``, ``ServiceLabel``) and
``PhysicalContext``, Dell FQDDs (``NIC.Embedded.1-1-1``, ``NIC.Integrated.1-1-1``,
``NIC.Slot.3-1-1``), HPE's StructuredName (``NIC.LOM.1.1``, ``OCP.Slot.10.1``) and location
strings (``Embedded LOM``, ``OCP 3.0 Slot 10``), Cisco's port ids (``L.1``/``LOM`` on the board,
``3.2`` = PCIe slot 3 port 2, ``MLOM.0``/``SIOC1.0`` = VIC modules) and Supermicro's
descriptions (``Onboard LAN1``, ``AIOM``/``SIOM`` modules).
"""

from __future__ import annotations

import re
from typing import Any

# Where a port sits, best first for the "onboard" rule. Embedded and integrated are onboard:
# on the board, or in the slot the vendor itself names as the system's own network (Dell's
# NIC.Integrated, HPE's FlexibleLOM). A PCIe slot, an OCP 3.0 slot (DMTF LocationType Slot; HPE
# labels it "OCP 3.0 Slot 10") and a vendor network module (Cisco mLOM/SIOC VIC, Supermicro
# AIOM/SIOM) take any card, so they are not known to carry the provisioning network.
LOCATION_RANK = {"embedded": 0, "integrated": 1, "slot": 2, "mezzanine": 3}
ONBOARD = ("embedded", "integrated")

# Dell FQDD (NIC.Slot.3-1-1) and HPE StructuredName (NIC.LOM.1.1, NIC.Slot.14.2, OCP.Slot.10.1).
FQDD = re.compile(
    r"(?:\bNIC|\bOCP)\.(?P<kind>Embedded|LOM|Integrated|FlexLOM|OCP|Slot|Mezzanine)\.(?P<num>\d+)[-.](?P<port>\d+)",
    re.IGNORECASE,
)
_KIND = {
    "embedded": "embedded",
    "lom": "embedded",
    "integrated": "integrated",
    "flexlom": "integrated",
    "ocp": "slot",
    "slot": "slot",
    "mezzanine": "mezzanine",
}
# Cisco CIMC port ids: L.1/L.2 (or LOM.1) on the board, <slot>.<port> on a PCIe card, MLOM.<n>
# and SIOC<n>.<port> on a VIC module.
_CISCO_LOM = re.compile(r"^L(?:OM)?(?:[.-](?P<port>\d+))?$", re.IGNORECASE)
_CISCO_SLOT = re.compile(r"^(?P<slot>\d+)\.(?P<port>\d+)$")
_CISCO_MODULE = re.compile(r"^(?:MLOM|SIOC\d*)[.-](?P<port>\d+)$", re.IGNORECASE)
_SLOT_WORDS = re.compile(r"\bslot(?:\s*id)?\s*[:#]?\s*(\d+)", re.IGNORECASE)  # "PCI-E Slot 1", "SlotID:3"
_MODULE_WORDS = re.compile(r"\b(?:mlom|sioc\d*|aiom|siom|mezzanine|mezz)\b", re.IGNORECASE)
_LAN_PORT = re.compile(r"\blan\s*(\d+)", re.IGNORECASE)
_EMBEDDED_WORDS = re.compile(r"\b(?:embedded|onboard|on-board|lom|system\s*board)\b", re.IGNORECASE)

Placement = tuple[str | None, int | None, int | None]  # (location, slot, port)


def _from_part_location(location: Any) -> Placement | None:
    """A DMTF ``Location``: ``PartLocation`` (LocationType, ordinal, ServiceLabel) or
    ``PhysicalContext`` ("SystemBoard" is on the board)."""
    if not isinstance(location, dict):
        return None
    part = location.get("PartLocation")
    if isinstance(part, dict):
        kind = str(part.get("LocationType") or "").lower()
        ordinal = part.get("LocationOrdinalValue")
        label = part.get("ServiceLabel") if isinstance(part.get("ServiceLabel"), str) else ""
        if kind == "embedded" or _EMBEDDED_WORDS.search(label):
            return "embedded", None, None
        if kind == "integrated":  # not in DMTF's enum, but some services say it
            return "integrated", None, None
        if _MODULE_WORDS.search(label):
            return "mezzanine", None, None
        if kind == "slot" or _SLOT_WORDS.search(label):
            if not isinstance(ordinal, int) and (m := _SLOT_WORDS.search(label)):
                ordinal = int(m.group(1))
            return "slot", ordinal if isinstance(ordinal, int) else None, None
    context = str(location.get("PhysicalContext") or "").lower()
    if context in ("systemboard", "motherboard"):
        return "embedded", None, None
    return None


def _from_text(text: str) -> Placement | None:
    """An id, name or vendor location string."""
    if m := FQDD.search(text):
        kind = _KIND[m.group("kind").lower()]
        return kind, int(m.group("num")) if kind == "slot" else None, int(m.group("port"))
    stripped = text.strip()
    if m := _CISCO_LOM.match(stripped):
        return "embedded", None, int(m.group("port")) if m.group("port") else None
    if m := _CISCO_SLOT.match(stripped):
        return "slot", int(m.group("slot")), int(m.group("port"))
    if m := _CISCO_MODULE.match(stripped):
        return "mezzanine", None, int(m.group("port"))
    if m := _SLOT_WORDS.search(text):
        return "slot", int(m.group(1)), None
    if _MODULE_WORDS.search(text):
        return "mezzanine", None, None
    if _EMBEDDED_WORDS.search(text):
        lan = _LAN_PORT.search(text)  # Supermicro: "Onboard LAN1"
        return "embedded", None, int(lan.group(1)) if lan else None
    return None


def place(*texts: Any, location: Any = None) -> Placement:
    """(location, slot, port) from an FQDD/StructuredName or Cisco port id, a DMTF Location,
    then names and vendor location strings; (None, None, None) when nothing says."""
    strings = [t for t in texts if isinstance(t, str) and t.strip()]
    for text in strings:  # an FQDD names the port itself: it wins over the adapter's Location
        if FQDD.search(text):
            return _from_text(text)  # type: ignore[return-value]
    locations = location if isinstance(location, list) else [location]
    for loc in locations:
        if found := _from_part_location(loc):
            loc_, slot, port = found
            if port is None:  # "L.1" or "3.2" still knows its port
                port = next((p[2] for t in strings if (p := _from_text(t)) and p[2] is not None), None)
            return loc_, slot, port
    for text in strings:
        if found := _from_text(text):
            return found
    return None, None, None


def adapter_location(adapter: dict[str, Any]) -> list[Any]:
    """An adapter's DMTF Locations: its own, then its controllers' (Cisco puts it there)."""
    out = [adapter.get("Location")]
    for ctrl in adapter.get("Controllers") or []:
        if isinstance(ctrl, dict):
            out.append(ctrl.get("Location"))
    return out


def oem_location_strings(doc: dict[str, Any]) -> list[str]:
    """Vendor location strings under ``Oem`` (HPE: ``Oem.Hpe.Location`` "Embedded LOM",
    "OCP 3.0 Slot 10"; ``DeviceLocation``, ``StructuredName``)."""
    out = []
    for vendor in (doc.get("Oem") or {}).values() if isinstance(doc.get("Oem"), dict) else []:
        if isinstance(vendor, dict):
            for key in ("StructuredName", "Location", "DeviceLocation", "SlotLocation"):
                if isinstance(vendor.get(key), str):
                    out.append(vendor[key])
    return out


def pcie_device_placement(device: dict[str, Any]) -> Placement:
    """Where a ``PCIeDevice`` sits: its ``Slot.Location`` (DMTF PCIeDevice 1.9+) or its own
    ``Location``, an OCP 3.0 ``Slot.SlotType``, else its id and name (Cisco ``PCIeDevices/L``
    "Intel X550 LOM", ``MLOM``). The port is the function's, not the device's: None here."""
    slot = device.get("Slot") if isinstance(device.get("Slot"), dict) else {}
    texts = (str(device.get("Id") or ""), device.get("Name"), *oem_location_strings(device))
    loc, num, _ = place(*texts, location=[slot.get("Location"), device.get("Location")])
    if loc is None and str(slot.get("SlotType") or "").startswith("OCP3"):
        loc = "slot"
    return loc, num, None
