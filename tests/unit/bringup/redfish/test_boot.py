"""The one-time boot override body and the judgement of its read-back (pure)."""

from __future__ import annotations

from bringup.redfish.boot import boot_body, judge
from bringup.redfish.vendors import vendor_for


def test_boot_body_sends_the_mode_only_where_needed():
    uefi = {"BootSourceOverrideMode": "UEFI"}
    assert boot_body(vendor_for("dell"), uefi, "Pxe", "UEFI") == {
        "Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}
    }
    assert boot_body(vendor_for("dell"), uefi, "Pxe", "Legacy")["Boot"]["BootSourceOverrideMode"] == "Legacy"
    assert (
        boot_body(vendor_for("supermicro"), uefi, "Pxe", "UEFI")["Boot"]["BootSourceOverrideMode"] == "UEFI"
    )
    assert "BootSourceOverrideMode" not in boot_body(vendor_for("hpe"), {}, "Cd", "Legacy")["Boot"]


def test_judge_boot_read_back():
    ok, warnings, problem = judge(
        {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}, "Pxe", "UEFI", False
    )
    assert (ok, warnings, problem) == (True, [], None)
    ok, warnings, _ = judge(
        {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Continuous"}, "Pxe", "UEFI", False
    )
    assert ok and "every boot" in warnings[0]
    ok, _, problem = judge(
        {"BootSourceOverrideTarget": "Hdd", "BootSourceOverrideEnabled": "Once"}, "Pxe", "UEFI", False
    )
    assert not ok and "Hdd" in problem
    ok, _, problem = judge(
        {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Disabled"}, "Pxe", "UEFI", False
    )
    assert not ok and "Disabled" in problem
