"""`bringup discover`'s table says which provisioning NIC each rule chose and why, or that none
was chosen; the C240 and HPE OCP-only trees of tests/fixtures/redfish/, served over HTTP."""

from __future__ import annotations

import json

from tests.doubles.redfish_server import FakeBmc, FakeBmcServer
from tests.unit.bringup.cli.test_redfish import PASSWORD, Rack


def test_discover_table_shows_each_choice_with_its_rule_and_reason_or_the_ambiguity(tmp_path):
    fakes = {
        "gpu01": FakeBmc.from_fixture("cisco-ucs-c240m5", password=PASSWORD),
        "gpu02": FakeBmc.from_fixture("hpe-dl360g10p-ocp-only", password=PASSWORD),
        "gpu03": FakeBmc.from_fixture("hpe-dl360g10p-ocp-only", password=PASSWORD),
    }
    for path in ("/redfish/v1/Systems/1", "/redfish/v1/Chassis/1"):  # a second server of that shape
        fakes["gpu03"].resources[path]["SerialNumber"] = "CZJ1410B8R"
    with FakeBmcServer(list(fakes.values())):
        rack = Rack(tmp_path, fakes, {"gpu03": {"provisioning_nic": "slot:10:2"}})
        result = rack.run("discover", "--rack", "r07")
        table = result.output
        rows = json.loads(rack.run("discover", "--rack", "r07", "--json").stdout)
    assert "serial-conflict" not in table, table
    assert "L.1 70:0f:6a:d2:3b:14" in table and "onboard: embedded port 1, the first onboard port" in table
    assert "none chosen" in table and "rule onboard: ambiguous (1, 2): set provisioning_nic" in table
    assert "rule slot:10:2: slot 10 port 2" in table
    by_name = {r["name"]: r for r in rows}
    assert by_name["gpu02"]["provisioning_nic"] is None
    assert by_name["gpu02"]["hardware"]["provisioning_nic_flag"]["message"] in by_name["gpu02"]["warnings"]
    assert by_name["gpu03"]["provisioning_nic"]["mac"] == "88:e9:a4:5b:10:21"
    store = rack.store()
    try:
        assert "provisioning_nic_flag" in store.get_node("gpu02").hardware
        settled = store.get_node("gpu03").hardware
        assert settled["provisioning_nic"]["id"] == "2" and "provisioning_nic_flag" not in settled
    finally:
        store.close()
