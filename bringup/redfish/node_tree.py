"""Find the node's part of a BMC's tree: its system, its managers, its chassis, the GPU
baseboards beside it and the other hosts of the same BMC (the choices: ``topology.py``).

The system and managers are chosen in ``context.py`` (power and boot choose the same).
Requests: an ordinary BMC (one system linking its chassis and manager) costs what it always
did; the Systems members are read only when there are several, every Manager only when the
system names none, every Chassis only when the system links none that is a server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bringup.redfish import readers, topology
from bringup.redfish.client import RedfishClient
from bringup.redfish.context import BmcContext, locate_host, tolerant_members
from bringup.redfish.errors import NotSupported, UnexpectedResponse
from bringup.redfish.messages import link, links


@dataclass
class NodeTree:
    ctx: BmcContext
    chassis: dict[str, Any] | None  # the server's own chassis
    enclosure: dict[str, Any] | None  # the enclosure holding it, if any
    managers: list[dict[str, Any]]  # the node's managers, primary (ctx.manager) first
    baseboards: list[dict[str, Any]]  # GPU baseboard systems (HGX_Baseboard_0)
    siblings: list[dict[str, Any]]  # the BMC's other host systems
    notes: list[str] = field(default_factory=list)  # choices made without links, said so


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
    aside) and its managers (``context.locate_host``, the choice power and boot make too), and
    its chassis, chosen by links (``topology.py``)."""
    host = locate_host(client)
    chassis, enclosure, chassis_note = _chassis(client, host.ctx)
    notes = [n for n in (host.manager_note, chassis_note) if n]
    return NodeTree(host.ctx, chassis, enclosure, host.managers, host.baseboards, host.siblings, notes)
