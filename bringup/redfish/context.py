"""Find the pieces of a BMC every operation needs: its system, its manager, its vendor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bringup.redfish import topology
from bringup.redfish.client import RedfishClient
from bringup.redfish.errors import InventoryProblem, NotSupported, UnexpectedResponse
from bringup.redfish.messages import link, links
from bringup.redfish.topology import norm
from bringup.redfish.vendors import vendor_for
from bringup.redfish.vendors.base import Vendor
from bringup.redfish.vendors.detect import detect_vendor


@dataclass
class BmcContext:
    client: RedfishClient
    vendor: Vendor
    vendor_detected: str
    vendor_source: str  # "detected" or "inventory" (forced)
    system_path: str
    system: dict[str, Any]
    manager_path: str | None
    manager: dict[str, Any] | None
    # Resources the system's Links name, as the BMC expanded them with the system ($expand=~):
    # read them from here rather than GET them again. Empty where the BMC does not expand links.
    linked: dict[str, dict[str, Any]] = field(default_factory=dict)

    def refresh_system(self) -> dict[str, Any]:
        self.system = self.client.get(self.system_path)
        return self.system

    @property
    def url(self) -> str:
        return self.client.endpoint.url


def pick_system(members: list[str], wanted: str | None, where: str) -> str:
    """The Systems member a host is: the one whose id is ``wanted`` (the inventory's
    ``bmc_system``), else the only one. A BMC with several systems and none named is an
    inventory problem: taking the first would make every host of it the same node."""
    ids = {m.rstrip("/").rsplit("/", 1)[-1]: m for m in members}
    if wanted is not None:
        if wanted not in ids:
            raise InventoryProblem(
                f"{where}: bmc_system {wanted!r} is not among the BMC's systems ({', '.join(ids)})"
            )
        return ids[wanted]
    if len(members) > 1:
        raise InventoryProblem(
            f"{where}: the BMC manages {len(members)} systems ({', '.join(ids)}); set bmc_system for this "
            "host to the one it is"
        )
    return members[0]


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


def choose_system(client: RedfishClient) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(the host's system path, the GPU baseboards, the BMC's other hosts): ``bmc_system`` names
    it, else the only host system, GPU baseboards aside (``topology.split_systems``). The
    Systems members are read only when there are several."""
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
        return norm(pick_system(paths, ep.system, where)), [], []
    docs = tolerant_members(client, systems)
    hosts, boards = topology.split_systems(docs)
    if ep.system is not None:
        picked = pick_system(paths, ep.system, where)
    else:
        picked = pick_system([h["@odata.id"] for h in hosts if "@odata.id" in h], None, where)
    others = [h for h in hosts if norm(h.get("@odata.id")) != norm(picked)]
    return norm(picked), [b for b in boards if norm(b.get("@odata.id")) != norm(picked)], others


def choose_managers(
    client: RedfishClient, system_path: str, system: dict[str, Any], linked: dict
) -> tuple[list[dict[str, Any]], str | None]:
    """(the system's managers, primary first; a note when chosen without the system's
    ``ManagedBy``): every Manager is read only when the system names none that answers."""
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


@dataclass
class HostChoice:
    """What ``locate_host`` chose beside the context: discovery records all of it."""

    ctx: BmcContext
    managers: list[dict[str, Any]]  # the node's managers, primary (ctx.manager) first
    baseboards: list[dict[str, Any]]  # GPU baseboard systems (HGX_Baseboard_0)
    siblings: list[dict[str, Any]]  # the BMC's other host systems
    manager_note: str | None


def locate_host(client: RedfishClient) -> HostChoice:
    """The host's system (``choose_system``), its managers (``choose_managers``) and the
    vendor: one choice for discovery, power, boot and virtual media (docs/redfish.md, "Which
    system, chassis and manager")."""
    ep = client.endpoint
    system_path, boards, siblings = choose_system(client)
    system, linked = client.get_with_links(system_path)
    managers, manager_note = choose_managers(client, system_path, system, linked)
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
    return HostChoice(ctx, managers, boards, siblings, manager_note)


def locate(client: RedfishClient) -> BmcContext:
    """Read the host's ComputerSystem and its Manager, and settle the vendor (``locate_host``)."""
    return locate_host(client).ctx
