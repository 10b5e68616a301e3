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

from bringup.redfish import devices, readers
from bringup.redfish import hardware as hardware_mod
from bringup.redfish import nics as nic_mod
from bringup.redfish.client import RedfishClient
from bringup.redfish.context import BmcContext
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import NotSupported, UnexpectedResponse, Unreachable
from bringup.redfish.messages import link, links
from bringup.redfish.nic_placement import pcie_device_placement
from bringup.redfish.node_tree import NodeTree, locate_node, tolerant_members
from bringup.redfish.topology import norm

T = TypeVar("T")

# Keys of Node.hardware that discovery owns (replaced as a whole at every discovery).
HARDWARE_KEYS = (
    "discovered_at",
    "serial_source",
    "serial_skipped",
    "shared_serial",
    "located_by",
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
    "event_logs",
    "gpus",
    "pcie_devices",
    "unavailable",
    "warnings",
    "inventory",
)
# Log services that hold no hardware events: who logged in and what they changed (iLO's
# security log ``SL``, OpenBMC's ``AuditLog``), the BMC's own journal, the host's console, dumps
# and POST codes. Every other log service of the node's managers and systems is read.
_NOT_EVENT_LOGS = ("audit", "journal", "hostlogger", "dump", "fdr", "postcode", "security", "diagnostic")
_NOT_EVENT_LOG_IDS = frozenset({"sl"})
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

    def __init__(self, url: str = "") -> None:
        self.unavailable: dict[str, str] = {}
        self.gone: Unreachable | None = None
        self.url = url

    def _why(self, text: str) -> str:
        # The node record names its BMC already; without it the reason reads the same on every BMC.
        return text.replace(f"{self.url}: ", "") if self.url else text

    def read(self, name: str, fn: Callable[[], T]) -> T | None:
        if self.gone is not None:
            self.unavailable[name] = f"skipped: {self._why(str(self.gone))}"
            return None
        try:
            return fn()
        except NotSupported as exc:
            self.unavailable[name] = f"not supported by this BMC ({self._why(exc.message)})"
        except UnexpectedResponse as exc:
            self.unavailable[name] = self._why(str(exc))
        except Unreachable as exc:
            self.gone = exc
            self.unavailable[name] = self._why(str(exc))
        return None


PcieDevices = list[tuple[dict[str, Any], list[dict[str, Any]]]]  # (PCIeDevice, its PCIeFunctions)


def read_nics(
    ctx: BmcContext, chassis: dict[str, Any] | None, pcie: PcieDevices | None = None
) -> tuple[list[nic_mod.Nic], list[dict], list[dict], list[str]]:
    """(Ethernet NICs merged by MAC, InfiniBand functions, Fibre Channel functions, notes).
    ``pcie``: the PCIe devices already read (placement's last resort), None to read them here."""
    client, found, ib, fc, notes = ctx.client, [], [], [], []
    eth = link(ctx.system, "EthernetInterfaces")
    if eth:
        try:
            members = client.members(eth)
        except (NotSupported, UnexpectedResponse) as exc:
            members = None
            notes.append(f"EthernetInterfaces not read: {exc}")
        if members == []:
            notes.append(
                "EthernetInterfaces is empty (normal before the first boot on an iDRAC, or on an iLO without "
                "its OS agent): MACs from NetworkAdapters"
            )
        found += [n for n in map(nic_mod.from_ethernet_interface, members or []) if n]
    # A collection or an adapter that answers an error costs its own ports only: the MACs
    # already read (EthernetInterfaces, the other adapters) are kept and the gap is said.
    for collection in ctx.vendor.network_adapter_collections(ctx, chassis):
        try:
            adapters = client.members(collection)
        except (NotSupported, UnexpectedResponse) as exc:
            notes.append(f"network adapters not read: {exc}")
            continue
        for adapter in adapters:
            try:
                found += _adapter_ports(client, adapter, ib, fc)
            except (NotSupported, UnexpectedResponse) as exc:
                notes.append(f"network adapter {adapter.get('Id')} not read: {exc}")
    if all(n.location is None for n in found):
        # No standard source says where a port sits (HPE's agent-filled EthernetInterfaces):
        # the vendor's OEM view may (iLO's BaseNetworkAdapters: "OCP 3.0 Slot 10").
        found += ctx.vendor.oem_nics(ctx)
    merged = nic_mod.merge(found)
    if merged and all(n.location is None for n in merged):
        _place_from_pcie(ctx, chassis, merged, pcie)
    return merged, ib, fc, notes


def _adapter_ports(
    client: RedfishClient, adapter: dict[str, Any], ib: list[dict], fc: list[dict]
) -> list[nic_mod.Nic]:
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
    return got


def _place_from_pcie(
    ctx: BmcContext, chassis: dict[str, Any] | None, nics: list[nic_mod.Nic], pcie: PcieDevices | None
) -> None:
    """Placement's last resort, used only when nothing else placed any port: the PCIe devices
    whose functions link the EthernetInterfaces (``PCIeFunction.Links.EthernetInterfaces``)."""
    by_id = {n.id: n for n in nics if n.source == "EthernetInterfaces"}
    try:
        pairs = pcie if pcie is not None else read_pcie(ctx, chassis)
    except (NotSupported, UnexpectedResponse):
        return  # no (readable) PCIe inventory: placement stays unknown, the NICs are kept
    for device, functions in pairs:
        loc, slot, _ = pcie_device_placement(device)
        if loc is None:
            continue
        for fn in functions:
            refs = links(fn, "Links", "EthernetInterfaces")
            number = fn.get("FunctionId")
            for ref in refs:
                nic = by_id.get(ref.rstrip("/").rsplit("/", 1)[-1])
                if nic is not None and nic.location is None:
                    nic.location, nic.slot = loc, slot
                    # One port per function (multi-port NICs): function 0 is port 1.
                    if nic.port is None and len(refs) == 1 and isinstance(number, int):
                        nic.port = number + 1


def read_firmware(ctx: BmcContext) -> list[dict[str, Any]]:
    update = link(ctx.client.root, "UpdateService")
    if not update:
        raise NotSupported("the service root links no UpdateService")
    inventory = link(ctx.client.get(update), "FirmwareInventory")
    if not inventory:
        raise NotSupported("UpdateService has no FirmwareInventory")
    docs = ctx.client.members(inventory)
    return [readers.firmware_entry(d) for d in docs if ctx.vendor.keep_firmware(d)]


def is_event_log(service: dict[str, Any]) -> bool:
    """Whether a LogService holds hardware events (SEL, Event, Lclog, IML, IEL, a BIOS SEL...):
    every one but the audit, security, journal, console, dump and POST-code logs."""
    ident = str(service.get("Id") or "").lower()
    if service.get("LogEntryType") == "SEL":
        return True
    return ident not in _NOT_EVENT_LOG_IDS and not any(word in ident for word in _NOT_EVENT_LOGS)


@dataclass
class LogSource:
    path: str  # the Entries collection
    name: str  # "Managers/BMC/LogServices/SEL"
    guessed: bool = False  # a vendor's known path, not listed by the BMC: a 404 there says nothing


def _log_sources(ctx: BmcContext, owners: list[dict[str, Any]]) -> tuple[list[LogSource], list[str]]:
    """(the Entries collections of every event log of the node's managers and systems, the
    vendor's known paths first; what could not be listed, for the record)."""
    out = [LogSource(p, _short(p), guessed=True) for p in ctx.vendor.event_log_entries(ctx)]
    problems: list[str] = []
    for doc in owners:
        services = link(doc, "LogServices")
        if not services:
            continue
        try:
            members = tolerant_members(ctx.client, services)
        except (NotSupported, UnexpectedResponse) as exc:
            status = f" (HTTP {exc.status})" if exc.status else ""
            problems.append(f"no LogServices resource at {services}{status}")
            continue
        for svc in members:
            entries = link(svc, "Entries")
            if entries and is_event_log(svc):
                out.append(LogSource(entries, _short(entries)))
    unique: dict[str, LogSource] = {}
    for source in out:
        key = norm(source.path)
        if key in unique:
            unique[key].guessed = unique[key].guessed and source.guessed
        else:
            unique[key] = source
    return list(unique.values()), problems


def _short(entries: str) -> str:
    """``/redfish/v1/Managers/BMC/LogServices/SEL/Entries`` -> ``Managers/BMC/LogServices/SEL``."""
    path = norm(entries).removeprefix("/redfish/v1/")
    return path.removesuffix("/Entries")


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
    fetched, still, gone = [], 0, 0
    for doc in missing[:SEL_FETCH_MAX]:
        own = doc.get("@odata.id")
        try:
            full = ctx.client.get_fields(own, _ENTRY_FIELDS) if isinstance(own, str) else {}
        except NotSupported:
            gone += 1  # listed, not served: its severity stays unknown
            continue
        if readers.severity_read(full):
            fetched.append(full)
        else:
            still += 1
    unread = None
    skipped = max(0, len(missing) - SEL_FETCH_MAX)
    if skipped or still or gone:
        why = []
        if skipped:
            why.append(
                f"{path} lists {len(missing)} entries without their severity; the newest "
                f"{SEL_FETCH_MAX} were fetched one by one, {skipped} older ones were not"
            )
        if still:
            why.append(f"{still} entries state no severity in their own resource either")
        if gone:
            why.append(f"{gone} entries are listed but not served (HTTP 404)")
        unread = {"count": skipped + still + gone, "why": "; ".join(why)}
    return EventLog(readers.event_entries(known + fetched), unread)


def read_event_log(ctx: BmcContext, owners: list[dict[str, Any]]) -> tuple[EventLog, list[dict[str, Any]]]:
    """Every event log of ``owners`` (the node's managers, its system, its GPU baseboards),
    merged: (the Critical/Warning entries, newest first, with what was left unread; one record
    per log: {"log", "path", "read", "entries"} or {"log", "path", "read": False, "why"}).
    A log that cannot be read is recorded so and makes the whole unread, never clean; none
    readable at all raises NotSupported (``unavailable.event_log``)."""
    sources, problems = _log_sources(ctx, owners)
    logs: list[dict[str, Any]] = []
    found: list[list[dict[str, Any]]] = []
    unread_count, why = 0, []
    for source in sources:
        try:
            log = _read_entries(ctx, source.path)
        except (NotSupported, UnexpectedResponse) as exc:
            if source.guessed and isinstance(exc, NotSupported):
                continue  # a vendor's usual path this BMC does not have
            logs.append({"log": source.name, "path": source.path, "read": False, "why": str(exc)})
            why.append(f"log {source.name} could not be read ({exc})")
            continue
        for entry in log.entries:
            entry["log"] = source.name
        found.append(log.entries)
        logs.append({"log": source.name, "path": source.path, "read": True, "entries": len(log.entries)})
        if log.unread:
            unread_count += log.unread["count"]
            why.append(log.unread["why"])
    if not any(entry["read"] for entry in logs):
        if problems or logs:
            raise NotSupported("; ".join(problems + [e["why"] for e in logs]))
        if not any(link(doc, "LogServices") for doc in owners):
            raise NotSupported("neither the Manager nor the System links LogServices")
        raise NotSupported("no event log (SEL, Event, IML...) found among the LogServices")
    why += problems
    unread = {"count": unread_count, "why": "; ".join(why)} if why else None
    return EventLog(readers.merge_events(*found), unread), logs


def _gpu_sources(ctx: BmcContext, tree: NodeTree) -> list[tuple[str | None, str]]:
    """(system id, Processors collection) of the node's system and its GPU baseboards."""
    out = []
    for doc in [ctx.system, *tree.baseboards]:
        if collection := link(doc, "Processors"):
            out.append((doc.get("Id"), collection))
    return out


def read_gpus(
    ctx: BmcContext,
    tree: NodeTree,
    chassis: dict[str, Any] | None,
    notes: list[str],
    read: dict[str, list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """GPUs from the Processors of the system and its baseboards, and from iLO's
    ``Oem.Hpe.Links.Devices`` (``devices.py``). A Processors collection that answers an
    error raises: GPUs not read are not "no GPUs"."""
    client, found = ctx.client, []
    for system_id, collection in _gpu_sources(ctx, tree):
        missing: list[str] = []
        try:
            docs = tolerant_members(client, collection, missing)
        except NotSupported as exc:
            raise NotSupported(f"no Processors collection at {collection} (HTTP {exc.status})") from None
        if missing:
            notes.append(
                f"processors listed but not served (a GPU among them is not recorded): {', '.join(missing)}"
            )
        if read is not None and system_id == ctx.system.get("Id"):
            read["processors"] = docs  # the hardware inventory's CPUs come from the same GET
        found += [g for g in (devices.gpu_from_processor(d, system_id) for d in docs) if g]
    oem = (chassis or {}).get("Oem")
    if hpe := link(oem.get("Hpe") if isinstance(oem, dict) else None, "Links", "Devices"):
        found += [g for g in map(devices.gpu_from_hpe_device, client.members(hpe)) if g]
    return devices.merge_gpus(found)


def read_pcie(ctx: BmcContext, chassis: dict[str, Any] | None) -> PcieDevices:
    """The PCIe devices of the server's chassis (else those the system links), each with its
    functions (class, vendor and device ids): one GET per device's functions collection (its
    members come expanded where the BMC offers ``$expand``)."""
    client = ctx.client
    if collection := link(chassis, "PCIeDevices"):
        docs = client.members(collection)
    elif listed := links(ctx.system, "PCIeDevices"):
        docs = [d for d in map(client.get_optional, listed) if d is not None]
    else:
        raise NotSupported("neither the chassis nor the system links PCIeDevices")
    out: PcieDevices = []
    for doc in docs:
        fns: list[dict[str, Any]] = []
        if functions := link(doc, "PCIeFunctions"):  # PCIeDevice 1.4+: a collection
            fns = tolerant_members(client, functions)
        elif listed_fns := links(doc, "Links", "PCIeFunctions"):  # before: links to each
            fns = [f for f in map(client.get_optional, listed_fns) if f is not None]
        out.append((doc, fns))
    return out


def shared_serial_key(
    serial: str, source: str | None, system: dict[str, Any], siblings: list[dict[str, Any]]
):
    """(the key, the systems sharing the serial) for a node whose serial another host system of
    the same BMC also reports (an HPE Cray EX235n's two nodes both report the node card's
    serial): the serial and the system's id, the same at every discovery whichever node is
    read first. (serial, []) when nobody shares it."""
    if source not in ("system", "system SKU", "system UUID"):
        return serial, []
    key = {"system": "SerialNumber", "system SKU": "SKU", "system UUID": "UUID"}[source]
    sharing = sorted(
        str(s.get("Id")) for s in siblings if str(s.get(key) or "").strip() == serial and s.get("Id")
    )
    if not sharing:
        return serial, []
    return f"{serial}:{system.get('Id')}", sorted([str(system.get("Id")), *sharing])


def discover(client: RedfishClient, rule: nic_mod.NicRule | None = None) -> Discovery:
    """Everything the store keeps about one node, from its (connected) BMC."""
    rule = rule or nic_mod.NicRule("onboard")
    tree = locate_node(client)
    ctx = tree.ctx
    ep, system, manager = client.endpoint, ctx.system, ctx.manager
    chassis, enclosure = tree.chassis, tree.enclosure
    found = readers.node_serial(chassis, system)
    if found.serial is None:
        skipped = "; ".join(f"{s['source']} {s['value']!r}: {s['why']}" for s in found.skipped)
        raise UnexpectedResponse(
            f"{ep.url}: neither the chassis nor the system reports a serial number"
            + (f" (placeholders skipped: {skipped})" if skipped else "")
        )
    serial, sharing = shared_serial_key(found.serial, found.source, system, tree.siblings)
    warnings: list[str] = list(tree.notes)
    for skip in found.skipped:
        warnings.append(
            f"{skip['source']} serial {skip['value']!r} is a placeholder ({skip['why']}): not the key"
        )
    if sharing:
        warnings.append(
            f"serial {found.serial} is reported by systems {', '.join(sharing)} of this BMC: keyed {serial}"
        )
    if ep.vendor and ep.vendor != "generic" and ep.vendor != ctx.vendor_detected and not ep.vendor_forced:
        warnings.append(
            f"inventory says bmc_vendor {ep.vendor}, the BMC identifies as {ctx.vendor_detected}; using "
            f"{ctx.vendor_detected} (bmc_vendor_force: true makes the inventory win)"
        )

    sections = _Sections(ep.url)
    pcie = sections.read("pcie_devices", lambda: read_pcie(ctx, chassis or enclosure))
    # A system that links only its enclosure: NetworkAdapters are looked for there, as before.
    nic_result = sections.read("nics", lambda: read_nics(ctx, chassis or enclosure, pcie))
    nics, ib, fc, notes = nic_result if nic_result else ([], [], [], [])
    warnings += notes
    firmware = sections.read("firmware", lambda: read_firmware(ctx))
    read: dict[str, list[dict[str, Any]]] = {}
    gpus = sections.read("gpus", lambda: read_gpus(ctx, tree, chassis or enclosure, warnings, read))
    # Memory, CPUs, drives, PSUs, fans, Bios attributes (for `burnin accept`): each part the BMC reports.
    inventory = sections.read(
        "inventory", lambda: hardware_mod.read_inventory(ctx, chassis or enclosure, read.get("processors"))
    )
    owners = [*tree.managers, system, *tree.baseboards]
    logs = sections.read("event_log", lambda: read_event_log(ctx, owners))
    event_log, log_records = logs if logs else (None, None)
    read_at = _now() if event_log is not None else None

    ordered = nic_mod.order(nics)
    choice = nic_mod.decide(ordered, rule)
    if choice.flag_kind:
        warnings.append(choice.message)
    if not ordered and "nics" not in sections.unavailable:
        warnings.append("the BMC reports no Ethernet port")

    hardware: dict[str, Any] = {
        "discovered_at": _now(),
        "serial_source": found.source + (" + system id" if sharing else ""),
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
    if found.skipped:
        hardware["serial_skipped"] = found.skipped
    if sharing:
        hardware["shared_serial"] = {"serial": found.serial, "systems": sharing}
    if tree.notes:
        hardware["located_by"] = tree.notes
    if choice.flag_kind:
        hardware["provisioning_nic_flag"] = choice.flag()
    if ib:
        hardware["infiniband"] = ib
    if fc:
        hardware["fibre_channel"] = fc
    if inventory is not None:
        hardware["inventory"] = inventory
    if gpus is not None:
        hardware["gpus"] = gpus
    if pcie is not None:
        hardware["pcie_devices"] = [devices.pcie_device(doc, fns) for doc, fns in pcie]
    if firmware is not None:
        hardware["firmware"] = firmware
    if event_log is not None:
        hardware["event_log"] = event_log.entries
        hardware["event_log_read_at"] = read_at
        hardware["event_logs"] = log_records
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
