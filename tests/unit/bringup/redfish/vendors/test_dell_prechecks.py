"""Dell pre-change checks follow the links the Manager gives, and a check
that cannot run is said (an event), or refuses the change (``bmc_require_prechecks``).

The iDRAC is tests/fixtures/redfish/dell-idrac9-lc405.json: Links.Oem.Dell.Jobs at
Managers/iDRAC.Embedded.1/Oem/Dell/Jobs (nothing at the guessed URIs) and a 405 on the
advertised DellLCService.GetRemoteServicesAPIStatus. Real HTTP, a real inventory and store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.fleet.store import FleetStore
from bringup.redfish import vmedia
from bringup.redfish.boot import set_boot_once
from bringup.redfish.client import RedfishClient
from bringup.redfish.context import locate
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import PendingJob, Refused
from bringup.redfish.power import PowerOptions
from bringup.redfish.rack import RackJob, bmc_jobs, boot_rack
from tests.doubles.redfish_server import FakeBmc, serving
from tests.inventories import write_rack

PASSWORD = "Zq-dell-precheck-pw"
M = "/redfish/v1/Managers/iDRAC.Embedded.1"
ADVERTISED_JOBS = f"{M}/Oem/Dell/Jobs"
GUESSED_JOBS = (f"{M}/Jobs", "/redfish/v1/JobService/Jobs")
S = "/redfish/v1/Systems/System.Embedded.1"


def lc405() -> FakeBmc:
    return FakeBmc.from_fixture("dell-idrac9-lc405", password=PASSWORD)


def connect(bmc: FakeBmc) -> RedfishClient:
    client = RedfishClient(BmcEndpoint("gpu01", bmc.url, "root", PASSWORD), TransportOptions(retries=0))
    client.connect()
    return client


def dell_rack(tmp_path: Path, bmc: FakeBmc, **host_vars) -> Path:
    """Rack r07: one Dell host, gpu01, whose BMC is ``bmc`` (served: its URL is known)."""
    host = {"bmc_address": bmc.url, "rack_unit": 1, "bmc_allow_http": True, **host_vars}
    return write_rack(tmp_path / "inventories", "r07", {"gpu01": host}, password=PASSWORD)


def boot_pxe(tmp_path: Path, bmc: FakeBmc, **host_vars) -> tuple[FleetStore, dict]:
    inv = dell_rack(tmp_path, bmc, **host_vars)
    store = FleetStore.open(str(tmp_path / "fleet.db"))
    job = RackJob(store, "r07", inv, transport=TransportOptions(retries=0))
    result = boot_rack(job, "pxe", PowerOptions(poll=0.05))
    return store, result.rows[0]


def test_the_job_queue_is_read_from_the_link_the_manager_advertises():
    bmc = lc405()
    with serving(bmc):
        ctx = locate(connect(bmc))
        jobs = ctx.vendor.jobs(ctx)
    assert [(j["id"], j["state"]) for j in jobs] == [("JID_741285093317", "Completed")]
    assert bmc.calls("GET", ADVERTISED_JOBS)
    assert not [r for r in bmc.calls("GET") if r.path in GUESSED_JOBS]  # no guessed URI asked


def test_a_pending_job_in_the_advertised_queue_blocks_the_change():
    bmc = lc405()
    job = "JID_741285099999"
    bmc.resources[f"{ADVERTISED_JOBS}/{job}"] = {
        "@odata.id": f"{ADVERTISED_JOBS}/{job}",
        "Id": job,
        "JobState": "Scheduled",
        "JobType": "BIOSConfiguration",
        "Name": "Configure: BIOS.Setup.1-1",
        "Message": "Task successfully scheduled.",
    }
    bmc.resources[ADVERTISED_JOBS]["Members"].append({"@odata.id": f"{ADVERTISED_JOBS}/{job}"})
    with serving(bmc), pytest.raises(PendingJob) as info:
        set_boot_once(locate(connect(bmc)), "Pxe", "uefi")
    assert info.value.job_ids == [job]
    assert not bmc.calls("PATCH")


def test_a_405_on_the_advertised_lc_readiness_call_leaves_an_event(tmp_path):
    bmc = lc405()
    with serving(bmc):
        store, row = boot_pxe(tmp_path, bmc)
    assert row["ok"], row
    assert bmc.calls("POST", "DellLCService.GetRemoteServicesAPIStatus")  # it was asked, at the link
    assert bmc.calls("PATCH", S)  # the change went ahead, and says so:
    skipped = [e for e in store.history("gpu01") if e.kind == "precheck-skipped"]
    assert len(skipped) == 1, [(e.kind, e.reason) for e in store.history("gpu01")]
    why = skipped[0].details["why"]
    assert "HTTP 405" in why and "advertises DellLCService" in why
    assert "firmware without the API" not in why
    assert row["boot"]["prechecks_skipped"] == [why]
    store.close()


def test_bmc_require_prechecks_refuses_the_change_when_a_check_cannot_run(tmp_path):
    bmc = lc405()
    with serving(bmc):
        store, row = boot_pxe(tmp_path, bmc, bmc_require_prechecks=True)
    assert not row["ok"]
    assert row["error"]["kind"] == "refused"
    assert "HTTP 405" in row["error"]["message"] and "bmc_require_prechecks" in row["error"]["message"]
    assert not bmc.calls("PATCH")  # nothing was changed
    assert store.history("gpu01")[-1].kind == "boot-failed"
    store.close()


def test_a_dell_whose_checks_all_run_skips_none():
    bmc = FakeBmc.from_fixture("dell-idrac9", password=PASSWORD)
    with serving(bmc):
        ctx = locate(connect(bmc))
        assert ctx.vendor.before_change(ctx, config=True) == []


def test_bmc_require_prechecks_refuses_virtual_media_before_it_is_inserted():
    bmc = lc405()
    with serving(bmc):
        endpoint = BmcEndpoint("gpu01", bmc.url, "root", PASSWORD, require_prechecks=True)
        client = RedfishClient(endpoint, TransportOptions(retries=0))
        client.connect()
        with pytest.raises(Refused) as info:
            vmedia.insert(locate(client), "http://10.20.0.1/images/installer.iso")
    assert "bmc_require_prechecks" in str(info.value)
    assert not bmc.calls("POST", "InsertMedia") and not bmc.calls("PATCH")  # no media inserted


def test_bmc_jobs_shows_the_queue_and_readiness_as_not_read_when_the_lc_call_fails(tmp_path):
    bmc = lc405()
    with serving(bmc):
        inv = dell_rack(tmp_path, bmc)
        store = FleetStore.open(str(tmp_path / "fleet.db"))
        (row,) = bmc_jobs(RackJob(store, "r07", inv, transport=TransportOptions(retries=0))).rows
        store.close()
    assert row["ok"], row
    assert [j["id"] for j in row["jobs"]] == ["JID_741285093317"]
    assert row["readiness"]["ready"] is None and "HTTP 405" in row["readiness"]["not_read"]
