"""Which vendor a BMC is, from the service root and the Manager (pure)."""

from __future__ import annotations

import pytest

from bringup.redfish.vendors.detect import detect_vendor
from tests.unit.bringup.redfish.fixture_trees import fixture


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
