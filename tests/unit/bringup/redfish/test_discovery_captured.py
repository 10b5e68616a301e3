"""Discovery on BMC trees captured from real machines (tests/fixtures/redfish/<machine>/,
each with its SOURCE.md): HPE iLO 5 (DL325, XL675d with eight A100s, XL675d with A40s), HPE
Cray EX blades with one, two and four nodes behind one BMC (EX235a, EX235n, EX420, EX425,
EX4252), a Gigabyte server with an AMI MegaRAC BMC, an Intel S2600BPB, OpenBMC, and a
Supermicro GB300 tray whose BMC lists the GPU baseboard as a second ComputerSystem.

Every expected value below was read from the tree's JSON, not from what discovery returned.
"""

from __future__ import annotations

import pytest

from bringup.redfish.discovery import discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import UnexpectedResponse
from tests.doubles.redfish_server import FakeBmc, serving

PASSWORD = "captured-pw"


def discover(name: str, system: str | None = None):
    fake = FakeBmc.from_fixture(name, password=PASSWORD)
    with serving(fake):
        found = discover_endpoint(
            BmcEndpoint("node", fake.url, "root", PASSWORD, system=system), TransportOptions(retries=0)
        )
    return found, fake


def severities(hw: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for entry in hw["event_log"]:
        out[entry["severity"]] = out.get(entry["severity"], 0) + 1
    return out


# -- identity of each machine ------------------------------------------------------------------

# (tree, bmc_system, key, key source, system model, manager id, MACs, GPU count, Critical/Warning)
IDENTITIES = [
    (
        "hpe-dl325-gen10p",
        None,
        "MXQ019020B",
        "chassis",
        "ProLiant DL325 Gen10 Plus",
        "1",
        ["94:40:c9:5c:86:bc", "94:40:c9:5c:86:bd", "14:02:ec:d9:3a:a0", "14:02:ec:d9:3a:a1"],
        0,
        {"Critical": 13},  # IML's newest 40: 13 Critical; the security log (SL) is not an event log
    ),
    (
        "hpe-xl675d-a100",
        None,
        "JS05NP0896",
        "chassis",
        "ProLiant XL675d Gen10 Plus",
        "1",
        [
            "98:03:9b:7f:c3:38",
            "98:03:9b:1e:de:fc",
            "b4:96:91:67:d8:e8",
            "b4:96:91:67:d8:e9",
            "b4:96:91:67:d8:ea",
            "b4:96:91:67:d8:eb",
        ],
        8,
        {"Warning": 6},  # IML 4 Warning + Event 2 Warning
    ),
    (
        "hpe-xl675d-a40",
        None,
        "JS05NP1072",
        "chassis",
        "ProLiant XL675d Gen10 Plus",
        "1",
        ["94:40:c9:6a:42:da", "94:40:c9:6a:42:db", "b4:7a:f1:12:fb:70", "b4:7a:f1:12:fb:71"],
        8,
        {"Critical": 2},
    ),
    (
        "hpe-cray-ex235a",
        None,
        "GE21100074",
        "system",
        "HPE CRAY EX235a",
        "BMC",
        ["00:40:a6:83:3a:52"],
        8,
        {"Critical": 5},
    ),
    (
        "hpe-cray-ex235n",
        "Node0",
        "DP20300012:Node0",
        "system + system id",
        "HPE Cray EX235n",
        "BMC",
        ["00:40:a6:84:d5:ea"],
        4,
        {"Critical": 2, "Warning": 9},
    ),
    (
        "hpe-cray-ex235n",
        "Node1",
        "DP20300012:Node1",
        "system + system id",
        "HPE Cray EX235n",
        "BMC",
        ["00:40:a6:84:d5:eb"],
        4,
        {"Critical": 2, "Warning": 9},
    ),
    (
        "hpe-cray-ex420",
        "Node1",
        "EW21460041:Node1",
        "system + system id",
        "HPE Cray EX420",
        "BMC",
        ["00:40:a6:84:d8:b8"],
        0,
        {"Warning": 8},
    ),
    (
        "hpe-cray-ex425",
        "Node0",
        "HA19340017:Node0",
        "system + system id",
        "HPE CRAY EX425 (MILAN)",
        "BMC",
        ["00:40:a6:83:52:5f"],
        0,
        {"Critical": 2, "Warning": 1},
    ),
    (
        "hpe-cray-ex4252",
        "Node3",
        "PR12378794:Node3",
        "system + system id",
        "HPE EX4252",
        "BMC",
        ["00:40:a6:96:a6:b0"],
        0,
        {"Warning": 8},
    ),
    (
        "gigabyte-h262-z63-ami",
        None,
        "GJG9NF512A000302",
        "system",
        "H262-Z63-00",
        "Self",
        ["b4:2e:99:ba:de:16", "b4:2e:99:ba:de:15"],
        0,
        {},
    ),
    ("intel-s2600bpb", None, "QSBP74100021", "system", "S2600BPB", "BMC", [], 0, {}),
    ("supermicro-gb300", None, "S123456", "system", "GB NVL", None, [], 4, None),
]


@pytest.mark.parametrize(
    ("tree", "system", "key", "source", "model", "manager", "macs", "gpus", "events"),
    IDENTITIES,
    ids=[f"{t[0]}{'-' + t[1] if t[1] else ''}" for t in IDENTITIES],
)
def test_each_captured_machine_is_discovered_as_its_json_says(
    tree, system, key, source, model, manager, macs, gpus, events
):
    found, _ = discover(tree, system)
    hw = found.hardware
    assert (found.serial, hw["serial_source"]) == (key, source)
    assert hw["system"]["model"] == model
    assert hw["bmc"]["manager_id"] == manager
    assert sorted(found.macs) == sorted(macs)
    assert len(hw["gpus"]) == gpus
    if events is None:
        assert "event_log" not in hw  # the capture has no LogServices: unknown, not clean
    else:
        assert severities(hw) == events


def test_the_captured_machines_span_the_shapes_asked_for():
    """At least ten machines of at least five BMC makers, an HGX baseboard, an AMI BMC and a
    blade with several nodes behind one BMC."""
    trees = {t[0] for t in IDENTITIES} | {"openbmc-stock"}
    makers = {t.split("-")[0] + ("-cray" if "-cray-" in t else "") for t in trees}
    assert len(trees) >= 10 and len(makers) >= 5
    assert {"supermicro-gb300", "gigabyte-h262-z63-ami", "hpe-cray-ex235n"} <= trees


# -- GPUs --------------------------------------------------------------------------------------


def test_an_ilo_lists_its_a100s_only_in_its_oem_devices_and_each_is_recorded_with_its_slot():
    """XL675d: ``Chassis/1/PCIeDevices`` is empty; ``Chassis/1/Devices`` (Oem.Hpe.Links.Devices)
    has the eight A100s in PCI-E slots 1-8, the HGX baseboard and the NVSwitch (typed GPU too)."""
    found, _ = discover("hpe-xl675d-a100")
    gpus = found.hardware["gpus"]
    assert [g["slot"] for g in gpus] == [f"PCI-E Slot {i}" for i in range(1, 9)]
    assert {g["model"] for g in gpus} == {"NVIDIA A100-SXM4-40GB"}
    assert {g["firmware"] for g in gpus} == {"92.00.19.00.10"}
    assert [g["serial"] for g in gpus][:3] == ["1323620023536", "1323620016558", "1323820022112"]
    assert gpus[0]["part_number"] == "692-2G506-0200-002" and gpus[0]["health"] == "OK"
    assert all(g["source"] == "Oem.Hpe.Devices" for g in gpus)
    assert found.hardware["pcie_devices"] == []


def test_gpus_of_the_hgx_baseboard_system_are_the_hosts_and_listed_once():
    """GB300: the host's Processors collection is the baseboard's; the four GPUs are recorded once,
    with serial, UUID, firmware, health, and a slot made unique by its PartLocationContext."""
    found, _ = discover("supermicro-gb300")
    gpus = found.hardware["gpus"]
    assert [(g["slot"], g["serial"], g["uuid"]) for g in gpus] == [
        ("HGX_Chassis_0/ProcessorModule_0/GPU_0", "123456", "gpu-0-uuid"),
        ("HGX_Chassis_0/ProcessorModule_0/GPU_1", "234567", "gpu-1-uuid"),
        ("HGX_Chassis_0/ProcessorModule_1/GPU_0", "345678", "gpu-2-uuid"),
        ("HGX_Chassis_0/ProcessorModule_1/GPU_1", "456789", "gpu-3-uuid"),
    ]
    assert {g["model"] for g in gpus} == {"NVIDIA GB300"} and {g["firmware"] for g in gpus} == {
        "97.10.3E.00.05"
    }
    assert (gpus[3]["health"], gpus[3]["state"]) == ("Warning", "InTest")
    # CPU_1 is listed and absent from the capture: said, not silently dropped.
    assert any("HGX_Baseboard_0/Processors/CPU_1" in w for w in found.hardware["warnings"])


def test_all_zero_gpu_serials_are_not_serials():
    """EX235a: eight MI200s whose SerialNumber is 00000000000000."""
    found, _ = discover("hpe-cray-ex235a")
    gpus = found.hardware["gpus"]
    assert [g["slot"] for g in gpus] == [f"GPU{i}" for i in range(8)]
    assert all(g["serial"] is None and g["serial_reported"] == "00000000000000" for g in gpus)


# -- PCIe devices ------------------------------------------------------------------------------


def test_pcie_devices_with_class_vendor_device_and_link():
    """Gigabyte (AMI): one ConnectX-5 in "Slot 17" (said only in its Description), x16 Gen3,
    function 1 a NetworkController of vendor 0x15b3."""
    found, _ = discover("gigabyte-h262-z63-ami")
    (nic,) = found.hardware["pcie_devices"]
    assert (nic["name"], nic["slot"], nic["class"], nic["vendor_id"]) == (
        "MT27800 Family [ConnectX-5]",
        "Slot 17",
        "NetworkController",
        "0x15b3",
    )
    assert (nic["link_width"], nic["max_width"], nic["link_speed"]) == (16, 16, "Gen3")
    assert nic["firmware"] is None  # "Not Available"


def test_ilo_pcie_devices_keep_the_ids_as_the_bmc_wrote_them():
    """DL325: three devices; iLO writes VendorId/DeviceId as decimal strings (4139 = 0x102b)."""
    found, _ = discover("hpe-dl325-gen10p")
    devices = found.hardware["pcie_devices"]
    assert [(d["name"][:26], d["class"], d["vendor_id"], d["device_id"]) for d in devices] == [
        ("Embedded Video Controller", "DisplayController", "4139", "1336"),
        ("Marvell FastLinQ 41000 Ser", "NetworkController", "4215", "32880"),
        ("Marvell FastLinQ 41000 Ser", "NetworkController", "4215", "32880"),
    ]
    assert [d["serial"] for d in devices] == [None, "REE1950F79864", "REE1939F35261"]
    assert [d["firmware"] for d in devices] == ["2.5", "08.50.78", "08.50.78"]


def test_a_bmc_without_pcie_devices_says_so():
    found, _ = discover("hpe-cray-ex235a")
    assert "pcie_devices" not in found.hardware
    assert "PCIeDevices" in found.hardware["unavailable"]["pcie_devices"]


# -- which system, chassis and manager ---------------------------------------------------------


def test_a_system_linking_nothing_gets_its_blade_chassis_and_the_managing_bmc_not_a_card_or_mcu():
    """EX235a: the system has no Links; the Chassis collection starts with Mezz1 (a NIC
    mezzanine Card, serial DW20430082) and Managers with MCU0 (an auxiliary controller with no
    log). The node's chassis is the Blade named like the system, its manager the one whose
    ManagerForServers names the system, and the Critical entries of that BMC's log are read."""
    found, _ = discover("hpe-cray-ex235a")
    hw = found.hardware
    assert hw["chassis"]["id"] == "Node0" and hw["chassis"]["chassis_type"] == "Blade"
    assert hw["enclosure"]["serial"] == "GE21100074"
    assert found.serial != "DW20430082"
    assert hw["bmc"]["manager_id"] == "BMC"
    assert severities(hw) == {"Critical": 5}
    assert any(e["log"] == "Managers/BMC/LogServices/EventLog" for e in hw["event_log"])
    assert hw["located_by"] == [
        "manager BMC chosen by Manager.Links.ManagerForServers: the system names no ManagedBy",
        "chassis Node0 chosen by chassis type and the system's id: the system links no chassis",
    ]


def test_the_hgx_baseboard_system_is_not_a_host_and_needs_no_bmc_system():
    """GB300: Systems lists System_0 and HGX_Baseboard_0 (no Boot); no bmc_system is needed."""
    found, _ = discover("supermicro-gb300")
    assert found.hardware["system"]["id"] == "System_0"


def test_a_linked_chassis_that_is_missing_falls_back_on_links_not_on_a_riser():
    """Intel S2600BPB: the system links Chassis/RackMount, which the capture does not serve;
    the chassis naming the system are a baseboard, a backplane, two risers and two PSU FRUs
    (all Cards). None is the server: the key is the system's serial."""
    found, _ = discover("intel-s2600bpb")
    assert found.hardware["chassis"] is None and found.serial == "QSBP74100021"
    assert "no server chassis" in found.hardware["located_by"][0]


# -- placeholders ------------------------------------------------------------------------------


def test_amis_default_chassis_serial_is_never_the_key_and_the_record_says_so():
    """Gigabyte H262 (AMI MegaRAC): Chassis/Self SerialNumber and the system's SKU are
    01234567890123456789AB; the system serial GJG9NF512A000302 is the key."""
    found, _ = discover("gigabyte-h262-z63-ami")
    assert found.serial == "GJG9NF512A000302"
    assert found.hardware["serial_skipped"] == [
        {
            "source": "chassis",
            "value": "01234567890123456789AB",
            "why": found.hardware["serial_skipped"][0]["why"],
        }
    ]
    assert "AMI" in found.hardware["serial_skipped"][0]["why"]
    assert any("01234567890123456789AB" in w and "placeholder" in w for w in found.hardware["warnings"])


def test_an_enclosure_placeholder_serial_is_not_recorded_as_a_serial():
    """XL675d: the EnclosureChassis serial is 1234567890."""
    found, _ = discover("hpe-xl675d-a100")
    assert found.hardware["enclosure"]["id"] == "EnclosureChassis"
    assert found.hardware["enclosure"]["serial"] is None


def test_a_bmc_reporting_no_serial_anywhere_fails_the_node():
    """OpenBMC as shipped: no SerialNumber, SKU or UUID on the system or its chassis."""
    with pytest.raises(UnexpectedResponse, match="neither the chassis nor the system reports a serial"):
        discover("openbmc-stock")


# -- partial failures keep what was read -------------------------------------------------------


def test_an_adapter_that_answers_404_keeps_the_macs_already_read():
    """EX235n: the blade's NetworkAdapters list HPCNet0-3 whose NetworkDeviceFunctions answer
    404; the management MAC from EthernetInterfaces is kept and the gap is a warning."""
    found, _ = discover("hpe-cray-ex235n", "Node0")
    assert found.macs == ["00:40:a6:84:d5:ea"]
    assert "nics" not in found.hardware["unavailable"]
    assert sum("network adapter HPCNet" in w and "not read" in w for w in found.hardware["warnings"]) == 4


def test_a_network_adapters_collection_that_answers_404_keeps_the_ethernet_interfaces():
    fake = FakeBmc.from_fixture("hpe-dl325-gen10p", password=PASSWORD)
    fake.statuses["/redfish/v1/Chassis/1/NetworkAdapters"] = 404
    with serving(fake):
        found = discover_endpoint(BmcEndpoint("n", fake.url, "root", PASSWORD), TransportOptions(retries=0))
    assert len(found.macs) == 4 and "nics" not in found.hardware["unavailable"]
    assert any(w.startswith("network adapters not read") for w in found.hardware["warnings"])


# -- every log service -------------------------------------------------------------------------


def test_every_event_log_of_the_manager_and_system_is_read_and_each_is_recorded():
    found, _ = discover("hpe-xl675d-a100")
    logs = {log["log"]: log for log in found.hardware["event_logs"]}
    assert set(logs) == {
        "Systems/1/LogServices/IML",
        "Systems/1/LogServices/Event",
        "Managers/1/LogServices/IEL",
    }
    assert all(log["read"] for log in logs.values())
    assert {e["log"] for e in found.hardware["event_log"]} == {
        "Systems/1/LogServices/IML",
        "Systems/1/LogServices/Event",
    }


def test_an_unreadable_log_is_recorded_as_unreadable_never_clean():
    fake = FakeBmc.from_fixture("gigabyte-h262-z63-ami", password=PASSWORD)
    fake.statuses["/redfish/v1/Managers/Self/LogServices/EventLog/Entries"] = 500
    with serving(fake):
        found = discover_endpoint(BmcEndpoint("n", fake.url, "root", PASSWORD), TransportOptions(retries=0))
    hw = found.hardware
    assert hw["event_log"] == [] and hw["event_log_unread"]
    assert "Managers/Self/LogServices/EventLog could not be read" in hw["event_log_unread"]["why"]
    assert {log["log"]: log["read"] for log in hw["event_logs"]}[
        "Managers/Self/LogServices/EventLog"
    ] is False


# -- nodes behind one BMC ----------------------------------------------------------------------


def test_nodes_sharing_a_serial_behind_one_bmc_are_keyed_by_serial_and_system_id_every_time():
    keys = []
    for _ in range(2):
        for node in ("Node2", "Node0", "Node3", "Node1"):
            found, _ = discover("hpe-cray-ex4252", node)
            keys.append(found.serial)
    assert keys[:4] == ["PR12378794:Node2", "PR1237879N:Node0", "PR12378794:Node3", "PR1237879N:Node1"]
    assert keys[4:] == keys[:4]
    found, _ = discover("hpe-cray-ex4252", "Node0")
    assert found.hardware["shared_serial"] == {"serial": "PR1237879N", "systems": ["Node0", "Node1"]}


@pytest.mark.parametrize("order", [("Node0", "Node1"), ("Node1", "Node0")])
def test_two_nodes_of_one_blade_are_two_nodes_in_the_store_whichever_is_read_first(tmp_path, order):
    """EX235n: both systems report DP20300012. Keyed alike, the second recorded was a
    serial-conflict, a different one from run to run."""
    from bringup.fleet.store import FleetStore
    from bringup.redfish.discovery import HARDWARE_KEYS

    store = FleetStore.open(str(tmp_path / "fleet.db"))
    hosts = {"Node0": "gpu-n0", "Node1": "gpu-n1"}
    for name in hosts.values():
        store.enroll(name, "r01", "a100-4x", bmc_address="10.0.0.5", rack_unit=1)
    outcomes = {}
    for _ in range(2):
        for node in order:
            found, _ = discover("hpe-cray-ex235n", node)
            outcomes[node] = store.record_discovery(
                hosts[node], found.serial, macs=found.macs, hardware=found.hardware, owned_keys=HARDWARE_KEYS
            )
    assert outcomes == {"Node0": "refreshed", "Node1": "refreshed"}
    assert {n.name: n.serial for n in store.list_nodes()} == {
        "gpu-n0": "DP20300012:Node0",
        "gpu-n1": "DP20300012:Node1",
    }
    store.close()
