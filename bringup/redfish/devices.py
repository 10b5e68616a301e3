"""GPUs and PCIe devices as a BMC lists them -> the records discovery keeps (pure).

Where each shape comes from (docs/redfish.md, "GPUs and PCIe devices"):
- ``Processors`` members with ``ProcessorType: GPU`` (DMTF Processor schema): an HGX/GB300
  baseboard system (``Systems/HGX_Baseboard_0/Processors/GPU_0``), an HPE Cray EX blade
  (``Systems/Node0/Processors/GPU0``), iDRAC 9 and later;
- HPE iLO 5's ``Chassis/1/Devices`` (``Oem.Hpe.Links.Devices``: ``HpeServerDevice``,
  ``DeviceType: GPU``, ``Location: PCI-E Slot 1``): an XL675d lists its eight A100s only there,
  its standard ``PCIeDevices`` collection being empty;
- ``PCIeDevices`` and their ``PCIeFunctions`` (DMTF PCIeDevice/PCIeFunction): class, vendor and
  device ids, the link.
"""

from __future__ import annotations

import re
from typing import Any

from bringup.redfish.messages import health
from bringup.redfish.placeholders import real_serial

# Not GPUs although HPE types them so: the NVSwitch and the HGX baseboard itself
# ("NVIDIA NV Switch", "NVIDIA HGX A100 8 GPU 40" at "GPU Baseboard" in an XL675d's Devices).
_NOT_A_GPU = re.compile(r"nv ?switch|baseboard|\bhgx\b", re.IGNORECASE)


def _text(value: Any) -> str | None:
    """A string field stripped (iLO pads part numbers and serials with spaces), None when
    empty or a BMC's "Not Available"."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return None if not text or text.lower() in ("not available", "n/a", "unknown") else text


def _state(doc: dict[str, Any]) -> str | None:
    status = doc.get("Status")
    return status.get("State") if isinstance(status, dict) else None


def part_slot(doc: dict[str, Any]) -> str | None:
    """Where a part sits: ``Location.PartLocation.ServiceLabel`` under its
    ``PartLocationContext`` (a GB300 tray's GPU_0 is under ProcessorModule_0 and under
    ProcessorModule_1: the label alone is not unique), else ``Socket``."""
    loc = doc.get("Location")
    if isinstance(loc, dict):
        part = loc.get("PartLocation") if isinstance(loc.get("PartLocation"), dict) else {}
        label = _text(part.get("ServiceLabel"))
        context = _text(loc.get("PartLocationContext"))
        if label:
            return f"{context}/{label}" if context else label
    return _text(doc.get("Socket"))


def gpu_from_processor(doc: dict[str, Any], system_id: str | None) -> dict[str, Any] | None:
    """A ``Processor`` of type GPU -> a GPU record; anything else -> None."""
    if not isinstance(doc, dict) or doc.get("ProcessorType") != "GPU":
        return None
    h, _ = health(doc)
    raw_serial = _text(doc.get("SerialNumber"))
    return {
        "id": doc.get("Id"),
        "system": system_id,
        "slot": part_slot(doc) or doc.get("Id"),
        "model": _text(doc.get("Model")),
        "manufacturer": _text(doc.get("Manufacturer")),
        "serial": real_serial(raw_serial),
        "uuid": _text(doc.get("UUID")),
        "part_number": _text(doc.get("PartNumber")),
        "firmware": _text(doc.get("FirmwareVersion")),
        "health": h,
        "state": _state(doc),
        "source": "Processors",
        **({"serial_reported": raw_serial} if raw_serial and real_serial(raw_serial) is None else {}),
    }


def gpu_from_hpe_device(doc: dict[str, Any]) -> dict[str, Any] | None:
    """An iLO ``HpeServerDevice`` of type GPU (not the NVSwitch, not the baseboard) -> a GPU
    record; an empty slot or any other device -> None."""
    if not isinstance(doc, dict) or doc.get("DeviceType") != "GPU" or _state(doc) == "Absent":
        return None
    name = _text(doc.get("Name")) or ""
    location = _text(doc.get("Location"))
    if _NOT_A_GPU.search(name) or _NOT_A_GPU.search(location or ""):
        return None
    h, _ = health(doc)
    firmware = doc.get("FirmwareVersion")
    current = firmware.get("Current") if isinstance(firmware, dict) else None
    version = _text(current.get("VersionString")) if isinstance(current, dict) else _text(firmware)
    raw_serial = _text(doc.get("SerialNumber"))
    return {
        "id": doc.get("Id"),
        "system": None,
        "slot": location,
        "model": name or None,
        "manufacturer": _text(doc.get("Manufacturer")),
        "serial": real_serial(raw_serial),
        "uuid": None,
        "part_number": _text(doc.get("ProductPartNumber")),
        "firmware": version,
        "health": h,
        "state": _state(doc),
        "source": "Oem.Hpe.Devices",
        **({"serial_reported": raw_serial} if raw_serial and real_serial(raw_serial) is None else {}),
    }


def _pcie_slot(doc: dict[str, Any]) -> str | None:
    slot = doc.get("Slot")
    if isinstance(slot, dict) and (found := part_slot(slot)):
        return found
    if found := part_slot(doc):
        return found
    described = _text(doc.get("Description"))
    return described if _looks_like_slot(described) else None


def _looks_like_slot(value: Any) -> bool:
    """Some BMCs (AMI MegaRAC) say where a device sits only in its Description: "Slot 17"."""
    return isinstance(value, str) and re.search(r"\bslot\b", value, re.IGNORECASE) is not None


def pcie_device(doc: dict[str, Any], functions: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``PCIeDevice`` and its functions -> a PCIe device record. Class and ids come from
    the first function (function 0 is the device's own identity)."""
    h, _ = health(doc)
    iface = doc.get("PCIeInterface") if isinstance(doc.get("PCIeInterface"), dict) else {}
    first = min(functions, key=lambda f: str(f.get("FunctionId", f.get("Id", "")))) if functions else {}
    return {
        "id": doc.get("Id"),
        "name": _text(doc.get("Name")),
        "slot": _pcie_slot(doc),
        "manufacturer": _text(doc.get("Manufacturer")),
        "model": _text(doc.get("Model")),
        "serial": real_serial(_text(doc.get("SerialNumber"))),
        "part_number": _text(doc.get("PartNumber")),
        "firmware": _text(doc.get("FirmwareVersion")),
        "device_type": doc.get("DeviceType"),
        "class": first.get("DeviceClass"),
        "vendor_id": _text(first.get("VendorId")),
        "device_id": _text(first.get("DeviceId")),
        "subsystem_vendor_id": _text(first.get("SubsystemVendorId")),
        "subsystem_id": _text(first.get("SubsystemId")),
        "functions": len(functions),
        "link_width": iface.get("LanesInUse"),
        "max_width": iface.get("MaxLanes"),
        "link_speed": _text(iface.get("PCIeType")),
        "max_speed": _text(iface.get("MaxPCIeType")),
        "health": h,
        "state": _state(doc),
    }


def merge_gpus(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GPUs listed twice (a GB300 tray lists the baseboard's GPUs under the host system's
    Processors too) kept once: by serial or UUID where given, else by system and id."""
    seen: set[tuple[str, str]] = set()
    out = []
    for gpu in found:
        keys = {("uuid", gpu["uuid"])} if gpu.get("uuid") else set()
        if gpu.get("serial"):
            keys.add(("serial", gpu["serial"]))
        if not keys:
            keys = {("at", f"{gpu.get('system')}/{gpu.get('id')}/{gpu.get('slot')}")}
        if keys & seen:
            continue
        seen |= keys
        out.append(gpu)
    return sorted(out, key=lambda g: (_natural(g.get("slot") or ""), _natural(str(g.get("id") or ""))))


def _natural(text: str) -> list[Any]:
    """ "PCI-E Slot 10" after "PCI-E Slot 9"."""
    return [int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", text)]
