"""The hardware inventory at discovery (the Redfish half): Memory, Processors,
Drives, power supplies, fans and Bios attributes of Dell, HPE and Supermicro shapes, served over
real HTTP from tests/fixtures/redfish/hardware/; a resource a BMC lacks is "not reported"."""

from __future__ import annotations

import pytest

from bringup.redfish import hardware
from bringup.redfish.discovery import discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from tests.doubles.redfish_server import FakeBmc, load_fixture, serving

PASSWORD = "Hw-inventory-pw"


def inventory(fixture: str, **hooks) -> tuple[dict, FakeBmc]:
    fake = FakeBmc.from_fixture(fixture, password=PASSWORD)
    for path in hooks.get("delete", ()):
        fake.resources.pop(path)
    for path, status in hooks.get("statuses", {}).items():
        fake.statuses[path] = status
    with serving(fake):
        found = discover_endpoint(BmcEndpoint("n1", fake.url, "root", PASSWORD), TransportOptions(retries=0))
    return found.hardware["inventory"], fake


def _present(items: list[dict]) -> list[dict]:
    return [i for i in items if i["present"]]


# -- Dell iDRAC 9 (a real R650 capture) -----------------------------------------------------------


def test_dell_idrac9_inventory():
    inv, _ = inventory("hardware/dell-idrac9")
    assert inv["not_reported"] == {}
    dimms = inv["memory"]
    assert len(dimms) == 16 and all(d["present"] for d in dimms)  # iDRAC lists populated slots only
    a1 = next(d for d in dimms if d["id"] == "DIMM.Socket.A1")
    assert (a1["slot"], a1["size_gib"], a1["speed_mts"], a1["type"], a1["manufacturer"]) == (
        "DIMM A1",
        8.0,
        2933,  # OperatingSpeedMhz: a DDR4-3200 DIMM (AllowedSpeedsMHz [3200]) run at 2933
        "DDR4",
        "Samsung",
    )
    assert a1["serial"] and a1["part_number"]
    assert [(p["socket"], p["cores"], p["threads"]) for p in inv["processors"]] == [
        ("CPU.Socket.1", 28, 56),
        ("CPU.Socket.2", 28, 56),
    ]
    assert inv["processors"][0]["model"] == "Intel(R) Xeon(R) Gold 6330 CPU @ 2.00GHz"
    nvme = [d for d in inv["drives"] if d["protocol"] == "NVMe"]
    assert [(d["slot"], d["capacity_gb"], d["model"]) for d in nvme] == [
        ("PCIe SSD in Slot 8 in Bay 1", 1600.3, "Dell Ent NVMe v2 AGN MU U.2 1.6TB"),
        ("PCIe SSD in Slot 9 in Bay 1", 1600.3, "Dell Ent NVMe v2 AGN MU U.2 1.6TB"),
    ]
    assert len(inv["drives"]) == 6
    psus = inv["power_supplies"]
    assert [(p["slot"], p["model"], p["capacity_w"], p["firmware"], p["health"]) for p in psus] == [
        ("PSU.Slot.1", "PWR SPLY,1400W,RDNT,LTON", 1400, "00.17.28", "OK"),
        ("PSU.Slot.2", "PWR SPLY,1400W,RDNT,LTON", 1400, "00.17.28", "OK"),
    ]
    assert all(p["serial"] for p in psus)
    assert len(inv["fans"]) == 16 and inv["fans"][0] == {
        "id": "0",
        "name": "System Board Fan1A",
        "present": True,
        "reading": 9000.0,
        "units": "RPM",
        "health": "OK",
        "state": "Enabled",
    }
    bios = inv["bios_attributes"]
    assert (bios["SriovGlobalEnable"], bios["ProcVirtualization"], bios["SysProfile"]) == (
        "Disabled",
        "Enabled",
        "PerfOptimized",
    )


# -- HPE iLO 5 (a real DL360 Gen10 Plus capture) --------------------------------------------------


def test_hpe_ilo5_inventory_lists_empty_slots_and_has_no_bios():
    inv, _ = inventory("hardware/hpe-dl360g10p")
    dimms = inv["memory"]
    assert len(dimms) == 32  # iLO lists every slot
    assert [(d["slot"], d["size_gib"], d["speed_mts"], d["serial"]) for d in _present(dimms)] == [
        ("PROC 1 DIMM 14", 16.0, 2933, "74AAF456"),
        ("PROC 2 DIMM 14", 16.0, 2933, next(d["serial"] for d in dimms if d["id"] == "proc2dimm14")),
    ]
    empty = next(d for d in dimms if d["id"] == "proc1dimm1")
    assert (empty["present"], empty["state"], empty["size_gib"], empty["serial"]) == (
        False,
        "Absent",
        None,
        None,
    )
    assert [(p["socket"], p["cores"]) for p in inv["processors"]] == [("Proc 1", 28), ("Proc 2", 28)]
    # iLO names every supply "HpeServerPowerSupply": the slot comes from Oem.Hpe.BayNumber.
    psus = inv["power_supplies"]
    assert [(p["slot"], p["model"], p["serial"], p["capacity_w"]) for p in psus] == [
        ("Bay 1", "865438-B21", "5WBYE0D4DEF1FM", 800),
        ("Bay 2", "865438-B21", "5WBYE0D4DEF1H5", 800),
    ]
    assert inv["power_redundancy"][0]["mode"] == "Failover"
    assert inv["fans"][0]["units"] == "Percent"
    drive = next(d for d in inv["drives"] if d["serial"] == "SS0AN9970I010BC3W")
    assert (drive["slot"], drive["protocol"], drive["capacity_gb"]) == ("Port=1I:Box=1:Bay=1", "NVMe", 960.2)
    # The capture has no Bios resource: recorded as not reported, the key left out.
    assert "bios_attributes" not in inv
    assert inv["not_reported"] == {"bios_attributes": "not reported by this BMC (the System links no Bios)"}


# -- Supermicro X13 (PowerSubsystem / ThermalSubsystem only) -----------------------------------


def test_supermicro_x13_inventory_from_the_newer_subsystems():
    inv, fake = inventory("hardware/supermicro-x13")
    assert inv["not_reported"] == {}
    assert [(d["slot"], d["size_gib"], d["speed_mts"]) for d in inv["memory"]] == [
        ("P1-DIMMA1", 64.0, 4800),
        ("P1-DIMMB1", 64.0, 4800),
        ("P2-DIMMA1", 64.0, 4800),
        ("P2-DIMMB1", 64.0, 4800),
    ]
    # Processors lists an HGX GPU too: only CPUs are processors here.
    assert [p["socket"] for p in inv["processors"]] == ["CPU1", "CPU2"]
    assert [(p["slot"], p["capacity_w"]) for p in inv["power_supplies"]] == [
        (f"PSU{i}", 3000) for i in range(1, 7)
    ]
    assert [(f["name"], f["reading"], f["units"]) for f in inv["fans"]] == [
        (f"FAN{i}", 5600.0, "RPM") for i in range(1, 5)
    ]
    assert inv["bios_attributes"]["SR-IOVSupport"] == "Enabled"
    paths = {r.path for r in fake.requests}
    assert "/redfish/v1/Chassis/1/Power" not in paths and "/redfish/v1/Chassis/1/Thermal" not in paths


# -- what a BMC lacks -------------------------------------------------------------------------------


def test_a_bmc_without_these_resources_reports_none_of_them_never_zero_parts():
    """dell-idrac9's System links Memory and Processors that answer 404, and nothing else."""
    inv, _ = inventory("dell-idrac9")
    assert set(inv) == {"not_reported"}  # no memory: [] (zero DIMMs), no power_supplies: []
    assert set(inv["not_reported"]) == set(hardware.SECTIONS)
    assert inv["not_reported"]["memory"].startswith("not reported by this BMC (GET /redfish/v1/Systems/")
    assert "HTTP 404" in inv["not_reported"]["memory"]
    assert inv["not_reported"]["power_supplies"] == (
        "not reported by this BMC (the chassis links neither PowerSubsystem nor Power)"
    )


def test_a_resource_that_errors_is_not_reported_and_the_rest_is_read():
    inv, _ = inventory(
        "hardware/supermicro-x13",
        statuses={"/redfish/v1/Chassis/1/PowerSubsystem": 500, "/redfish/v1/Systems/1/Memory": 501},
    )
    assert "power_supplies" not in inv and "memory" not in inv
    assert "HTTP 500" in inv["not_reported"]["power_supplies"]
    assert "HTTP 501" in inv["not_reported"]["memory"]
    assert len(inv["processors"]) == 2 and len(inv["fans"]) == 4


def test_a_linked_drive_that_cannot_be_read_is_a_part_of_unknown_state():
    path = "/redfish/v1/Systems/1/Storage/NVMeSSD/Drives/1"
    inv, _ = inventory("hardware/supermicro-x13", delete=[path])
    assert len(inv["drives"]) == 2
    assert inv["drives"][1] == {
        "id": "1",
        "slot": "1",
        "present": None,
        "health": None,
        "state": None,
        "source": "Storage",
        "unreadable": path,
    }


def test_simple_storage_is_read_where_there_is_no_storage():
    fixture = "hardware/dell-idrac9"
    resources, _ = load_fixture(fixture)
    system = dict(resources["/redfish/v1/Systems/System.Embedded.1"])
    system.pop("Storage")
    fake = FakeBmc.from_fixture(fixture, password=PASSWORD)
    fake.resources["/redfish/v1/Systems/System.Embedded.1"] = system
    with serving(fake):
        inv = discover_endpoint(BmcEndpoint("n1", fake.url, "root", PASSWORD), TransportOptions(retries=0))
    drives = inv.hardware["inventory"]["drives"]
    assert {d["source"] for d in drives} == {"SimpleStorage"}
    assert ("PCIe SSD in Slot 8 in Bay 1", 1600.3) in [(d["slot"], d["capacity_gb"]) for d in drives]


# -- the parsers, on shapes the fixtures do not hold ----------------------------------------------


def test_an_absent_power_supply_is_a_part_that_is_missing():
    supply = hardware.parse_power_supply(
        {"MemberId": "1", "Name": "PS2 Status", "Status": {"State": "Absent"}, "Oem": {}}
    )
    assert (supply["slot"], supply["present"], supply["state"]) == ("PS2 Status", False, "Absent")


def test_a_failed_power_supply_keeps_its_serial_and_health():
    supply = hardware.parse_power_supply(
        {
            "MemberId": "0",
            "Name": "HpeServerPowerSupply",
            "SerialNumber": "5WBYE0D4DEF1FM",
            "Oem": {"Hpe": {"BayNumber": 2}},
            "Status": {"Health": "Critical", "State": "UnavailableOffline"},
        }
    )
    assert (supply["slot"], supply["serial"], supply["health"], supply["present"]) == (
        "Bay 2",
        "5WBYE0D4DEF1FM",
        "Critical",
        True,
    )


def test_dimm_speed_falls_back_to_the_allowed_speeds_and_filler_is_none():
    dimm = hardware.parse_dimm(
        {"Id": "3", "CapacityMiB": 32768, "AllowedSpeedsMHz": [4400, 4800], "PartNumber": "N/A", "Status": {}}
    )
    assert (dimm["slot"], dimm["speed_mts"], dimm["part_number"], dimm["present"]) == ("3", 4800, None, True)


def test_bios_without_attributes_is_unexpected():
    with pytest.raises(hardware.UnexpectedResponse):
        hardware.parse_bios({"Id": "Bios"})
