"""Vendor behaviour on Redfish trees shaped like Dell iDRAC 9 and 10, HPE iLO 6 and Supermicro,
served over real HTTP with basic auth by tests/doubles/redfish_server.py (nothing in the client mocked)."""

from __future__ import annotations

import pytest

from bringup.redfish import vmedia
from bringup.redfish.boot import set_boot_once
from bringup.redfish.client import RedfishClient
from bringup.redfish.context import locate
from bringup.redfish.discovery import discover, discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import ActionFailed, NotReady, NotSupported, PendingJob
from bringup.redfish.nics import parse_rule
from bringup.redfish.power import PowerControl, PowerOptions
from tests.doubles.redfish_server import FakeBmc, error_body, serving

PASSWORD = "Fx7-bmc-pa55"
M = "/redfish/v1/Managers/iDRAC.Embedded.1"
S = "/redfish/v1/Systems/System.Embedded.1"


def bmc(name: str, **kw) -> FakeBmc:
    return FakeBmc.from_fixture(name, password=PASSWORD, **kw)


def endpoint(fake: FakeBmc, vendor: str | None = None, forced: bool = False) -> BmcEndpoint:
    return BmcEndpoint("node01", fake.url, "root", PASSWORD, vendor, forced)


def connect(fake: FakeBmc, **kw) -> RedfishClient:
    client = RedfishClient(endpoint(fake, **kw), TransportOptions(retries=0))
    client.connect()
    return client


# -- discovery per vendor ------------------------------------------------------------------------


def test_dell_idrac9_discovery():
    fake = bmc("dell-idrac9")
    with serving(fake):
        d = discover_endpoint(endpoint(fake, "dell"), TransportOptions())
    hw = d.hardware
    assert d.serial == "CNFCP0041M0789" and hw["serial_source"] == "chassis"
    assert hw["bmc"] | {"url": None} == {
        "vendor": "dell",
        "vendor_detected": "dell",
        "vendor_source": "detected",
        "model": "iDRAC 9 (16G Monolithic)",
        "firmware_version": "7.10.30.00",
        "manager_id": "iDRAC.Embedded.1",
        "redfish_version": "1.17.0",
        "url": None,
    }
    assert hw["system"]["bios_version"] == "2.3.5" and hw["power_state"] == "On"
    assert hw["memory"]["total_gib"] == 2048 and hw["cpu"]["model"].startswith(
        "Intel(R) Xeon(R) Platinum 8480+"
    )
    # Onboard first; the permanent MAC of NIC.Integrated.1-2-1, not the one the OS set.
    assert (
        d.macs[0] == "b0:7b:25:e0:4e:a0"
        and "30:3e:a7:1b:52:11" in d.macs
        and "02:00:00:1b:52:11" not in d.macs
    )
    assert hw["provisioning_nic"] == {
        "id": "NIC.Embedded.1-1-1",
        "mac": "b0:7b:25:e0:4e:a0",
        "rule": "onboard",
        "reason": "onboard: embedded port 1, the first onboard port",
    }
    assert [ib["adapter"] for ib in hw["infiniband"]] == ["InfiniBand.Slot.31"]
    ids = [f["id"] for f in hw["firmware"]]
    assert "Installed-159-2.3.5__BIOS.Setup.1-1" in ids and not any(i.startswith("Previous") for i in ids)
    assert {f["name"]: f["version"] for f in hw["firmware"]}["BIOS"] == "2.3.5"
    assert [(e["id"], e["severity"], e["message_id"]) for e in hw["event_log"]] == [
        ("4", "Critical", "PSU0003"),
        ("3", "Warning", "MEM0701"),
    ]
    # This tree has no Processors collection (linked, absent) and no PCIe devices: GPUs and
    # PCIe devices are unknown, not "none".
    assert hw["event_log_read_at"] and sorted(hw["unavailable"]) == ["gpus", "pcie_devices"]
    assert "gpus" not in hw and "pcie_devices" not in hw
    # The SEL is read at the Dell path, and collections are expanded in one request each.
    assert fake.calls("GET", f"{M}/LogServices/Sel/Entries")
    assert all(r.query for r in fake.calls("GET", "/FirmwareInventory"))
    assert not fake.calls("GET", "/FirmwareInventory/Installed")


def test_dell_idrac10_before_first_boot_gets_macs_from_network_adapters():
    fake = bmc("dell-idrac10")
    with serving(fake):
        d = discover_endpoint(endpoint(fake), TransportOptions())
    assert fake.resources[f"{S}/EthernetInterfaces"]["Members"] == []
    assert d.hardware["bmc"]["model"] == "iDRAC 10 (17G Monolithic)"
    assert d.macs == [
        "b0:7b:25:e0:4e:a0",
        "b0:7b:25:e0:4e:a1",
        "30:3e:a7:1b:52:10",
        "30:3e:a7:1b:52:11",
        "94:6d:ae:8c:12:40",
        "94:6d:ae:8c:12:41",
    ]
    assert {n["source"] for n in d.hardware["nics"]} == {"NetworkDeviceFunctions"}
    assert any("EthernetInterfaces is empty" in w for w in d.warnings)


def test_hpe_ilo6_discovery():
    fake = bmc("hpe-ilo6")
    with serving(fake):
        d = discover_endpoint(endpoint(fake), TransportOptions())
    hw = d.hardware
    assert (d.serial, d.vendor, hw["bmc"]["model"]) == ("MXQ41205KL", "hpe", "iLO 6")
    # No $expand advertised: one GET per member, no query strings.
    assert not any(r.query for r in fake.requests)
    # EthernetInterfaces empty (no OS agent): ports of the OCP adapter, not the OEM view.
    assert d.macs == ["5c:ba:2c:10:aa:01", "5c:ba:2c:10:aa:02"]
    assert {n["source"] for n in hw["nics"]} == {"Ports"} and not fake.calls("GET", "BaseNetworkAdapters")
    assert hw["nics"][0]["slot"] == 14
    # The IML's repaired critical entry is left out.
    assert [e["id"] for e in hw["event_log"]] == ["3"]
    assert len(hw["firmware"]) == 5 and hw["health_rollup"] == "Warning"


def test_hpe_falls_back_to_oem_base_network_adapters():
    fake = bmc("hpe-ilo6")
    del fake.resources["/redfish/v1/Chassis/1"]["NetworkAdapters"]
    with serving(fake):
        d = discover_endpoint(endpoint(fake), TransportOptions())
    assert d.macs == ["5c:ba:2c:10:aa:01", "5c:ba:2c:10:aa:02"]
    assert {n["source"] for n in d.hardware["nics"]} == {"OEM"}


def test_supermicro_discovery_uses_the_system_serial_when_the_chassis_has_a_placeholder():
    fake = bmc("supermicro-x13")
    with serving(fake):
        d = discover_endpoint(endpoint(fake), TransportOptions())
    assert (d.serial, d.hardware["serial_source"], d.vendor) == ("S512884X3A27016", "system", "supermicro")
    assert [n["permanent"] for n in d.hardware["nics"]] == [False, False]  # no PermanentMACAddress here
    assert d.hardware["nics"][0]["location"] == "embedded"
    assert [e["severity"] for e in d.hardware["event_log"]] == ["Warning"]


def test_provisioning_rule_picks_a_slot():
    fake = bmc("dell-idrac9")
    with serving(fake):
        client = connect(fake)
        d = discover(client, parse_rule("slot:5:2"))
    assert d.hardware["provisioning_nic"]["id"] == "NIC.Slot.5-2-1"


def test_vendor_forced_from_the_inventory_and_mismatch_warning():
    fake = bmc("supermicro-x13")
    with serving(fake):
        forced = discover_endpoint(endpoint(fake, "dell", forced=True), TransportOptions())
        hinted = discover_endpoint(endpoint(fake, "dell"), TransportOptions())
    assert (forced.vendor, forced.hardware["bmc"]["vendor_source"]) == ("dell", "inventory")
    assert (hinted.vendor, hinted.hardware["bmc"]["vendor_source"]) == ("supermicro", "detected")
    assert any("inventory says bmc_vendor dell" in w for w in hinted.warnings)


def test_event_log_absent_when_unreadable_and_empty_when_clean():
    unreadable = bmc("dell-idrac9")
    for path in [p for p in unreadable.resources if "/LogServices" in p]:
        del unreadable.resources[path]
    clean = bmc("dell-idrac9")
    clean.resources[f"{M}/LogServices/Sel/Entries"]["Members"] = [
        m for m in clean.resources[f"{M}/LogServices/Sel/Entries"]["Members"] if m["Severity"] == "OK"
    ]
    with serving(unreadable, clean):
        gone = discover_endpoint(endpoint(unreadable), TransportOptions())
        ok = discover_endpoint(endpoint(clean), TransportOptions())
    assert "event_log" not in gone.hardware and "event_log_read_at" not in gone.hardware
    assert "event_log" in gone.hardware["unavailable"]
    assert ok.hardware["event_log"] == [] and ok.hardware["event_log_read_at"]


def test_missing_firmware_inventory_is_recorded_not_fatal():
    fake = bmc("supermicro-x13")
    del fake.resources["/redfish/v1/UpdateService/FirmwareInventory"]
    with serving(fake):
        d = discover_endpoint(endpoint(fake), TransportOptions())
    assert "firmware" not in d.hardware
    assert d.hardware["unavailable"]["firmware"].startswith("not supported by this BMC")
    assert d.macs  # the rest was read


# -- boot ------------------------------------------------------------------------------------------


def test_idrac9_pxe_once_patches_the_system_and_reads_it_back():
    fake = bmc("dell-idrac9")
    with serving(fake):
        result = set_boot_once(locate(connect(fake)), "Pxe", "uefi")
    assert (result.patched, result.enabled, result.verified, result.pending) == (S, "Once", True, False)
    (patch,) = fake.calls("PATCH")
    assert patch.body == {"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}}
    # Dell: Lifecycle Controller asked before the change.
    assert fake.calls("POST", "DellLCService.GetRemoteServicesAPIStatus")


def test_idrac10_pxe_goes_to_the_settings_object_and_applies_at_reset():
    fake = bmc("dell-idrac10")
    with serving(fake):
        ctx = locate(connect(fake))
        result = set_boot_once(ctx, "Pxe", "uefi")
        assert (result.patched, result.pending, result.verified) == (f"{S}/Settings", True, True)
        assert fake.resources[S]["Boot"]["BootSourceOverrideTarget"] == "None"  # not yet
        PowerControl(ctx, PowerOptions(poll=0.01, timeout=5)).on()
        assert fake.resources[S]["Boot"]["BootSourceOverrideTarget"] == "Pxe"
    assert [c.path for c in fake.calls("PATCH")] == [f"{S}/Settings"]
    # iDRAC 10 has no Links.Oem: the OEM services are found at Managers/.../Oem/Dell.
    assert fake.calls("POST", f"{M}/Oem/Dell/DellLCService/Actions/")


def test_settings_object_refusing_the_boot_override_falls_back_to_the_system():
    fake = bmc("dell-idrac10", settings_refuse_boot=True)
    with serving(fake):
        result = set_boot_once(locate(connect(fake)), "Pxe", "uefi")
    assert result.patched == S and result.verified and not result.pending
    assert "settings object refused" in result.warnings[0]
    assert [c.path for c in fake.calls("PATCH")] == [f"{S}/Settings", S]


def test_supermicro_gets_the_boot_mode_explicitly():
    fake = bmc("supermicro-x13")
    with serving(fake):
        result = set_boot_once(locate(connect(fake)), "Pxe", "uefi")
    assert (
        result.verified
        and fake.resources["/redfish/v1/Systems/1"]["Boot"]["BootSourceOverrideMode"] == "UEFI"
    )
    (patch,) = fake.calls("PATCH")
    assert patch.body["Boot"]["BootSourceOverrideMode"] == "UEFI"


def test_legacy_mode_from_the_profile_is_sent_when_it_differs():
    fake = bmc("dell-idrac9")
    with serving(fake):
        set_boot_once(locate(connect(fake)), "Pxe", "legacy")
    assert fake.calls("PATCH")[0].body["Boot"]["BootSourceOverrideMode"] == "Legacy"


def test_a_boot_override_that_does_not_read_back_fails():
    fake = bmc("hpe-ilo6")
    fake.patch_errors["/redfish/v1/Systems/1"] = (200, {})  # "OK", and nothing changes
    with (
        serving(fake),
        pytest.raises(ActionFailed, match="reads back BootSourceOverrideTarget=None, not Pxe"),
    ):
        set_boot_once(locate(connect(fake)), "Pxe", "uefi")


def test_if_match_is_sent_when_the_bmc_requires_it():
    fake = bmc("hpe-ilo6", require_if_match=True)
    with serving(fake):
        assert set_boot_once(locate(connect(fake)), "Pxe", "uefi").verified
    assert len(fake.calls("PATCH")) == 2  # refused with 428, then sent with the ETag


def test_a_boot_target_the_bmc_does_not_offer_is_not_supported():
    fake = bmc("hpe-ilo6")
    with serving(fake), pytest.raises(NotSupported, match="Floppy not offered"):
        set_boot_once(locate(connect(fake)), "Floppy", "uefi")
    assert not fake.calls("PATCH")


# -- Dell specifics -----------------------------------------------------------------------------------


def _add_pending_job(fake: FakeBmc, job_id: str = "JID_912345678901") -> None:
    path = f"{M}/Jobs/{job_id}"
    fake.resources[path] = {
        "@odata.id": path,
        "Id": job_id,
        "JobState": "Scheduled",
        "JobType": "BIOSConfiguration",
        "Message": "Task successfully scheduled.",
        "Name": "Configure: BIOS.Setup.1-1",
        "PercentComplete": 0,
    }
    fake.resources[f"{M}/Jobs"]["Members"].append({"@odata.id": path})


def test_a_pending_configuration_job_blocks_changes_and_is_named():
    fake = bmc("dell-idrac9")
    _add_pending_job(fake)
    with serving(fake), pytest.raises(PendingJob) as info:
        set_boot_once(locate(connect(fake)), "Pxe", "uefi")
    assert info.value.job_ids == ["JID_912345678901"]
    assert "JID_912345678901 (BIOSConfiguration, Scheduled)" in str(info.value)
    assert "--clear" in str(info.value)
    assert not fake.calls("PATCH")


def test_a_sys011_refusal_becomes_a_pending_job_error(monkeypatch):
    """The job appears between the check and the PATCH: the iDRAC's SYS011 answer is explained."""
    fake = bmc("dell-idrac9")
    fake.patch_errors[S] = (
        400,
        error_body(
            "Pending configuration values are already committed, unable to perform another set operation.",
            "IDRAC.2.8.SYS011",
        ),
    )
    with serving(fake):
        ctx = locate(connect(fake))
        _add_pending_job(fake, "JID_000000000042")  # after locate(): the pre-check sees it too...
        fake.resources[f"{M}/Jobs/JID_000000000042"]["JobType"] = "RAIDConfiguration"
        fake.resources[f"{M}/Jobs/JID_000000000042"]["JobState"] = "Running"
        monkeypatch.setattr(
            ctx.vendor, "before_change", lambda c, config: None
        )  # ...skip it, as a race would
        with pytest.raises(PendingJob) as info:
            set_boot_once(ctx, "Pxe", "uefi")
    assert info.value.job_ids == ["JID_000000000042"]
    assert "Pending configuration values are already committed" in info.value.message


def test_clearing_the_job_queue_unblocks_changes():
    fake = bmc("dell-idrac9")
    _add_pending_job(fake)
    with serving(fake):
        ctx = locate(connect(fake))
        assert [j["id"] for j in ctx.vendor.jobs(ctx) if j["state"] == "Scheduled"] == ["JID_912345678901"]
        ctx.vendor.clear_jobs(ctx)
        assert ctx.vendor.jobs(ctx) == []
        assert set_boot_once(ctx, "Pxe", "uefi").verified
    (clear,) = fake.calls("POST", "DeleteJobQueue")
    assert clear.body == {"JobID": "JID_CLEARALL"}
    assert (
        clear.path
        == "/redfish/v1/Dell/Managers/iDRAC.Embedded.1/DellJobService/Actions/DellJobService.DeleteJobQueue"
    )


def test_lifecycle_controller_not_ready_blocks_changes():
    fake = bmc(
        "dell-idrac9",
        lc_status={"LCStatus": "NotInitialized", "ServerStatus": "InPOST", "Status": "NotReady"},
    )
    with serving(fake), pytest.raises(NotReady, match="LCStatus=NotInitialized, ServerStatus=InPOST"):
        set_boot_once(locate(connect(fake)), "Pxe", "uefi")
    assert not fake.calls("PATCH")


def test_job_queue_is_a_dell_feature():
    fake = bmc("hpe-ilo6")
    with serving(fake):
        ctx = locate(connect(fake))
        with pytest.raises(NotSupported, match="Dell iDRAC feature"):
            ctx.vendor.jobs(ctx)


# -- virtual media ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, slot",
    [
        ("dell-idrac9", f"{M}/VirtualMedia/CD"),
        ("dell-idrac10", f"{S}/VirtualMedia/1"),
        ("hpe-ilo6", "/redfish/v1/Managers/1/VirtualMedia/2/"),
        ("supermicro-x13", "/redfish/v1/Managers/1/VirtualMedia/CD1"),
    ],
)
def test_virtual_media_insert_boot_and_eject(name, slot):
    url = "http://10.20.0.1/images/ubuntu-24.04-live-server-amd64.iso"
    fake = bmc(name)
    with serving(fake):
        ctx = locate(connect(fake))
        booted = vmedia.boot_from_iso(ctx, url, "uefi", PowerOptions(poll=0.01, timeout=5))
        assert booted.media.record() == {"path": slot, "inserted": True, "image": url}
        assert booted.boot.target == "Cd" and booted.boot.verified
        assert booted.power.after == "On"
        again = vmedia.insert(ctx, url)  # idempotent: already there
        assert again.inserted
        ejected = vmedia.eject(ctx)
    assert not ejected.inserted and ejected.image is None
    assert len(fake.calls("POST", "InsertMedia")) == 1 and len(fake.calls("POST", "EjectMedia")) == 1


def test_a_different_image_is_ejected_before_inserting():
    fake = bmc("dell-idrac9")
    fake.resources[f"{M}/VirtualMedia/CD"].update(Inserted=True, Image="http://old/old.iso")
    with serving(fake):
        state = vmedia.insert(locate(connect(fake)), "http://new/new.iso")
    assert state.image == "http://new/new.iso"
    assert [c.path.rsplit(".", 1)[-1] for c in fake.calls("POST", "VirtualMedia")] == [
        "EjectMedia",
        "InsertMedia",
    ]


# -- power ------------------------------------------------------------------------------------------------


def test_power_off_graceful_then_forced_when_the_os_ignores_it():
    fake = bmc("supermicro-x13", ignore_graceful=True)  # ResetTypes from @Redfish.ActionInfo
    with serving(fake):
        ctx = locate(connect(fake))
        result = PowerControl(ctx, PowerOptions(graceful_timeout=0.3, timeout=5, poll=0.05)).off()
    assert result.after == "Off"
    assert [c.body["ResetType"] for c in fake.calls("POST", "ComputerSystem.Reset")] == [
        "GracefulShutdown",
        "ForceOff",
    ]
    assert any("ForceOff" in s for s in result.steps)
    assert fake.calls("GET", "ResetActionInfo")


def test_power_cycle_polls_until_the_bmc_reports_each_state():
    fake = bmc("dell-idrac9", power_delay=0.3)
    with serving(fake):
        ctx = locate(connect(fake))
        result = PowerControl(ctx, PowerOptions(graceful_timeout=5, timeout=5, poll=0.05)).cycle()
    assert (result.before, result.after) == ("On", "On")
    assert [c.body["ResetType"] for c in fake.calls("POST")] == ["GracefulShutdown", "On"]
    # It waited: several state reads between the two actions.
    gets = [i for i, r in enumerate(fake.requests) if r.method == "GET" and r.path == S]
    posts = [i for i, r in enumerate(fake.requests) if r.method == "POST" and "Reset" in r.path]
    assert sum(posts[0] < g < posts[1] for g in gets) >= 3
