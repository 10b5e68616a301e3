"""Dell iDRAC quirks (pure): running firmware only, the iDRAC generation, the jobs that block a change."""

from __future__ import annotations

import pytest

from bringup.redfish.vendors import vendor_for
from bringup.redfish.vendors.dell import blocking_jobs, idrac_generation, job_record


def test_dell_keeps_running_firmware_only():
    dell = vendor_for("dell")
    assert dell.keep_firmware({"Id": "Installed-159-2.3.5__BIOS.Setup.1-1"})
    assert not dell.keep_firmware({"Id": "Previous-159-2.2.8__BIOS.Setup.1-1"})
    assert vendor_for("generic").keep_firmware({"Id": "Previous-1"})


@pytest.mark.parametrize(
    "model, firmware, want",
    [
        ("16G Monolithic", "7.10.30.00", "iDRAC 9"),
        ("17G Monolithic", None, "iDRAC 10"),
        (None, "1.20.25.00", "iDRAC 10"),
        (None, "6.10.00.00", "iDRAC 9"),
        ("x", "x", None),
    ],
)
def test_idrac_generation(model, firmware, want):
    assert idrac_generation(model, firmware) == want


def test_blocking_jobs_are_pending_configuration_jobs():
    jobs = [
        job_record({"Id": "JID_1", "JobState": "Completed", "JobType": "BIOSConfiguration"}),
        job_record({"Id": "JID_2", "JobState": "Scheduled", "JobType": "BIOSConfiguration"}),
        job_record({"Id": "JID_3", "JobState": "Scheduled", "JobType": "FirmwareUpdate"}),
        job_record({"Id": "JID_4", "JobState": "New", "Name": "Configure: NIC.Slot.5-1-1"}),
    ]
    assert [j["id"] for j in blocking_jobs(jobs)] == ["JID_2", "JID_4"]
