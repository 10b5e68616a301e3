"""Find the pieces of a BMC every operation needs: its system, its manager, its vendor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bringup.redfish.client import RedfishClient
from bringup.redfish.errors import InventoryProblem, UnexpectedResponse
from bringup.redfish.messages import link
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


def locate(client: RedfishClient) -> BmcContext:
    """Read the host's ComputerSystem (``pick_system``) and its Manager, and settle the vendor."""
    root = client.root
    systems = link(root, "Systems")
    if not systems:
        raise UnexpectedResponse(f"{client.endpoint.url}: the service root links no Systems collection")
    members = client.member_links(systems)
    if not members:
        raise UnexpectedResponse(
            f"{client.endpoint.url}: the Systems collection is empty (BMC still starting, or not a server BMC)"
        )
    ep = client.endpoint
    picked = pick_system(members, ep.system, f"host {ep.name} ({ep.url})")
    system_path = picked.rstrip("/")  # iLO writes ids with a trailing slash
    system, linked = client.get_with_links(system_path)
    manager_path = link(system, "Links", "ManagedBy")
    if manager_path is None and (managers := link(root, "Managers")):
        found = client.member_links(managers)
        manager_path = found[0] if found else None
    manager = linked.get(manager_path or "") or client.get_optional(manager_path)
    detected = detect_vendor(root, manager)
    if ep.vendor_forced and ep.vendor:
        name, source = ep.vendor, "inventory"
    else:
        name, source = detected, "detected"
    return BmcContext(
        client=client,
        vendor=vendor_for(name),
        vendor_detected=detected,
        vendor_source=source,
        system_path=system_path,
        system=system,
        manager_path=manager_path.rstrip("/") if manager is not None and manager_path else None,
        manager=manager,
        linked=linked,
    )
