"""Choosing the node's system, manager and chassis by links, by type only without them
(bringup/redfish/topology.py)."""

from __future__ import annotations

from bringup.redfish import topology

R = "/redfish/v1"


def ref(path: str) -> dict:
    return {"@odata.id": path}


def test_a_system_without_boot_is_a_gpu_baseboard_unless_none_boots():
    host = {"@odata.id": f"{R}/Systems/System_0", "Boot": {"BootSourceOverrideTarget": "Pxe"}}
    board = {"@odata.id": f"{R}/Systems/HGX_Baseboard_0"}
    assert topology.split_systems([host, board]) == ([host], [board])
    assert topology.split_systems([board]) == ([board], [])


def test_managers_by_managed_by_then_manager_for_servers_then_not_auxiliary():
    mcu = {"@odata.id": f"{R}/Managers/MCU0", "ManagerType": "AuxiliaryController"}
    bmc = {
        "@odata.id": f"{R}/Managers/BMC",
        "ManagerType": "EnclosureManager",
        "Links": {"ManagerForServers": [ref(f"{R}/Systems/Node0")]},
    }
    other = {"@odata.id": f"{R}/Managers/Other", "ManagerType": "BMC"}
    system = {"Id": "Node0"}
    assert topology.managers_of(f"{R}/Systems/Node0", system, [mcu, other, bmc]) == [bmc]
    named = {"Id": "Node0", "Links": {"ManagedBy": [ref(f"{R}/Managers/Other/")]}}
    assert topology.managers_of(f"{R}/Systems/Node0", named, [mcu, other, bmc]) == [other]
    assert topology.managers_of(f"{R}/Systems/Node9", system, [mcu, bmc]) == [bmc]  # never MCU0


def test_chassis_by_links_then_by_type_and_id_never_a_card():
    card = {"@odata.id": f"{R}/Chassis/Mezz1", "Id": "Mezz1", "ChassisType": "Card", "SerialNumber": "DW1"}
    blade0 = {"@odata.id": f"{R}/Chassis/Node0", "Id": "Node0", "ChassisType": "Blade"}
    blade1 = {"@odata.id": f"{R}/Chassis/Node1", "Id": "Node1", "ChassisType": "Blade"}
    encl = {"@odata.id": f"{R}/Chassis/Enclosure", "Id": "Enclosure", "ChassisType": "Enclosure"}
    server, enclosure, how = topology.server_chassis_of(
        f"{R}/Systems/Node1", {"Id": "Node1"}, [card, blade0, blade1, encl]
    )
    assert (server, enclosure, how) == (blade1, encl, "chassis type and the system's id")
    server, _, _ = topology.server_chassis_of(f"{R}/Systems/NodeX", {"Id": "NodeX"}, [card, blade0, blade1])
    assert server is None  # two blades, neither named like the system: no guess
    naming = {**card, "Links": {"ComputerSystems": [ref(f"{R}/Systems/S1")]}}
    rack = {
        "@odata.id": f"{R}/Chassis/R",
        "Id": "R",
        "ChassisType": "RackMount",
        "Links": {"ComputerSystems": [ref(f"{R}/Systems/S1")]},
    }
    assert topology.server_chassis_of(f"{R}/Systems/S1", {"Id": "S1"}, [naming, rack])[0] == rack
    assert topology.server_chassis_of(f"{R}/Systems/S1", {"Id": "S1"}, [naming])[0] == naming
    assert (
        topology.server_chassis_of(f"{R}/Systems/S1", {"Id": "S1"}, [naming, {**naming, "Id": "Riser"}])[0]
        is None
    )
