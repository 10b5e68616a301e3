"""Which of a BMC's systems, chassis and managers are the node's (pure).

By the tree's links first (DMTF ComputerSystem ``Links.Chassis``/``Links.ManagedBy``,
Chassis ``Links.ComputerSystems``, Manager ``Links.ManagerForServers``), by type only where
nothing links: a RackMount, Blade or Sled chassis before a Card, Module or Component, a BMC
before an auxiliary controller. Shapes met in real trees (docs/redfish.md, "Which system,
chassis and manager"): an HPE Cray EX blade's system links nothing, its first chassis is a NIC
mezzanine card and its first manager a mezzanine's microcontroller; an HGX or GB300 BMC lists
the GPU baseboard as a second ComputerSystem.
"""

from __future__ import annotations

from typing import Any

from bringup.redfish.messages import links
from bringup.redfish.readers import is_enclosure, is_part

# Manager types that are not the node's BMC (DMTF Manager.ManagerType).
AUXILIARY_MANAGERS = frozenset({"AuxiliaryController", "Service"})


def norm(path: str | None) -> str:
    """A resource path as compared: without the trailing slash iLO writes."""
    return (path or "").rstrip("/")


def is_gpu_baseboard(system: dict[str, Any] | None) -> bool:
    """A ComputerSystem that is a GPU baseboard (HGX's and GB300's ``HGX_Baseboard_0``), not a
    host: it has no ``Boot`` (nothing boots it; every host system of the captured trees has
    one)."""
    return isinstance(system, dict) and not isinstance(system.get("Boot"), dict)


def split_systems(docs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(host systems, GPU baseboards) in the BMC's order. When no system has a ``Boot``, all
    are hosts (a minimal BMC that leaves it out): the baseboard rule must not empty the list."""
    hosts = [d for d in docs if not is_gpu_baseboard(d)]
    if not hosts:
        return list(docs), []
    return hosts, [d for d in docs if is_gpu_baseboard(d)]


def managers_of(
    system_path: str, system: dict[str, Any], managers: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The managers of a system, primary first: those it names (``Links.ManagedBy``), else
    those naming it (``Links.ManagerForServers``), else the BMCs (never an auxiliary
    controller: an EX blade's ``MCU0`` holds an empty log)."""
    by_path = {norm(m.get("@odata.id")): m for m in managers if isinstance(m, dict)}
    named = [by_path[p] for p in map(norm, links(system, "Links", "ManagedBy")) if p in by_path]
    if named:
        return named
    mine = norm(system_path)
    naming = [m for m in by_path.values() if mine in map(norm, links(m, "Links", "ManagerForServers"))]
    if naming:
        return naming
    return [m for m in by_path.values() if m.get("ManagerType") not in AUXILIARY_MANAGERS]


def server_chassis_of(
    system_path: str, system: dict[str, Any], chassis: list[dict[str, Any]]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
    """(the server's own chassis, the enclosure holding it, how they were chosen) among every
    chassis of the BMC, for a system whose own links named none that could be read.

    The chassis naming the system (``Links.ComputerSystems``); else by type: the one server
    chassis (RackMount, Blade, Sled... not a part, not an enclosure), or, of several, the one
    whose ``Id`` is the system's (an EX blade's ``Node1`` chassis for system ``Node1``).
    A part (card, module, component) only when it alone names the system: an Intel S2600's
    risers and PSU FRUs all name it, an EX blade's NIC mezzanines name nothing. The enclosure:
    the one naming the system, else the only one of the BMC."""
    mine = norm(system_path)
    naming = [c for c in chassis if mine in map(norm, links(c, "Links", "ComputerSystems"))]
    servers = [c for c in naming if not is_enclosure(c) and not is_part(c)]
    parts = [c for c in naming if is_part(c)]
    if not servers and len(parts) == 1:
        servers = parts  # the one part naming the system (risers and PSU FRUs name it too: then none)
    enclosures = [c for c in naming if is_enclosure(c)]
    how = "Chassis.Links.ComputerSystems"
    if not servers:
        how = "chassis type"
        candidates = [c for c in chassis if not is_enclosure(c) and not is_part(c) and c.get("ChassisType")]
        same_id = [c for c in candidates if c.get("Id") == system.get("Id")]
        servers = same_id or (candidates if len(candidates) == 1 else [])
        if same_id:
            how = "chassis type and the system's id"
    if not enclosures:
        every = [c for c in chassis if is_enclosure(c)]
        enclosures = every if len(every) == 1 else []
    return (servers[0] if servers else None), (enclosures[0] if enclosures else None), how
