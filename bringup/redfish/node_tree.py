"""Find the node's part of a BMC's tree: its system, its managers, its chassis, the GPU
baseboards beside it and the other hosts of the same BMC (the choices: ``topology.py``).

Requests: an ordinary BMC (one system linking its chassis and manager) costs what it always
did; the Systems members are read only when there are several, every Manager only when the
system names none, every Chassis only when the system links none that is a server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bringup.redfish import readers, topology
from bringup.redfish.client import RedfishClient
from bringup.redfish.context import BmcContext, pick_system
from bringup.redfish.errors import NotSupported, UnexpectedResponse
from bringup.redfish.messages import link, links
from bringup.redfish.topology import norm
from bringup.redfish.vendors import vendor_for
from bringup.redfish.vendors.detect import detect_vendor


@dataclass
class NodeTree:
    ctx: BmcContext
    chassis: dict[str, Any] | None  # the server's own chassis
    enclosure: dict[str, Any] | None  # the enclosure holding it, if any
    managers: list[dict[str, Any]]  # the node's managers, primary (ctx.manager) first
    baseboards: list[dict[str, Any]]  # GPU baseboard systems (HGX_Baseboard_0)
    siblings: list[dict[str, Any]]  # the BMC's other host systems
    notes: list[str] = field(default_factory=list)  # choices made without links, said so


def tolerant_members(
    client: RedfishClient, collection: str, skipped: list[str] | None = None
) -> list[dict[str, Any]]:
    """A collection's members, skipping those that answer 404/405/501 (an Intel S2600 lists a
    ``RackMount`` chassis it does not serve), their paths added to ``skipped``. The collection
    itself must answer."""
    out = []
    for member in client.listed_members(collection):
        if set(member) - {"@odata.id"}:
            out.append(member)
        elif (doc := client.get_optional(member.get("@odata.id"))) is not None:
            out.append(doc)
        elif skipped is not None and isinstance(member.get("@odata.id"), str):
            skipped.append(member["@odata.id"])
    return out


def _systems(client: RedfishClient) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(the host's system path, the GPU baseboards, the BMC's other hosts)."""
    ep = client.endpoint
    systems = link(client.root, "Systems")
    if not systems:
        raise UnexpectedResponse(f"{ep.url}: the service root links no Systems collection")
    paths = client.member_links(systems)
    if not paths:
        raise UnexpectedResponse(
            f"{ep.url}: the Systems collection is empty (BMC still starting, or not a server BMC)"
        )
    where = f"host {ep.name} ({ep.url})"
    if len(paths) == 1:
        return pick_system(paths, ep.system, where).rstrip("/"), [], []
    docs = tolerant_members(client, systems)
    hosts, boards = topology.split_systems(docs)
    if ep.system is not None:
        picked = pick_system(paths, ep.system, where)
    else:
        picked = pick_system([h["@odata.id"] for h in hosts if "@odata.id" in h], None, where)
    others = [h for h in hosts if norm(h.get("@odata.id")) != norm(picked)]
    return norm(picked), [b for b in boards if norm(b.get("@odata.id")) != norm(picked)], others


def _managers(
    client: RedfishClient, system_path: str, system: dict[str, Any], linked: dict
) -> tuple[list, str | None]:
    named = [linked.get(p) or client.get_optional(p) for p in links(system, "Links", "ManagedBy")]
    found = [m for m in named if m is not None]
    if found:
        return found, None
    collection = link(client.root, "Managers")
    if not collection:
        return [], None
    try:
        every = tolerant_members(client, collection)
    except (NotSupported, UnexpectedResponse):
        return [], None
    chosen = topology.managers_of(system_path, system, every)
    how = (
        "Manager.Links.ManagerForServers"
        if chosen and norm(system_path) in map(norm, links(chosen[0], "Links", "ManagerForServers"))
        else "manager type (no manager links the system)"
    )
    return chosen, (
        f"manager {chosen[0].get('Id')} chosen by {how}: the system names no ManagedBy" if chosen else None
    )


def _chassis(client: RedfishClient, ctx: BmcContext) -> tuple[dict | None, dict | None, str | None]:
    system = ctx.system
    paths = links(system, "Links", "Chassis")
    docs = [d for d in (ctx.linked.get(p) or client.get_optional(p) for p in paths) if d is not None]
    server, enclosure = readers.server_chassis(docs)
    note = None
    if server is None and (collection := link(client.root, "Chassis")):
        try:
            every = tolerant_members(client, collection)
        except (NotSupported, UnexpectedResponse):
            every = []
        found, around, how = topology.server_chassis_of(ctx.system_path, system, every)
        server, enclosure = found, enclosure or around
        linked_note = "links no chassis" if not paths else "links no readable server chassis"
        note = (
            f"chassis {found.get('Id')} chosen by {how}: the system {linked_note}"
            if found
            else f"no server chassis: the system {linked_note} and no chassis names it (cards and "
            "modules are not servers); the key is the system's"
        )
    if server is not None and enclosure is None and (up := link(server, "Links", "ContainedBy")):
        parent = client.get_optional(up)
        enclosure = parent if readers.is_enclosure(parent) else None
    return server, enclosure, note


def locate_node(client: RedfishClient) -> NodeTree:
    """The node's system (``bmc_system`` names it; else the only host system, GPU baseboards
    aside), its managers and chassis, chosen by links (``topology.py``)."""
    ep = client.endpoint
    system_path, boards, siblings = _systems(client)
    system, linked = client.get_with_links(system_path)
    managers, manager_note = _managers(client, system_path, system, linked)
    manager = managers[0] if managers else None
    detected = detect_vendor(client.root, manager)
    if ep.vendor_forced and ep.vendor:
        name, source = ep.vendor, "inventory"
    else:
        name, source = detected, "detected"
    ctx = BmcContext(
        client=client,
        vendor=vendor_for(name),
        vendor_detected=detected,
        vendor_source=source,
        system_path=system_path,
        system=system,
        manager_path=norm(manager.get("@odata.id")) if manager and manager.get("@odata.id") else None,
        manager=manager,
        linked=linked,
    )
    chassis, enclosure, chassis_note = _chassis(client, ctx)
    notes = [n for n in (manager_note, chassis_note) if n]
    return NodeTree(ctx, chassis, enclosure, managers, boards, siblings, notes)
