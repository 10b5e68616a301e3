"""Locating the node in a BMC's tree over HTTP (bringup/redfish/node_tree.py): the requests it
costs, and bmc_system as the override."""

from __future__ import annotations

import pytest

from bringup.redfish.client import RedfishClient
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import InventoryProblem
from bringup.redfish.node_tree import locate_node
from tests.doubles.redfish_server import FakeBmc, serving

PASSWORD = "tree-pw"


def located(fake: FakeBmc, system: str | None = None):
    ep = BmcEndpoint("n", fake.url, "root", PASSWORD, system=system)
    with RedfishClient(ep, TransportOptions(retries=0)) as client:
        return locate_node(client)


def test_an_ordinary_bmc_reads_no_other_systems_managers_or_chassis():
    fake = FakeBmc.from_fixture("hpe-dl325-gen10p", password=PASSWORD)
    with serving(fake):
        tree = located(fake)
    assert tree.ctx.system["Id"] == "1" and tree.chassis["Id"] == "1" and tree.notes == []
    paths = [r.path for r in fake.calls("GET")]
    assert "/redfish/v1/Chassis" not in paths and "/redfish/v1/Managers" not in paths
    assert [p for p in paths if p.startswith("/redfish/v1/Managers")] == ["/redfish/v1/Managers/1"]


def test_bmc_system_stays_the_override_and_several_hosts_still_need_it():
    fake = FakeBmc.from_fixture("hpe-cray-ex235n", password=PASSWORD)
    with serving(fake):
        assert located(fake, "Node1").ctx.system["Id"] == "Node1"
        with pytest.raises(InventoryProblem, match="set bmc_system"):
            located(fake)


def test_the_baseboard_may_still_be_named():
    fake = FakeBmc.from_fixture("supermicro-gb300", password=PASSWORD)
    with serving(fake):
        tree = located(fake, "HGX_Baseboard_0")
    assert tree.ctx.system["Id"] == "HGX_Baseboard_0" and tree.baseboards == []
