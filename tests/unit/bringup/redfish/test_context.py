"""Locating the host for power, boot and virtual media (bringup/redfish/context.py): the same
choice of system as discovery (bringup/redfish/topology.py), on captured trees served by the
fake BMC; ``bmc_system`` stays the override."""

from __future__ import annotations

import pytest

from bringup.redfish.boot import set_boot_once
from bringup.redfish.client import RedfishClient
from bringup.redfish.context import locate
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import InventoryProblem
from bringup.redfish.power import PowerControl, PowerOptions
from tests.doubles.redfish_server import FakeBmc, serving

PASSWORD = "context-pw"
HOST = "/redfish/v1/Systems/System_0"


def client_for(fake: FakeBmc, system: str | None = None) -> RedfishClient:
    return RedfishClient(
        BmcEndpoint("n", fake.url, "root", PASSWORD, system=system), TransportOptions(retries=0)
    )


def test_a_boot_override_on_a_gb300_tray_patches_the_host_not_the_gpu_baseboard():
    fake = FakeBmc.from_fixture("supermicro-gb300", password=PASSWORD)
    # The host links a settings object the capture does not hold: served here, as the BMC does.
    settings = fake.resources[HOST]["@Redfish.Settings"]["SettingsObject"]["@odata.id"]
    fake.resources[settings] = {"@odata.id": settings, "Boot": {}}
    with serving(fake), client_for(fake) as client:
        ctx = locate(client)
        result = set_boot_once(ctx, "Pxe", "uefi")
    assert ctx.system_path == HOST  # the capture holds no Managers: ctx.manager is None
    assert result.patched == settings == f"{HOST}/Settings" and result.verified and result.pending
    assert [r.path for r in fake.calls("PATCH")] == [settings]
    assert fake.resources[settings]["Boot"]["BootSourceOverrideEnabled"] == "Once"


def test_a_power_action_on_a_gb300_tray_resets_the_host():
    fake = FakeBmc.from_fixture("supermicro-gb300", password=PASSWORD)
    fake.resources[HOST]["PowerState"] = "Off"
    with serving(fake), client_for(fake) as client:
        result = PowerControl(locate(client), PowerOptions(timeout=5, poll=0.01)).run("on")
    assert result.after == "On"
    assert [r.path for r in fake.calls("POST")] == [f"{HOST}/Actions/ComputerSystem.Reset"]


def test_bmc_system_stays_the_override_and_several_hosts_still_need_it():
    fake = FakeBmc.from_fixture("hpe-cray-ex235n", password=PASSWORD)
    with serving(fake):
        with client_for(fake, "Node1") as client:
            assert locate(client).system["Id"] == "Node1"
        with client_for(fake) as client, pytest.raises(InventoryProblem, match="set bmc_system"):
            locate(client)
    fake = FakeBmc.from_fixture("supermicro-gb300", password=PASSWORD)
    with serving(fake), client_for(fake, "HGX_Baseboard_0") as client:
        assert locate(client).system_path == "/redfish/v1/Systems/HGX_Baseboard_0"


def test_an_ordinary_bmc_reads_no_systems_member_twice():
    fake = FakeBmc.from_fixture("hpe-dl325-gen10p", password=PASSWORD)
    with serving(fake), client_for(fake) as client:
        assert locate(client).system["Id"] == "1"
    paths = [r.path for r in fake.calls("GET")]
    assert "/redfish/v1/Managers" not in paths and "/redfish/v1/Chassis" not in paths
