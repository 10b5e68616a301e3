"""The hardware inventory a delivery is checked against, read from the BMC at discovery.

Memory (DIMMs), Processors, Storage drives (SimpleStorage where a BMC has no Storage), power
supplies (Chassis ``Power`` or the newer ``PowerSubsystem/PowerSupplies``), fans (``Thermal`` or
``ThermalSubsystem/Fans``) and the Bios attributes, each as a list of plain records stored in
``Node.hardware["inventory"]``. Firmware is discovery's own FirmwareInventory reading.

Vendor shapes (the fixtures under tests/fixtures/redfish/hardware/ hold each):

- Dell iDRAC lists only populated DIMMs (``DIMM.Socket.A1``); HPE iLO lists every slot, an empty
  one with ``Status.State: Absent``, ``CapacityMiB: 0`` and ``Oem.Hpe.DIMMStatus: NotPresent``;
  Supermicro lists populated DIMMs with ``DeviceLocator`` ``P1-DIMMA1``.
- ``Processors`` may list GPUs and other accelerators (``ProcessorType: GPU``): only CPUs count.
- Power supplies: iDRAC and iLO 5 serve the legacy ``Power.PowerSupplies`` array (iLO names
  every supply "HpeServerPowerSupply": its slot is ``MemberId``/``Oem.Hpe.BayNumber``); newer
  firmware (Supermicro X13, iDRAC 7+) serves ``PowerSubsystem``. A missing supply is listed
  with ``Status.State: Absent``: it is a part that is not there, not "no part".

A resource the BMC does not have (no link, 404/405/501) is recorded under ``not_reported``
with why, and its key is left out: never as zero parts. The parsers are pure; ``read_inventory``
is the only function that talks to the BMC.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bringup.redfish.context import BmcContext
from bringup.redfish.errors import NotSupported, UnexpectedResponse, Unreachable
from bringup.redfish.messages import link, links

SECTIONS = ("memory", "processors", "drives", "power_supplies", "fans", "bios_attributes")
_ABSENT_STATES = frozenset({"Absent"})


# -- small pure helpers ---------------------------------------------------------------------------


def _text(value: Any) -> str | None:
    """A string field, stripped; empty and vendor filler ("N/A", "Unknown") are None."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    return None if value.lower() in ("", "n/a", "na", "unknown", "not available", "none") else value


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _status(doc: dict[str, Any]) -> tuple[str | None, str | None]:
    status = doc.get("Status") if isinstance(doc.get("Status"), dict) else {}
    return _text(status.get("Health")), _text(status.get("State"))


def _location(doc: dict[str, Any]) -> str | None:
    """Where a part sits as its label says (DMTF Location.PartLocation.ServiceLabel)."""
    for key in ("Location", "PhysicalLocation"):
        loc = doc.get(key)
        part = loc.get("PartLocation") if isinstance(loc, dict) else None
        if isinstance(part, dict) and (label := _text(part.get("ServiceLabel"))):
            return label
    return None


def _oem(doc: dict[str, Any], vendor: str) -> dict[str, Any]:
    oem = doc.get("Oem")
    inner = oem.get(vendor) if isinstance(oem, dict) else None
    return inner if isinstance(inner, dict) else {}


# -- parsers (one per shape) ------------------------------------------------------------------------


def parse_dimm(doc: dict[str, Any]) -> dict[str, Any]:
    """One Memory resource -> {slot, present, size_gib, speed_mts, ...}."""
    health, state = _status(doc)
    capacity = _number(doc.get("CapacityMiB"))
    hpe_status = _text(_oem(doc, "Hpe").get("DIMMStatus"))
    present = state not in _ABSENT_STATES and hpe_status != "NotPresent" and capacity != 0
    speed = _number(doc.get("OperatingSpeedMhz")) or _number(doc.get("OperatingSpeedMHz"))
    if speed is None and isinstance(doc.get("AllowedSpeedsMHz"), list):
        speeds = [s for s in map(_number, doc["AllowedSpeedsMHz"]) if s]
        speed = max(speeds) if speeds else None
    return {
        "id": _text(doc.get("Id")),
        # DMTF: DeviceLocator is the silkscreen label ("DIMM A1", "PROC 1 DIMM 14", "P1-DIMMA1").
        "slot": _text(doc.get("DeviceLocator")) or _text(doc.get("Name")) or _text(doc.get("Id")),
        "present": present,
        "size_gib": capacity / 1024 if capacity and present else None,
        # OperatingSpeedMhz is MT/s for DDR despite its name (DSP0268 Memory 1.x).
        "speed_mts": int(speed) if speed and present else None,
        "type": _text(doc.get("MemoryDeviceType")),
        "manufacturer": _text(doc.get("Manufacturer")),
        "part_number": _text(doc.get("PartNumber")),
        "serial": _text(doc.get("SerialNumber")) if present else None,
        "health": health,
        "state": state,
    }


def parse_processor(doc: dict[str, Any]) -> dict[str, Any] | None:
    """One Processor resource -> a CPU record, or None for a GPU/accelerator/FPGA entry."""
    kind = _text(doc.get("ProcessorType"))
    if kind is not None and kind != "CPU":
        return None
    health, state = _status(doc)
    cores = _number(doc.get("TotalCores"))
    threads = _number(doc.get("TotalThreads"))
    return {
        "id": _text(doc.get("Id")),
        "socket": _text(doc.get("Socket")) or _text(doc.get("Name")) or _text(doc.get("Id")),
        "present": state not in _ABSENT_STATES,
        "model": _text(doc.get("Model")),
        "cores": int(cores) if cores else None,
        "threads": int(threads) if threads else None,
        "serial": _text(doc.get("SerialNumber")),
        "health": health,
        "state": state,
    }


def parse_drive(doc: dict[str, Any]) -> dict[str, Any]:
    """One Drive resource (Storage/<ctl>/Drives/<id>) -> {slot, model, capacity_gb, ...}."""
    health, state = _status(doc)
    capacity = _number(doc.get("CapacityBytes"))
    return {
        "id": _text(doc.get("Id")),
        "slot": _location(doc) or _text(doc.get("Name")) or _text(doc.get("Id")),
        "present": state not in _ABSENT_STATES,
        "model": _text(doc.get("Model")),
        "serial": _text(doc.get("SerialNumber")),
        "capacity_gb": round(capacity / 1e9, 1) if capacity else None,
        "protocol": _text(doc.get("Protocol")),
        "media": _text(doc.get("MediaType")),
        "firmware": _text(doc.get("Revision")),
        "failure_predicted": doc.get("FailurePredicted") is True,
        "health": health,
        "state": state,
        "source": "Storage",
    }


def parse_simple_storage(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A SimpleStorage controller's Devices (name, model, capacity, status; no serials)."""
    out = []
    for dev in doc.get("Devices") or []:
        if not isinstance(dev, dict):
            continue
        health, state = _status(dev)
        capacity = _number(dev.get("CapacityBytes"))
        out.append(
            {
                "id": None,
                "slot": _text(dev.get("Name")),
                "present": state not in _ABSENT_STATES,
                "model": _text(dev.get("Model")),
                "serial": None,
                "capacity_gb": round(capacity / 1e9, 1) if capacity else None,
                "protocol": None,
                "media": None,
                "firmware": None,
                "failure_predicted": False,
                "health": health,
                "state": state,
                "source": "SimpleStorage",
            }
        )
    return out


def parse_power_supply(doc: dict[str, Any]) -> dict[str, Any]:
    """One supply: an entry of the legacy ``Power.PowerSupplies`` array or a PowerSubsystem
    ``PowerSupply`` resource (the fields that matter share their names)."""
    health, state = _status(doc)
    bay = _oem(doc, "Hpe").get("BayNumber")
    name = _text(doc.get("Name"))
    generic = name in (None, "HpeServerPowerSupply")  # iLO names every supply the same
    dell = _oem(doc, "Dell").get("DellPowerSupply")
    dell_id = _text(dell.get("Id")) if isinstance(dell, dict) else None  # iDRAC's FQDD, PSU.Slot.1
    slot = _location(doc) or dell_id or (f"Bay {bay}" if isinstance(bay, int) else None)
    slot = slot or (None if generic else name) or f"PSU {doc.get('MemberId') or doc.get('Id')}"
    capacity = _number(doc.get("PowerCapacityWatts"))
    return {
        "id": _text(doc.get("MemberId")) or _text(doc.get("Id")),
        "slot": slot,
        "present": state not in _ABSENT_STATES,
        "model": _text(doc.get("Model")),
        "serial": _text(doc.get("SerialNumber")),
        "part_number": _text(doc.get("PartNumber")) or _text(doc.get("SparePartNumber")),
        "firmware": _text(doc.get("FirmwareVersion")),
        "capacity_w": int(capacity) if capacity else None,
        "health": health,
        "state": state,
    }


def parse_power(doc: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A legacy Chassis ``Power`` resource -> (supplies, redundancy groups)."""
    supplies = [parse_power_supply(p) for p in doc.get("PowerSupplies") or [] if isinstance(p, dict)]
    groups = []
    for group in doc.get("Redundancy") or []:
        if isinstance(group, dict):
            health, state = _status(group)
            groups.append(
                {
                    "name": _text(group.get("Name")),
                    "mode": _text(group.get("Mode")),
                    "min_needed": group.get("MinNumNeeded"),
                    "max_supported": group.get("MaxNumSupported"),
                    "health": health,
                    "state": state,
                }
            )
    return supplies, groups


def parse_fan(doc: dict[str, Any]) -> dict[str, Any]:
    """A fan: an entry of ``Thermal.Fans`` (Reading + ReadingUnits) or a ThermalSubsystem
    ``Fan`` resource (SpeedPercent.Reading / SpeedRPM)."""
    health, state = _status(doc)
    reading, units = _number(doc.get("Reading")), _text(doc.get("ReadingUnits"))
    speed = doc.get("SpeedPercent")
    if reading is None and isinstance(speed, dict):
        if (rpm := _number(speed.get("SpeedRPM"))) is not None:
            reading, units = rpm, "RPM"
        elif (pct := _number(speed.get("Reading"))) is not None:
            reading, units = pct, "Percent"
    return {
        "id": _text(doc.get("MemberId")) or _text(doc.get("Id")),
        "name": _location(doc) or _text(doc.get("Name")) or _text(doc.get("FanName")),
        "present": state not in _ABSENT_STATES,
        "reading": reading,
        "units": units,
        "health": health,
        "state": state,
    }


def parse_bios(doc: dict[str, Any]) -> dict[str, Any]:
    """The Bios resource's current ``Attributes`` (name -> value), as the BMC reports them."""
    attributes = doc.get("Attributes")
    if not isinstance(attributes, dict):
        raise UnexpectedResponse("the Bios resource has no Attributes")
    return {str(k): v for k, v in attributes.items() if isinstance(v, (str, int, float, bool)) or v is None}


# -- the reader -------------------------------------------------------------------------------------


def _system_members(ctx: BmcContext, key: str) -> list[dict[str, Any]]:
    path = link(ctx.system, key)
    if not path:
        raise NotSupported(f"the System links no {key}")
    return ctx.client.members(path)


def _memory(ctx: BmcContext) -> list[dict[str, Any]]:
    return [parse_dimm(d) for d in _system_members(ctx, "Memory")]


def _processors(ctx: BmcContext) -> list[dict[str, Any]]:
    return [p for p in map(parse_processor, _system_members(ctx, "Processors")) if p is not None]


def _unreadable_drive(path: str) -> dict[str, Any]:
    ident = path.rstrip("/").rsplit("/", 1)[-1]
    return {
        "id": ident,
        "slot": ident,
        "present": None,
        "health": None,
        "state": None,
        "source": "Storage",
        "unreadable": path,
    }


def _drives(ctx: BmcContext) -> list[dict[str, Any]]:
    storage = link(ctx.system, "Storage")
    if storage:
        out: list[dict[str, Any]] = []
        for controller in ctx.client.members(storage):
            for path in links(controller, "Drives"):
                doc = ctx.client.get_optional(path)
                # A linked drive the BMC cannot show is a part of unknown state, not no part.
                out.append(parse_drive(doc) if doc is not None else _unreadable_drive(path))
        return out
    simple = link(ctx.system, "SimpleStorage")
    if simple:
        return [dev for ctl in ctx.client.members(simple) for dev in parse_simple_storage(ctl)]
    raise NotSupported("the System links neither Storage nor SimpleStorage")


def _power(
    ctx: BmcContext, chassis: dict[str, Any] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    subsystem = link(chassis, "PowerSubsystem")
    if subsystem:
        supplies = link(ctx.client.get(subsystem), "PowerSupplies")
        if supplies:
            return [parse_power_supply(d) for d in ctx.client.members(supplies)], []
    legacy = link(chassis, "Power")
    if legacy:
        return parse_power(ctx.client.get(legacy))
    raise NotSupported("the chassis links neither PowerSubsystem nor Power")


def _fans(ctx: BmcContext, chassis: dict[str, Any] | None) -> list[dict[str, Any]]:
    subsystem = link(chassis, "ThermalSubsystem")
    if subsystem:
        fans = link(ctx.client.get(subsystem), "Fans")
        if fans:
            return [parse_fan(d) for d in ctx.client.members(fans)]
    legacy = link(chassis, "Thermal")
    if legacy:
        doc = ctx.client.get(legacy)
        if not isinstance(doc.get("Fans"), list):
            raise NotSupported("Thermal lists no Fans")
        return [parse_fan(f) for f in doc["Fans"] if isinstance(f, dict)]
    raise NotSupported("the chassis links neither ThermalSubsystem nor Thermal")


def _bios(ctx: BmcContext) -> dict[str, Any]:
    path = link(ctx.system, "Bios")
    if not path:
        raise NotSupported("the System links no Bios")
    return parse_bios(ctx.client.get(path))


def read_inventory(
    ctx: BmcContext, chassis: dict[str, Any] | None, processors: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Every section this BMC reports; each one it does not is in ``not_reported`` with why.
    A BMC that stops answering skips the sections left (``skipped: ...``), no timeout each.
    ``processors``: the System's Processors members when already read (for its GPUs)."""
    out: dict[str, Any] = {}
    not_reported: dict[str, str] = {}
    gone: list[Unreachable] = []

    def why(exc: Exception) -> str:
        # The node record names its BMC already; without it the reason reads the same on every BMC.
        return str(getattr(exc, "message", exc)).replace(f"{ctx.url}: ", "")

    def section(name: str, fn: Callable[[], Any]) -> Any:
        if gone:
            not_reported[name] = f"skipped: {why(gone[0])}"
            return None
        try:
            return fn()
        except NotSupported as exc:
            not_reported[name] = f"not reported by this BMC ({why(exc)})"
        except UnexpectedResponse as exc:
            not_reported[name] = why(exc)
        except Unreachable as exc:
            gone.append(exc)
            not_reported[name] = why(exc)
        return None

    def processors_read(c: BmcContext) -> list[dict[str, Any]]:
        if processors is None:
            return _processors(c)
        return [p for p in map(parse_processor, processors) if p is not None]

    for name, reader in (("memory", _memory), ("processors", processors_read), ("drives", _drives)):
        if (found := section(name, lambda r=reader: r(ctx))) is not None:
            out[name] = found
    power = section("power_supplies", lambda: _power(ctx, chassis))
    if power is not None:
        out["power_supplies"], redundancy = power
        if redundancy:
            out["power_redundancy"] = redundancy
    if (fans := section("fans", lambda: _fans(ctx, chassis))) is not None:
        out["fans"] = fans
    if (bios := section("bios_attributes", lambda: _bios(ctx))) is not None:
        out["bios_attributes"] = bios
    out["not_reported"] = not_reported
    return out
