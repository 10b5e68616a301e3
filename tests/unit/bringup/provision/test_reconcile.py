"""The node's own report against Redfish: a mismatch is a finding, never a silent overwrite."""

from __future__ import annotations

import uuid

from bringup.provision.reconcile import reconcile

MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"
UUID = "eb1bd5dc-2536-57b6-97fb-72359028812a"


def report(**kw):
    base = {"serial": "SN1", "chassis_serial": "SN1", "macs": [MAC1, MAC2], "uuid": UUID}
    return {**base, **kw}


def test_a_matching_report():
    r = reconcile(report(), serials=["SN1", None], macs=[MAC1, MAC2], provisioning_mac=MAC1, uuid=UUID)
    assert r.ok and r.findings == [] and r.notes == []
    assert r.matched == ["serial SN1", "2 MAC(s)", "UUID"]


def test_serial_compared_case_insensitively_against_chassis_or_system():
    r = reconcile(
        report(serial="sys-9", chassis_serial="sn1"),
        serials=["SN1"],
        macs=[MAC1, MAC2],
        provisioning_mac=MAC1,
    )
    assert r.ok
    r = reconcile(
        report(serial="SYS9", chassis_serial="Default string"),
        serials=["CH1", "SYS9"],
        macs=[MAC1, MAC2],
        provisioning_mac=MAC1,
    )
    assert r.ok


def test_a_different_serial_is_a_finding():
    r = reconcile(
        report(serial="OTHER", chassis_serial="OTHER"),
        serials=["SN1"],
        macs=[MAC1, MAC2],
        provisioning_mac=MAC1,
    )
    assert not r.ok
    (f,) = r.findings
    assert f.kind == "serial-mismatch" and f.recorded == ["SN1"] and f.reported == ["OTHER", "OTHER"]
    assert "OTHER" in f.message and "SN1" in f.message


def test_placeholder_serials_are_no_serial_and_so_a_mismatch():
    r = reconcile(
        report(serial="To Be Filled By O.E.M.", chassis_serial=""),
        serials=["SN1"],
        macs=[MAC1, MAC2],
        provisioning_mac=MAC1,
    )
    assert not r.ok and [f.kind for f in r.findings] == ["serial-missing"]
    assert "no usable serial" in r.findings[0].message


def test_a_report_with_no_serial_and_no_mac_is_a_mismatch_never_a_match():
    # Such a report reconciled as a match, and its ip became the node's address.
    r = reconcile({"ip": "10.9.9.9"}, serials=["SN1"], macs=[MAC1, MAC2], provisioning_mac=MAC1, uuid=UUID)
    assert not r.ok and r.matched == []
    assert [f.kind for f in r.findings] == ["serial-missing", "macs-missing"]


def test_a_matching_serial_without_any_mac_is_a_mismatch():
    r = reconcile(report(macs=[]), serials=["SN1"], macs=[MAC1, MAC2], provisioning_mac=MAC1)
    assert not r.ok and [f.kind for f in r.findings] == ["macs-missing"]


def test_matching_macs_without_a_serial_is_a_mismatch():
    r = reconcile(
        report(serial=None, chassis_serial=None), serials=["SN1"], macs=[MAC1, MAC2], provisioning_mac=MAC1
    )
    assert not r.ok and [f.kind for f in r.findings] == ["serial-missing"]


def test_nothing_recorded_to_compare_with_is_a_mismatch():
    # Discovery recorded no serial and no MAC: the report cannot be confirmed, so it is not a pass.
    r = reconcile(report(), serials=[None, "Default string"], macs=[], provisioning_mac=None)
    assert not r.ok
    assert [f.kind for f in r.findings] == ["serial-unverified", "mac-mismatch"]


def test_an_unknown_mac_is_a_finding_and_a_missing_one_a_note():
    r = reconcile(
        report(macs=[MAC1.upper(), "02:00:00:00:00:99"]),
        serials=["SN1"],
        macs=[MAC1, MAC2],
        provisioning_mac=MAC1,
    )
    assert [f.kind for f in r.findings] == ["mac-mismatch"]
    assert "02:00:00:00:00:99" in r.findings[0].message
    assert any(MAC2 in n for n in r.notes)  # listed by Redfish, not seen by the node: a note only


def test_the_provisioning_mac_must_be_reported():
    r = reconcile(report(macs=[MAC2]), serials=["SN1"], macs=[MAC1, MAC2], provisioning_mac=MAC1)
    assert [f.kind for f in r.findings] == ["provisioning-mac-missing"]


def test_uuid_in_smbios_byte_order_matches():
    swapped = str(uuid.UUID(bytes_le=uuid.UUID(UUID).bytes))
    assert swapped != UUID
    r = reconcile(
        report(uuid=swapped.upper()), serials=["SN1"], macs=[MAC1, MAC2], provisioning_mac=MAC1, uuid=UUID
    )
    assert "UUID" in r.matched
    r = reconcile(
        report(uuid=str(uuid.uuid4())), serials=["SN1"], macs=[MAC1, MAC2], provisioning_mac=MAC1, uuid=UUID
    )
    assert r.ok and "differs" in r.notes[0]  # a note, not a finding
