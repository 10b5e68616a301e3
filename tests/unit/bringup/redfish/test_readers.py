"""Redfish JSON -> records (pure): serials, event log entries, summaries, firmware; the fixture trees."""

from __future__ import annotations

import json

import pytest

from bringup.redfish import readers
from tests.unit.bringup.redfish.fixture_trees import FIXTURES, fixture


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
    found = readers.node_serial(chassis, system)
    assert (found.serial, found.source) == want


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


def test_fixtures_are_valid_json_with_a_comment_saying_what_they_are():
    for path in FIXTURES.glob("*.json"):
        doc = json.loads(path.read_text())
        assert doc.get("_comment"), path.name


def test_a_firmware_version_loses_its_trailing_newline():
    # A real BMC's FirmwareInventory member read "Version": "4.1(3c)\n".
    entry = readers.firmware_entry({"Id": "CIMC", "Name": "BMC Firmware\n", "Version": "4.1(3c)\n"})
    assert entry["version"] == "4.1(3c)" and entry["name"] == "BMC Firmware"
    assert readers.firmware_entry({"Id": "X"})["version"] is None  # absent stays absent, not ""
