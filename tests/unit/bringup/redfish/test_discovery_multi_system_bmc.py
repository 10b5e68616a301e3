"""A BMC that manages several systems (a multi-node chassis manager): the inventory's
``bmc_system`` (a Systems member id) says which one a host is; with several and none named,
the host fails with that line instead of silently becoming the first system."""

from __future__ import annotations

import copy

import pytest

from bringup.inventory.rack import InventoryHost, duplicates
from bringup.redfish.discovery import discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import InventoryProblem
from tests.doubles.redfish_server import FakeBmc, serving

PASSWORD = "Mn-bmc-pw"
R = "/redfish/v1"
NODE1, NODE2 = f"{R}/Systems/FCH2219V1K4", f"{R}/Systems/FCH2219V2M7"


def two_system_bmc() -> FakeBmc:
    """The S3260 tree with the second node's system and chassis added under the same BMC."""
    bmc = FakeBmc.from_fixture("cisco-ucs-s3260", password=PASSWORD)
    other = FakeBmc.from_fixture("cisco-ucs-s3260-node2", password=PASSWORD)
    for path in (NODE2, f"{R}/Chassis/Server2"):
        bmc.resources[path] = copy.deepcopy(other.resources[path])
    bmc.resources[f"{R}/Systems"]["Members"].append({"@odata.id": NODE2})
    return bmc


def discover(bmc: FakeBmc, system: str | None):
    endpoint = BmcEndpoint("n", bmc.url, "root", PASSWORD, system=system)
    return discover_endpoint(endpoint, TransportOptions(retries=0))


def test_each_host_of_a_multi_system_bmc_is_its_own_node():
    bmc = two_system_bmc()
    with serving(bmc):
        one, two = discover(bmc, "FCH2219V1K4"), discover(bmc, "FCH2219V2M7")
    assert (one.serial, two.serial) == ("FCH2219V1K4", "FCH2219V2M7")
    assert one.hardware["system"]["id"] == "FCH2219V1K4" and two.hardware["chassis"]["id"] == "Server2"


def test_several_systems_and_none_named_is_an_inventory_problem():
    bmc = two_system_bmc()
    with serving(bmc), pytest.raises(InventoryProblem) as err:
        discover(bmc, None)
    assert "manages 2 systems (FCH2219V1K4, FCH2219V2M7)" in str(err.value)
    assert "bmc_system" in str(err.value)


def test_a_bmc_system_the_bmc_does_not_have_is_an_inventory_problem():
    bmc = FakeBmc.from_fixture("cisco-ucs-s3260", password=PASSWORD)
    with serving(bmc), pytest.raises(InventoryProblem, match="bmc_system 'nope' is not among"):
        discover(bmc, "nope")


def test_the_only_system_needs_no_name():
    bmc = FakeBmc.from_fixture("cisco-ucs-s3260", password=PASSWORD)
    with serving(bmc):
        assert discover(bmc, None).serial == "FCH2219V1K4"


def _host(name: str, unit: int, system: str | None) -> InventoryHost:
    return InventoryHost(
        name=name,
        rack="r07",
        bmc_address="10.7.0.9",
        bmc_vendor="generic",
        profile="p",
        rack_unit=unit,
        bmc_username="root",
        bmc_password="env:BMC_PW",
        bmc_system=system,
    )


def test_hosts_sharing_a_bmc_are_duplicates_only_for_the_same_system():
    distinct = [_host("n1", 1, "FCH2219V1K4"), _host("n2", 2, "FCH2219V2M7")]
    assert duplicates(distinct, "r07.yml") == []
    same = [_host("n1", 1, "FCH2219V1K4"), _host("n2", 2, "FCH2219V1K4")]
    assert [p.field for p in duplicates(same, "r07.yml")] == ["bmc_address"]
