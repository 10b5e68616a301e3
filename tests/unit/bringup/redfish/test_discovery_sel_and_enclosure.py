"""The event log and the enclosure, on a Cisco UCS S3260-shaped tree served over HTTP
(tests/fixtures/redfish/cisco-ucs-s3260*.json): the SEL is read for real (severities that only
an entry's own resource holds, Cisco's timestamp form, what was not read said so) and a node of
a multi-node enclosure is keyed by its own chassis, not the enclosure's."""

from __future__ import annotations

import pytest

from bringup.fleet.store import FleetStore
from bringup.redfish import readers
from bringup.redfish.discovery import HARDWARE_KEYS, SEL_FETCH_MAX, discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from tests.doubles.redfish_server import FakeBmc, serving

PASSWORD = "Cs-s3260-pw"
R = "/redfish/v1"
SYSTEM = f"{R}/Systems/FCH2219V1K4"
ENTRIES = f"{R}/Managers/CIMC/LogServices/SEL/Entries"


def s3260(fixture: str = "cisco-ucs-s3260") -> FakeBmc:
    return FakeBmc.from_fixture(fixture, password=PASSWORD)


def discover(fake: FakeBmc, name: str = "node01"):
    return discover_endpoint(BmcEndpoint(name, fake.url, "root", PASSWORD), TransportOptions(retries=0))


# -- defect 4: the SEL ----------------------------------------------------------------------------


def test_a_critical_entry_whose_severity_only_its_own_resource_holds_is_recorded():
    """The S3260 lists SEL entries without Severity; entry 3 is Critical in its own resource.
    Trusting the collection recorded ``event_log: []``, i.e. read and clean."""
    fake = s3260()
    with serving(fake):
        hw = discover(fake).hardware
    assert [(e["id"], e["severity"], e["created"]) for e in hw["event_log"]] == [
        ("3", "Critical", "2022-06-13T12:19:21"),
        ("2", "Warning", "2022-06-12T23:40:05"),
    ]
    assert hw["event_log"][0]["message"].startswith("Power Supply: PSU2_STATUS")
    assert "event_log_unread" not in hw and hw["event_log_read_at"]
    # Every entry without a severity was fetched once; nothing else was fetched twice.
    assert sorted(r.path for r in fake.calls("GET", f"{ENTRIES}/")) == [f"{ENTRIES}/{i}" for i in "1234"]


@pytest.mark.parametrize(
    ("created", "want"),
    [
        ("2022-06-13 12:19:21 ", "2022-06-13T12:19:21"),  # Cisco CIMC: space, trailing space, no offset
        ("2025-03-03T22:41:19-06:00", "2025-03-03T22:41:19-06:00"),  # Dell iDRAC
        ("2023-06-21T10:23:44Z", "2023-06-21T10:23:44+00:00"),  # HPE iLO
        ("2024-01-05T07:00:01", "2024-01-05T07:00:01"),  # ISO without offset
        ("2024-01-05T07:00:01+0100", "2024-01-05T07:00:01+01:00"),  # offset without colon
        ("2024/01/05 07:00:01", "2024-01-05T07:00:01"),  # IPMI-style slashes
        ("not a date", None),
    ],
)
def test_vendor_timestamp_forms_are_parsed(created, want):
    got = readers.event_entries([{"Id": "1", "Created": created, "Severity": "Critical", "Message": "m"}])
    assert got[0]["created"] == want


def test_entries_are_newest_first_across_timestamp_forms():
    docs = [
        {"Id": "1", "Created": "2022-06-13 12:19:21 ", "Severity": "Critical"},
        {"Id": "2", "Created": "2022-06-14T01:00:00+00:00", "Severity": "Warning"},
    ]
    assert [e["id"] for e in readers.event_entries(docs)] == ["2", "1"]


def _long_sel(fake: FakeBmc, count: int, critical: int) -> None:
    """Replace the SEL with ``count`` entries listed by @odata.id only (severity in each
    entry's own resource); entry ``critical`` is Critical, the rest OK."""
    for path in [p for p in fake.resources if p.startswith(f"{ENTRIES}/")]:
        del fake.resources[path]
    fake.resources[ENTRIES]["Members"] = [{"@odata.id": f"{ENTRIES}/{i}"} for i in range(1, count + 1)]
    for i in range(1, count + 1):
        fake.resources[f"{ENTRIES}/{i}"] = {
            "@odata.id": f"{ENTRIES}/{i}",
            "Id": str(i),
            "Created": f"2022-06-{1 + i // 24:02d} {i % 24:02d}:00:00 ",
            "Severity": "Critical" if i == critical else "OK",
            "Message": f"entry {i}",
        }


def test_a_sel_longer_than_the_fetch_bound_is_recorded_as_not_fully_read():
    count = SEL_FETCH_MAX + 6
    fake = s3260()
    _long_sel(fake, count, critical=count)  # the newest entry is the critical one
    with serving(fake):
        d = discover(fake)
    hw = d.hardware
    assert [e["id"] for e in hw["event_log"]] == [str(count)]
    assert hw["event_log_unread"]["count"] == 6
    assert f"the newest {SEL_FETCH_MAX} were fetched" in hw["event_log_unread"]["why"]
    assert any(w.startswith("event log not fully read") for w in d.warnings)
    fetched = {int(r.path.rsplit("/", 1)[1]) for r in fake.calls("GET", f"{ENTRIES}/")}
    assert fetched == set(range(7, count + 1))  # the newest SEL_FETCH_MAX, never the 6 oldest


def test_an_entry_that_states_no_severity_anywhere_is_unread_not_clean():
    fake = s3260()
    del fake.resources[f"{ENTRIES}/3"]["Severity"]
    with serving(fake):
        hw = discover(fake).hardware
    assert [e["id"] for e in hw["event_log"]] == ["2"]
    assert hw["event_log_unread"] == {
        "count": 1,
        "why": "1 entries state no severity in their own resource either",
    }
    assert "event_log_unread" in HARDWARE_KEYS  # replaced (so dropped) at the next discovery


def test_a_logservices_404_is_reported_as_a_missing_logservices_resource():
    fake = s3260()
    del fake.resources[f"{R}/Managers/CIMC/LogServices"]
    with serving(fake):
        hw = discover(fake).hardware
    assert "event_log" not in hw
    assert hw["unavailable"]["event_log"] == (
        "not supported by this BMC (no LogServices resource at /redfish/v1/Managers/CIMC/LogServices "
        "(HTTP 404))"
    )


# -- defect 6: multi-node enclosures -----------------------------------------------------------------


def test_a_node_of_an_enclosure_is_keyed_by_its_own_chassis_serial():
    fake = s3260()
    with serving(fake):
        d = discover(fake)
    assert (d.serial, d.hardware["serial_source"]) == ("FCH2219V1K4", "chassis")
    assert d.hardware["chassis"]["id"] == "Server1"
    assert d.hardware["enclosure"] == {
        "id": "1",
        "serial": "FOX2211G0QX",
        "manufacturer": "Cisco Systems Inc.",
        "model": "UCSS-S3260",
        "chassis_type": "Enclosure",
    }


def test_the_enclosure_is_found_through_contained_by_when_the_system_links_only_its_node():
    fake = s3260()
    fake.resources[SYSTEM]["Links"]["Chassis"] = [{"@odata.id": f"{R}/Chassis/Server1"}]
    with serving(fake):
        hw = discover(fake).hardware
    assert hw["chassis"]["serial"] == "FCH2219V1K4" and hw["enclosure"]["serial"] == "FOX2211G0QX"


def test_a_system_linking_only_its_enclosure_finds_its_node_chassis_by_the_chassis_links():
    """The node's chassis names the system (``Chassis.Links.ComputerSystems``): it is the
    server chassis although the system does not link it (docs/redfish.md, "Which system,
    chassis and manager")."""
    fake = s3260()
    fake.resources[SYSTEM]["Links"]["Chassis"] = [{"@odata.id": f"{R}/Chassis/1"}]
    with serving(fake):
        d = discover(fake)
    assert (d.serial, d.hardware["serial_source"]) == ("FCH2219V1K4", "chassis")
    assert d.hardware["chassis"]["id"] == "Server1" and d.hardware["enclosure"]["serial"] == "FOX2211G0QX"
    assert d.hardware["located_by"] == [
        "chassis Server1 chosen by Chassis.Links.ComputerSystems: the system links no readable server chassis"
    ]


def test_a_system_linking_only_its_enclosure_is_keyed_by_the_system_serial_when_no_chassis_names_it():
    fake = s3260()
    fake.resources[SYSTEM]["Links"]["Chassis"] = [{"@odata.id": f"{R}/Chassis/1"}]
    fake.resources[f"{R}/Chassis/Server1"]["Links"].pop("ComputerSystems", None)
    fake.resources[f"{R}/Chassis/Server1"]["ChassisType"] = "Module"
    with serving(fake):
        d = discover(fake)
    assert (d.serial, d.hardware["serial_source"]) == ("FCH2219V1K4", "system")
    assert d.hardware["chassis"] is None and d.hardware["enclosure"]["serial"] == "FOX2211G0QX"


def test_a_rack_server_has_no_enclosure():
    fake = FakeBmc.from_fixture("dell-idrac9", password=PASSWORD)
    with serving(fake):
        d = discover(fake)
    assert d.serial == "CNFCP0041M0789" and d.hardware["enclosure"] is None


@pytest.fixture
def store(store_url):
    s = FleetStore(store_url)
    for name, unit in (("s3260-n1", 3), ("s3260-n2", 3)):
        s.enroll(
            name, "r07", "h100-sxm-8x400g", bmc_address=f"10.7.0.{unit}", bmc_vendor="generic", rack_unit=unit
        )
    yield s
    s.close()


def test_two_nodes_of_one_enclosure_are_two_nodes(store):
    """Each S3260 server node has its own BMC; both report the same enclosure. Keyed by the
    enclosure serial, the second was a serial-conflict."""
    one, two = s3260(), s3260("cisco-ucs-s3260-node2")
    with serving(one, two):
        found = [discover(one, "s3260-n1"), discover(two, "s3260-n2")]
    results = [
        store.record_discovery(d.name, d.serial, macs=d.macs, hardware=d.hardware, owned_keys=HARDWARE_KEYS)
        for d in found
    ]
    assert results == ["discovered", "discovered"]
    nodes = {n.name: n for n in store.list_nodes(rack="r07")}
    assert (nodes["s3260-n1"].serial, nodes["s3260-n2"].serial) == ("FCH2219V1K4", "FCH2219V2M7")
    assert {n.hardware["enclosure"]["serial"] for n in nodes.values()} == {"FOX2211G0QX"}
