"""Walk one BMC and collect what the fleet store keeps about the node behind it.

The core (system, chassis, manager) must be readable or the node fails; everything else
(NICs, firmware, the event log) is read section by section, and a section this BMC does not
offer is recorded under ``unavailable`` instead of failing the node. ``event_log`` is left
out when the log could not be read, and is an empty list when it was read and held nothing
critical or warning: the burn-in preflight tells the two apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar

from bringup.redfish import hardware as hardware_mod
from bringup.redfish import nics as nic_mod
from bringup.redfish import readers
from bringup.redfish.client import RedfishClient
from bringup.redfish.context import BmcContext, locate
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import NotSupported, UnexpectedResponse, Unreachable
from bringup.redfish.messages import link, links
from bringup.redfish.nic_placement import pcie_device_placement

T = TypeVar("T")

# Keys of Node.hardware that discovery owns (replaced as a whole at every discovery).
HARDWARE_KEYS = (
    "discovered_at",
    "serial_source",
    "system",
    "chassis",
    "enclosure",
    "bmc",
    "power_state",
    "health_rollup",
    "memory",
    "cpu",
    "nics",
    "provisioning_nic",
    "provisioning_nic_flag",
    "infiniband",
    "fibre_channel",
    "firmware",
    "event_log",
    "event_log_read_at",
    "event_log_unread",
    "unavailable",
    "warnings",
    "inventory",
)
_LOG_IDS = ("sel", "iml", "log1", "eventlog")
# Log entries whose severity only their own resource holds are fetched one by one, the newest
# first, at most this many per discovery: 64 GETs cost a few seconds on a slow BMC (~50-200 ms
# each) and cover a busy week of a SEL, while a full 3000-entry SEL would cost minutes per node.
# What is left is recorded as unread (``event_log_unread``), never as clean.
SEL_FETCH_MAX = 64
_ENTRY_FIELDS = ("Id", "Created", "Severity", "Message", "MessageId", "Resolved", "Oem")


@dataclass
class Discovery:
    name: str
    url: str
    serial: str
    macs: list[str]
    hardware: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    requests: int = 0

    @property
    def vendor(self) -> str:
        return self.hardware["bmc"]["vendor"]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class _Sections:
    """Read optional sections; a BMC that stops answering skips the rest instead of timing
    out once per section."""

    def __init__(self) -> None:
        self.unavailable: dict[str, str] = {}
        self.gone: Unreachable | None = None

    def read(self, name: str, fn: Callable[[], T]) -> T | None:
        if self.gone is not None:
            self.unavailable[name] = f"skipped: {self.gone}"
            return None
        try:
            return fn()
        except NotSupported as exc:
            self.unavailable[name] = f"not supported by this BMC ({exc.message})"
        except UnexpectedResponse as exc:
            self.unavailable[name] = str(exc)
        except Unreachable as exc:
            self.gone = exc
            self.unavailable[name] = str(exc)
        return None


def read_chassis(ctx: BmcContext) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the server's own chassis, the enclosure that holds it) of the located system.

    Every chassis the system links is read (a multi-node enclosure links the enclosure and the
    node's own chassis, in either order); the root's first chassis when it links none. An
    enclosure not linked from the system is found through the server chassis' ``ContainedBy``.
    """
    client = ctx.client
    paths = links(ctx.system, "Links", "Chassis")
    if not paths and (collection := link(client.root, "Chassis")):
        paths = client.member_links(collection)[:1]
    docs = [d for d in (ctx.linked.get(p) or client.get_optional(p) for p in paths) if d is not None]
    server, enclosure = readers.server_chassis(docs)
    if server is not None and enclosure is None and (up := link(server, "Links", "ContainedBy")):
        parent = client.get_optional(up)
        enclosure = parent if readers.is_enclosure(parent) else None
    return server, enclosure


def read_nics(
    ctx: BmcContext, chassis: dict[str, Any] | None
) -> tuple[list[nic_mod.Nic], list[dict], list[dict], list[str]]:
    """(Ethernet NICs merged by MAC, InfiniBand functions, Fibre Channel functions, notes)."""
    client, found, ib, fc, notes = ctx.client, [], [], [], []
    eth = link(ctx.system, "EthernetInterfaces")
    if eth:
        members = client.members(eth)
        if not members:
            notes.append(
                "EthernetInterfaces is empty (normal before the first boot on an iDRAC, or on an iLO without "
                "its OS agent): MACs from NetworkAdapters"
            )
        found += [n for n in map(nic_mod.from_ethernet_interface, members) if n]
    for collection in ctx.vendor.network_adapter_collections(ctx, chassis):
        for adapter in client.members(collection):
            got: list[nic_mod.Nic] = []
            functions = link(adapter, "NetworkDeviceFunctions")
            for fn in client.members(functions) if functions else []:
                if nic := nic_mod.from_device_function(adapter, fn):
                    got.append(nic)
                elif record := nic_mod.infiniband_function(adapter, fn):
                    ib.append(record)
                elif record := nic_mod.fibre_channel_function(adapter, fn):
                    fc.append(record)
            ports = link(adapter, "Ports") or link(adapter, "NetworkPorts")
            if not got and ports and not any(r["adapter"] == adapter.get("Id") for r in ib + fc):
                for port in client.members(ports):
                    got += nic_mod.from_port(adapter, port)
            found += got
    if all(n.location is None for n in found):
        # No standard source says where a port sits (HPE's agent-filled EthernetInterfaces):
        # the vendor's OEM view may (iLO's BaseNetworkAdapters: "OCP 3.0 Slot 10").
        found += ctx.vendor.oem_nics(ctx)
    merged = nic_mod.merge(found)
    if merged and all(n.location is None for n in merged):
        _place_from_pcie(ctx, chassis, merged)
    return merged, ib, fc, notes


def _place_from_pcie(ctx: BmcContext, chassis: dict[str, Any] | None, nics: list[nic_mod.Nic]) -> None:
    """Placement's last resort, read only when nothing else placed any port: the PCIe devices
    whose functions link the EthernetInterfaces (``PCIeFunction.Links.EthernetInterfaces``).
    Only placed devices' functions are fetched."""
    client, by_id = ctx.client, {n.id: n for n in nics if n.source == "EthernetInterfaces"}
    try:
        if collection := link(chassis, "PCIeDevices"):
            devices = client.members(collection)
        else:
            devices = [d for d in map(client.get_optional, links(ctx.system, "PCIeDevices")) if d]
        for device in devices:
            loc, slot, _ = pcie_device_placement(device)
            functions = link(device, "PCIeFunctions")
            if loc is None or not functions:
                continue
            for fn in client.members(functions):
                refs = links(fn, "Links", "EthernetInterfaces")
                number = fn.get("FunctionId")
                for ref in refs:
                    nic = by_id.get(ref.rstrip("/").rsplit("/", 1)[-1])
                    if nic is not None and nic.location is None:
                        nic.location, nic.slot = loc, slot
                        # One port per function (multi-port NICs): function 0 is port 1.
                        if nic.port is None and len(refs) == 1 and isinstance(number, int):
                            nic.port = number + 1
    except (NotSupported, UnexpectedResponse):
        return  # no (readable) PCIe inventory: placement stays unknown, the NICs are kept


def read_firmware(ctx: BmcContext) -> list[dict[str, Any]]:
    update = link(ctx.client.root, "UpdateService")
    if not update:
        raise NotSupported("the service root links no UpdateService")
    inventory = link(ctx.client.get(update), "FirmwareInventory")
    if not inventory:
        raise NotSupported("UpdateService has no FirmwareInventory")
    docs = ctx.client.members(inventory)
    return [readers.firmware_entry(d) for d in docs if ctx.vendor.keep_firmware(d)]


def _log_services(ctx: BmcContext) -> tuple[list[str], list[str]]:
    """(Entries collections of the hardware event log, found by searching LogServices; what
    was missing on the way, for the error when none is found)."""
    out, missing = [], []
    for doc in (ctx.manager, ctx.system):
        services = link(doc, "LogServices")
        if not services:
            continue
        try:
            members = ctx.client.members(services)
        except NotSupported as exc:
            missing.append(f"no LogServices resource at {services} (HTTP {exc.status})")
            continue
        for svc in members:
            ident = str(svc.get("Id") or "").lower()
            entries = link(svc, "Entries")
            if entries and (svc.get("LogEntryType") == "SEL" or ident in _LOG_IDS):
                out.append(entries)
    return out, missing


@dataclass
class EventLog:
    entries: list[dict[str, Any]]
    unread: dict[str, Any] | None  # {"count", "why"} when some entries' severity was not read


def _read_entries(ctx: BmcContext, path: str) -> EventLog:
    """One log's Critical/Warning entries. The collection is trusted only for members that
    carry their severity; the others are fetched (newest first, at most SEL_FETCH_MAX)."""
    listed = ctx.client.listed_members(path)
    known = [d for d in listed if readers.severity_read(d)]
    missing = readers.newest_first([d for d in listed if not readers.severity_read(d)])
    fetched, still = [], 0
    for doc in missing[:SEL_FETCH_MAX]:
        own = doc.get("@odata.id")
        full = ctx.client.get_fields(own, _ENTRY_FIELDS) if isinstance(own, str) else {}
        if readers.severity_read(full):
            fetched.append(full)
        else:
            still += 1
    unread = None
    skipped = max(0, len(missing) - SEL_FETCH_MAX)
    if skipped or still:
        why = []
        if skipped:
            why.append(
                f"{path} lists {len(missing)} entries without their severity; the newest "
                f"{SEL_FETCH_MAX} were fetched one by one, {skipped} older ones were not"
            )
        if still:
            why.append(f"{still} entries state no severity in their own resource either")
        unread = {"count": skipped + still, "why": "; ".join(why)}
    return EventLog(readers.event_entries(known + fetched), unread)


def read_event_log(ctx: BmcContext) -> EventLog:
    tried = []
    for path in ctx.vendor.event_log_entries(ctx):
        tried.append(path)
        try:
            return _read_entries(ctx, path)
        except NotSupported:
            continue
    found, missing = _log_services(ctx)
    for path in found:
        if path not in tried:
            return _read_entries(ctx, path)
    if missing:
        raise NotSupported("; ".join(missing))
    if not link(ctx.manager, "LogServices") and not link(ctx.system, "LogServices"):
        raise NotSupported("neither the Manager nor the System links LogServices")
    raise NotSupported("no system event log (SEL) found among the LogServices")


def discover(client: RedfishClient, rule: nic_mod.NicRule | None = None) -> Discovery:
    """Everything the store keeps about one node, from its (connected) BMC."""
    rule = rule or nic_mod.NicRule("onboard")
    ctx = locate(client)
    ep, system, manager = client.endpoint, ctx.system, ctx.manager
    chassis, enclosure = read_chassis(ctx)
    serial, serial_source = readers.node_serial(chassis, system)
    if serial is None:
        raise UnexpectedResponse(f"{ep.url}: neither the chassis nor the system reports a serial number")
    warnings: list[str] = []
    if ep.vendor and ep.vendor != "generic" and ep.vendor != ctx.vendor_detected and not ep.vendor_forced:
        warnings.append(
            f"inventory says bmc_vendor {ep.vendor}, the BMC identifies as {ctx.vendor_detected}; using "
            f"{ctx.vendor_detected} (bmc_vendor_force: true makes the inventory win)"
        )

    sections = _Sections()
    # A system that links only its enclosure: NetworkAdapters are looked for there, as before.
    nic_result = sections.read("nics", lambda: read_nics(ctx, chassis or enclosure))
    nics, ib, fc, notes = nic_result if nic_result else ([], [], [], [])
    warnings += notes
    firmware = sections.read("firmware", lambda: read_firmware(ctx))
    # Memory, CPUs, drives, PSUs, fans, Bios attributes (for `burnin accept`): each part the BMC reports.
    inventory = sections.read("inventory", lambda: hardware_mod.read_inventory(ctx, chassis or enclosure))
    event_log = sections.read("event_log", lambda: read_event_log(ctx))
    read_at = _now() if event_log is not None else None

    ordered = nic_mod.order(nics)
    choice = nic_mod.decide(ordered, rule)
    if choice.flag_kind:
        warnings.append(choice.message)
    if not ordered and "nics" not in sections.unavailable:
        warnings.append("the BMC reports no Ethernet port")

    hardware: dict[str, Any] = {
        "discovered_at": _now(),
        "serial_source": serial_source,
        "system": readers.system_summary(system),
        "chassis": readers.chassis_summary(chassis),
        "enclosure": readers.enclosure_summary(enclosure),
        "bmc": {
            "vendor": ctx.vendor.name,
            "vendor_detected": ctx.vendor_detected,
            "vendor_source": ctx.vendor_source,
            "model": ctx.vendor.bmc_model(manager),
            "firmware_version": manager.get("FirmwareVersion") if manager else None,
            "manager_id": manager.get("Id") if manager else None,
            "redfish_version": client.root.get("RedfishVersion"),
            "url": ep.url,
        },
        "power_state": system.get("PowerState"),
        "health_rollup": readers.system_summary(system)["health_rollup"],
        "memory": readers.memory_summary(system),
        "cpu": readers.cpu_summary(system),
        "nics": [n.record() for n in ordered],
        "provisioning_nic": choice.record(),
        "unavailable": sections.unavailable,
        "warnings": warnings,
    }
    if choice.flag_kind:
        hardware["provisioning_nic_flag"] = choice.flag()
    if ib:
        hardware["infiniband"] = ib
    if fc:
        hardware["fibre_channel"] = fc
    if inventory is not None:
        hardware["inventory"] = inventory
    if firmware is not None:
        hardware["firmware"] = firmware
    if event_log is not None:
        hardware["event_log"] = event_log.entries
        hardware["event_log_read_at"] = read_at
        if event_log.unread:
            hardware["event_log_unread"] = event_log.unread
            warnings.append(f"event log not fully read: {event_log.unread['why']}")
    return Discovery(
        name=ep.name,
        url=ep.url,
        serial=serial,
        macs=[n.mac for n in ordered],
        hardware=hardware,
        warnings=warnings,
        requests=client.requests_made,
    )


def discover_endpoint(
    endpoint: BmcEndpoint, options: TransportOptions | None = None, rule: nic_mod.NicRule | None = None
) -> Discovery:
    with RedfishClient(endpoint, options) as client:
        return discover(client, rule)
