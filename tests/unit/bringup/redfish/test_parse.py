"""Pure Redfish JSON -> records: MACs, NIC placement and the provisioning rule, serials,
event logs, vendor detection, boot bodies and read-back judgement, Dell jobs."""

from __future__ import annotations

import json

import pytest

from bringup.redfish import nics, readers
from bringup.redfish.boot import boot_body, judge
from bringup.redfish.errors import redact
from bringup.redfish.vendors import vendor_for
from bringup.redfish.vendors.dell import blocking_jobs, idrac_generation, job_record
from bringup.redfish.vendors.detect import detect_vendor
from bringup.redfish.vendors.hpe import base_adapter_nics
from bringup.redfish.vmedia import image_matches, is_cd
from tests.paths import TESTS

FIXTURES = TESTS / "fixtures" / "redfish"


def fixture(name: str) -> dict:
    from tests.doubles.redfish_server import load_fixture

    return load_fixture(name)[0]


# -- MACs and NIC placement ------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, want",
    [
        ("B0:7B:25:E0:4E:A0", "b0:7b:25:e0:4e:a0"),
        ("b0-7b-25-e0-4e-a0", "b0:7b:25:e0:4e:a0"),
        ("b07b.25e0.4ea0", "b0:7b:25:e0:4e:a0"),
        ("00:00:00:00:00:00", None),
        ("", None),
        (None, None),
        ("b0:7b:25:e0:4e", None),
    ],
)
def test_normalise_mac(raw, want):
    assert nics.normalise_mac(raw) == want


@pytest.mark.parametrize(
    "texts, location, want",
    [
        (["NIC.Embedded.2-1-1"], None, ("embedded", None, 1)),
        (["NIC.Integrated.1-2-1"], None, ("integrated", None, 2)),
        (["NIC.Slot.5-2-1"], None, ("slot", 5, 2)),
        (["NIC.LOM.1.1"], None, ("embedded", None, 1)),  # HPE StructuredName
        (["NIC.Slot.14.2"], None, ("slot", 14, 2)),
        (["x"], {"PartLocation": {"LocationType": "Slot", "LocationOrdinalValue": 3}}, ("slot", 3, None)),
        (["x"], {"PartLocation": {"ServiceLabel": "PCIe Slot 7"}}, ("slot", 7, None)),
        (["Onboard LAN1"], None, ("embedded", None, 1)),
        (["02:aa:bb:cc:00:01", "VNIC 02:aa:bb:cc:00:01"], None, (None, None, None)),
    ],
)
def test_place(texts, location, want):
    assert nics.place(*texts, location=location) == want


def test_ethernet_interface_prefers_the_permanent_mac():
    nic = nics.from_ethernet_interface(
        {
            "Id": "NIC.Integrated.1-2-1",
            "PermanentMACAddress": "30:3E:A7:1B:52:11",
            "MACAddress": "02:00:00:1B:52:11",
        }
    )
    assert (nic.mac, nic.permanent, nic.current_mac) == ("30:3e:a7:1b:52:11", True, "02:00:00:1b:52:11")
    only_current = nics.from_ethernet_interface({"Id": "1", "MACAddress": "3C:EC:EF:2A:4B:10"})
    assert (only_current.mac, only_current.permanent) == ("3c:ec:ef:2a:4b:10", False)
    virtual = {"Id": "ToManager", "MACAddress": "3C:EC:EF:2A:4B:99", "EthernetInterfaceType": "Virtual"}
    assert nics.from_ethernet_interface(virtual) is None


def test_device_functions_skip_infiniband_and_keep_its_guids():
    adapter = {"Id": "InfiniBand.Slot.31"}
    fn = {
        "Id": "InfiniBand.Slot.31-1",
        "NetDevFuncType": "InfiniBand",
        "InfiniBand": {"PermanentPortGUID": "A0:88"},
    }
    assert nics.from_device_function(adapter, fn) is None
    assert nics.infiniband_function(adapter, fn)["port_guid"] == "A0:88"


def test_merge_keeps_the_first_source_and_fills_its_gaps():
    first = nics.Nic(id="1", mac="aa:bb:cc:dd:ee:01", source="EthernetInterfaces", permanent=False)
    second = nics.Nic(
        id="NIC.Slot.2-1-1",
        mac="aa:bb:cc:dd:ee:01",
        source="NetworkDeviceFunctions",
        permanent=True,
        adapter="NIC.Slot.2",
        location="slot",
        slot=2,
    )
    other = nics.Nic(id="2", mac="aa:bb:cc:dd:ee:02", source="Ports", permanent=False)
    merged = nics.merge([first, second, other])
    assert [n.mac for n in merged] == ["aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:02"]
    assert (merged[0].source, merged[0].slot, merged[0].adapter, merged[0].permanent) == (
        "EthernetInterfaces",
        2,
        "NIC.Slot.2",
        True,
    )


def _rack_of_nics() -> list[nics.Nic]:
    ids = [
        "NIC.Slot.5-2-1",
        "NIC.Slot.5-1-1",
        "NIC.Integrated.1-1-1",
        "NIC.Embedded.2-1-1",
        "NIC.Embedded.1-1-1",
    ]
    out = []
    for i, ident in enumerate(ids):
        loc, slot, port = nics.place(ident)
        out.append(
            nics.Nic(
                ident, f"aa:bb:cc:dd:ee:0{i}", "EthernetInterfaces", True, location=loc, slot=slot, port=port
            )
        )
    return out


@pytest.mark.parametrize(
    "rule, want",
    [
        ("onboard", "NIC.Embedded.1-1-1"),
        (None, "NIC.Embedded.1-1-1"),
        ("slot:5", "NIC.Slot.5-1-1"),
        ("slot:5:2", "NIC.Slot.5-2-1"),
        ("fqdd:nic.integrated.1-1-1", "NIC.Integrated.1-1-1"),
        ("mac:AA-BB-CC-DD-EE-03", "NIC.Embedded.2-1-1"),
        ("slot:9", None),
    ],
)
def test_provisioning_rule(rule, want):
    chosen = nics.choose_provisioning(_rack_of_nics(), nics.parse_rule(rule))
    assert (chosen.id if chosen else None) == want


@pytest.mark.parametrize("bad", ["slot:x", "pci:1", "mac:zz", "fqdd:"])
def test_bad_provisioning_rules_say_how_to_write_one(bad):
    with pytest.raises(ValueError, match="slot:N"):
        nics.parse_rule(bad)


def test_hpe_base_network_adapter_ports():
    got = base_adapter_nics(
        {
            "Id": "1",
            "StructuredName": "NIC.LOM.1.1",
            "PhysicalPorts": [{"MacAddress": "98:f2:b3:2a:0e:a0"}, {}],
        }
    )
    assert [(n.mac, n.location, n.port, n.source) for n in got] == [
        ("98:f2:b3:2a:0e:a0", "embedded", 1, "OEM")
    ]


# -- serials, summaries, logs, firmware ---------------------------------------------------------


@pytest.mark.parametrize(
    "chassis, system, want",
    [
        (
            {"SerialNumber": "CNFCP0041M0789"},
            {"SerialNumber": "CNIVC0041M0123"},
            ("CNFCP0041M0789", "chassis"),
        ),
        ({"SerialNumber": "0123456789"}, {"SerialNumber": "S512884X3A27016"}, ("S512884X3A27016", "system")),
        (
            {"SerialNumber": " "},
            {"SerialNumber": "To Be Filled By O.E.M.", "SKU": "7XK4R83"},
            ("7XK4R83", "system SKU"),
        ),
        (None, {"SerialNumber": "000000"}, (None, None)),
    ],
)
def test_node_serial_skips_placeholders(chassis, system, want):
    assert readers.node_serial(chassis, system) == want


def test_event_entries_keep_critical_and_warning_newest_first():
    members = [
        {"Id": "1", "Created": "2025-01-01T00:00:00Z", "Severity": "OK", "Message": "Log cleared."},
        {
            "Id": "2",
            "Created": "2025-01-02T00:00:00+00:00",
            "Severity": "Warning",
            "Message": "fan",
            "MessageId": "FAN1",
        },
        {
            "Id": "3",
            "Created": "2025-01-03T00:00:00-06:00",
            "Severity": "Critical",
            "Message": "psu",
            "MessageId": "PSU3",
        },
        {
            "Id": "4",
            "Created": "2025-01-04T00:00:00Z",
            "Severity": "Critical",
            "Message": "mce",
            "Oem": {"Hpe": {"Repaired": True}},
        },
        {
            "Id": "5",
            "Created": "2025-01-05T00:00:00Z",
            "Severity": "Critical",
            "Message": "old",
            "Resolved": True,
        },
    ]
    got = readers.event_entries(members)
    assert [e["id"] for e in got] == ["3", "2"]
    assert got[0] == {
        "id": "3",
        "created": "2025-01-03T00:00:00-06:00",
        "severity": "Critical",
        "message": "psu",
        "message_id": "PSU3",
    }
    assert readers.event_entries([m for m in members if m["Severity"] == "OK"]) == []


def test_event_entry_with_a_bad_time_keeps_the_entry_without_it():
    got = readers.event_entries([{"Id": 9, "Created": "not a date", "Severity": "Caution", "Message": "x"}])
    assert got == [{"id": "9", "created": None, "severity": "Warning", "message": "x", "message_id": None}]


def test_system_summaries_from_the_dell_fixture():
    system = fixture("dell-idrac9")["/redfish/v1/Systems/System.Embedded.1"]
    summary = readers.system_summary(system)
    assert summary["bios_version"] == "2.3.5" and summary["uuid"] == "4c4c4544-0058-4b10-8034-b7c04f523833"
    assert readers.memory_summary(system) == {"total_gib": 2048, "health": "OK"}
    assert readers.cpu_summary(system)["count"] == 2
    assert readers.memory_summary({}) is None and readers.cpu_summary({"ProcessorSummary": {}}) is None


def test_dell_keeps_running_firmware_only():
    dell = vendor_for("dell")
    assert dell.keep_firmware({"Id": "Installed-159-2.3.5__BIOS.Setup.1-1"})
    assert not dell.keep_firmware({"Id": "Previous-159-2.2.8__BIOS.Setup.1-1"})
    assert vendor_for("generic").keep_firmware({"Id": "Previous-1"})


# -- vendors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, root_path, manager_path, want",
    [
        ("dell-idrac9", "/redfish/v1", "/redfish/v1/Managers/iDRAC.Embedded.1", "dell"),
        ("dell-idrac10", "/redfish/v1", "/redfish/v1/Managers/iDRAC.Embedded.1", "dell"),
        ("hpe-ilo6", "/redfish/v1", "/redfish/v1/Managers/1", "hpe"),
        ("supermicro-x13", "/redfish/v1", "/redfish/v1/Managers/1", "supermicro"),
    ],
)
def test_detect_vendor_from_fixtures(name, root_path, manager_path, want):
    tree = fixture(name)
    assert detect_vendor(tree[root_path], tree[manager_path]) == want


def test_detect_vendor_from_the_manager_when_the_root_is_silent():
    old_root = {"RedfishVersion": "1.0.2"}
    assert detect_vendor(old_root, {"Id": "iDRAC.Embedded.1"}) == "dell"
    assert detect_vendor(old_root, {"Model": "iLO 5"}) == "hpe"
    assert detect_vendor(old_root, {"Oem": {"Supermicro": {}}}) == "supermicro"
    # sushy-tools: the system says "Dell Inc." but the BMC is nobody's: generic.
    assert detect_vendor({"Name": "Redvirt Service"}, {"Model": "Joo Janta 200"}) == "generic"


@pytest.mark.parametrize(
    "model, firmware, want",
    [
        ("16G Monolithic", "7.10.30.00", "iDRAC 9"),
        ("17G Monolithic", None, "iDRAC 10"),
        (None, "1.20.25.00", "iDRAC 10"),
        (None, "6.10.00.00", "iDRAC 9"),
        ("x", "x", None),
    ],
)
def test_idrac_generation(model, firmware, want):
    assert idrac_generation(model, firmware) == want


def test_blocking_jobs_are_pending_configuration_jobs():
    jobs = [
        job_record({"Id": "JID_1", "JobState": "Completed", "JobType": "BIOSConfiguration"}),
        job_record({"Id": "JID_2", "JobState": "Scheduled", "JobType": "BIOSConfiguration"}),
        job_record({"Id": "JID_3", "JobState": "Scheduled", "JobType": "FirmwareUpdate"}),
        job_record({"Id": "JID_4", "JobState": "New", "Name": "Configure: NIC.Slot.5-1-1"}),
    ]
    assert [j["id"] for j in blocking_jobs(jobs)] == ["JID_2", "JID_4"]


# -- boot ------------------------------------------------------------------------------------------


def test_boot_body_sends_the_mode_only_where_needed():
    uefi = {"BootSourceOverrideMode": "UEFI"}
    assert boot_body(vendor_for("dell"), uefi, "Pxe", "UEFI") == {
        "Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}
    }
    assert boot_body(vendor_for("dell"), uefi, "Pxe", "Legacy")["Boot"]["BootSourceOverrideMode"] == "Legacy"
    assert (
        boot_body(vendor_for("supermicro"), uefi, "Pxe", "UEFI")["Boot"]["BootSourceOverrideMode"] == "UEFI"
    )
    assert "BootSourceOverrideMode" not in boot_body(vendor_for("hpe"), {}, "Cd", "Legacy")["Boot"]


def test_judge_boot_read_back():
    ok, warnings, problem = judge(
        {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}, "Pxe", "UEFI", False
    )
    assert (ok, warnings, problem) == (True, [], None)
    ok, warnings, _ = judge(
        {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Continuous"}, "Pxe", "UEFI", False
    )
    assert ok and "every boot" in warnings[0]
    ok, _, problem = judge(
        {"BootSourceOverrideTarget": "Hdd", "BootSourceOverrideEnabled": "Once"}, "Pxe", "UEFI", False
    )
    assert not ok and "Hdd" in problem
    ok, _, problem = judge(
        {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Disabled"}, "Pxe", "UEFI", False
    )
    assert not ok and "Disabled" in problem


def test_virtual_media_helpers():
    assert (
        is_cd({"MediaTypes": ["CD", "DVD"]})
        and is_cd({"Id": "CD1"})
        and not is_cd({"Id": "1", "MediaTypes": ["USBStick"]})
    )
    url = "http://10.0.0.1/images/ubuntu.iso"
    assert image_matches({"Image": url}, url)
    assert image_matches({"Image": "", "ImageName": "ubuntu.iso"}, url)
    assert not image_matches({"Image": "http://10.0.0.1/images/other.iso"}, url)


def test_redact():
    assert redact("user root password hunter22 rejected", ["hunter22"]) == "user root password *** rejected"
    assert redact("abc", [None, ""]) == "abc"


def test_fixtures_are_valid_json_with_a_comment_saying_what_they_are():
    for path in FIXTURES.glob("*.json"):
        doc = json.loads(path.read_text())
        assert doc.get("_comment"), path.name


def test_a_firmware_version_loses_its_trailing_newline():
    # A real BMC's FirmwareInventory member read "Version": "4.1(3c)\n".
    entry = readers.firmware_entry({"Id": "CIMC", "Name": "BMC Firmware\n", "Version": "4.1(3c)\n"})
    assert entry["version"] == "4.1(3c)" and entry["name"] == "BMC Firmware"
    assert readers.firmware_entry({"Id": "X"})["version"] is None  # absent stays absent, not ""
