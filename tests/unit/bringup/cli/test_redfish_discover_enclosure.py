"""`bringup discover` on a Cisco S3260 enclosure: its two server nodes, one BMC
each, are two nodes keyed by their own chassis; a SEL that could not be fully read says so
in the table and the JSON; a BMC managing both systems serves two hosts through bmc_system."""

from __future__ import annotations

import copy
import json

from tests.doubles.redfish_server import FakeBmc, FakeBmcServer
from tests.unit.bringup.cli.test_redfish import PASSWORD, Rack

R = "/redfish/v1"
ENTRIES = f"{R}/Managers/CIMC/LogServices/SEL/Entries"


def test_two_nodes_of_one_enclosure_and_an_unread_sel(tmp_path):
    one = FakeBmc.from_fixture("cisco-ucs-s3260", password=PASSWORD)
    two = FakeBmc.from_fixture("cisco-ucs-s3260-node2", password=PASSWORD)
    # Node 2's SEL lists 70 entries by @odata.id only: the newest 64 are fetched, 6 are not.
    two.resources[ENTRIES]["Members"] = [{"@odata.id": f"{ENTRIES}/{i}"} for i in range(1, 71)]
    for i in range(1, 71):
        two.resources[f"{ENTRIES}/{i}"] = {
            "Id": str(i),
            "Severity": "OK",
            "Created": f"2022-06-13 {i % 24:02d}:00:00 ",
        }
    with FakeBmcServer([one, two]):
        rack = Rack(tmp_path, {"s3260-n1": one, "s3260-n2": two})
        table = rack.run("discover", "--rack", "r07")
        again = rack.run("discover", "--rack", "r07", "--json")
    assert table.exit_code == 0, table.output
    assert "2 of 2 node(s) discovered" in table.stdout and "6 unread" in table.stdout
    rows = {r["name"]: r for r in json.loads(again.stdout)}
    assert {n: (r["result"], r["serial"]) for n, r in rows.items()} == {
        "s3260-n1": ("refreshed", "FCH2219V1K4"),
        "s3260-n2": ("refreshed", "FCH2219V2M7"),
    }
    assert rows["s3260-n1"]["event_log"][0]["severity"] == "Critical"
    assert rows["s3260-n2"]["event_log"] == [] and rows["s3260-n2"]["event_log_unread"]["count"] == 6


def test_one_bmc_managing_two_systems_serves_two_hosts(tmp_path):
    bmc = FakeBmc.from_fixture("cisco-ucs-s3260", password=PASSWORD)
    other = FakeBmc.from_fixture("cisco-ucs-s3260-node2", password=PASSWORD)
    for path in (f"{R}/Systems/FCH2219V2M7", f"{R}/Chassis/Server2"):
        bmc.resources[path] = copy.deepcopy(other.resources[path])
    bmc.resources[f"{R}/Systems"]["Members"].append({"@odata.id": f"{R}/Systems/FCH2219V2M7"})
    with FakeBmcServer([bmc]):
        named = Rack(
            tmp_path / "named",
            {"n1": bmc, "n2": bmc},
            {"n1": {"bmc_system": "FCH2219V1K4"}, "n2": {"bmc_system": "FCH2219V2M7"}},
        )
        rows = {r["name"]: r for r in json.loads(named.run("discover", "--rack", "r07", "--json").stdout)}
        unnamed = Rack(tmp_path / "unnamed", {"n1": bmc})
        refused = json.loads(unnamed.run("discover", "--rack", "r07", "--json").stdout)[0]
    assert {n: (r["result"], r["serial"]) for n, r in rows.items()} == {
        "n1": ("discovered", "FCH2219V1K4"),
        "n2": ("discovered", "FCH2219V2M7"),
    }
    assert refused["ok"] is False and refused["error"]["kind"] == "inventory problem"
    assert "set bmc_system" in refused["error"]["message"]
