"""``$expand`` / ``$select``: the fake BMC answers them as DSP0266 says (only what the service
root advertises), and discovery uses them to cut requests without changing what it finds."""

from __future__ import annotations

import base64
import copy
import json
import urllib.error
import urllib.request

import pytest

from bringup.redfish.discovery import discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from tests.doubles.redfish_server import FakeBmc, serving

PASSWORD = "Ex-pand-pw"
SYSTEMS = "/redfish/v1/Systems"


def fake(name: str = "dell-idrac9", expand: bool = True) -> FakeBmc:
    bmc = FakeBmc.from_fixture(name, password=PASSWORD)
    if not expand:
        bmc.resources["/redfish/v1"]["ProtocolFeaturesSupported"].pop("ExpandQuery")
    return bmc


def get(bmc: FakeBmc, target: str) -> tuple[int, dict]:
    auth = base64.b64encode(f"root:{PASSWORD}".encode()).decode()
    req = urllib.request.Request(bmc.url + target, headers={"Authorization": f"Basic {auth}"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize(
    ("query", "status", "expanded"),
    [
        ("$expand=.($levels=1)", 200, True),  # subordinate references: Members
        ("$expand=.", 200, True),
        ("$expand=*", 200, True),  # every reference
        ("$expand=~", 200, False),  # only references under Links: Members are not
        ("$expand=.($levels=2)", 501, None),  # the iDRAC advertises MaxLevels 1
        ("$expand=Members", 400, None),  # not one of * . ~
        ("$expand=.($levels=x)", 400, None),
    ],
)
def test_the_fake_bmc_honours_expand_as_the_spec_says(query, status, expanded):
    bmc = fake()
    with serving(bmc):
        got_status, body = get(bmc, f"{SYSTEMS}?{query.replace('$', '%24')}")
    assert got_status == status
    if expanded is not None:
        assert ("Id" in body["Members"][0]) is expanded


def test_expand_of_a_resource_reaches_one_level_only():
    bmc = fake()
    with serving(bmc):
        _, system = get(bmc, f"{SYSTEMS}/System.Embedded.1?%24expand=.")
        _, linked = get(bmc, f"{SYSTEMS}/System.Embedded.1?%24expand=~")
    assert system["EthernetInterfaces"]["Members"][0].keys() == {"@odata.id"}  # level 2 untouched
    assert "Members" in system["EthernetInterfaces"] and "@odata.id" in system["Links"]["Chassis"][0]
    assert "SerialNumber" not in system["Links"]["Chassis"][0]
    assert linked["Links"]["Chassis"][0]["SerialNumber"] == "CNFCP0041M0789"
    assert linked["EthernetInterfaces"].keys() == {"@odata.id"}


def test_a_service_that_does_not_advertise_expand_or_select_refuses_them():
    bmc = fake("hpe-ilo6")
    with serving(bmc):
        assert get(bmc, f"{SYSTEMS}?%24expand=.")[0] == 501
        assert get(bmc, f"{SYSTEMS}/1?%24select=Id")[0] == 501


def test_select_keeps_the_named_properties_and_the_odata_ones():
    bmc = fake()
    with serving(bmc):
        status, body = get(bmc, f"{SYSTEMS}/System.Embedded.1?%24select=Id,PowerState")
    assert status == 200
    assert set(body) == {"Id", "PowerState"} | {k for k in body if k.startswith("@odata.")}


def _comparable(hardware: dict) -> dict:
    out = copy.deepcopy(hardware)
    for key in ("discovered_at", "event_log_read_at"):
        out.pop(key, None)
    out["bmc"].pop("url")
    return out


def test_expand_cuts_requests_and_changes_nothing_discovery_finds():
    with_expand, without = fake(), fake(expand=False)
    with serving(with_expand, without):
        found = [
            discover_endpoint(BmcEndpoint("n", b.url, "root", PASSWORD), TransportOptions(retries=0))
            for b in (with_expand, without)
        ]
    assert _comparable(found[0].hardware) == _comparable(found[1].hardware)
    assert any("%24expand" in r.query or "$expand" in r.query for r in with_expand.requests)
    assert not any("expand" in r.query for r in without.requests)
    assert len(with_expand.requests) < len(without.requests)
    # The client counts what the BMC saw; the logout comes after discovery's count.
    assert found[0].requests + 1 == len(with_expand.requests)


def test_an_advertised_expand_answered_501_falls_back_to_one_get_per_member():
    inventory = "/redfish/v1/UpdateService/FirmwareInventory"
    bmc = fake()
    bmc.queued[inventory] = [501]  # the service advertised $expand, then refused it
    with serving(bmc):
        d = discover_endpoint(BmcEndpoint("n", bmc.url, "root", PASSWORD), TransportOptions(retries=0))
    assert {f["name"]: f["version"] for f in d.hardware["firmware"]}["BIOS"] == "2.3.5"
    asked = [r.query for r in bmc.calls("GET") if r.path == inventory]
    assert len(asked) == 2 and "expand" in asked[0] and asked[1] == ""
    assert bmc.calls("GET", f"{inventory}/")  # then member by member
