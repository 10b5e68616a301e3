"""RMA bundles: a manifest that matches their files, and a summary a vendor's RMA desk can read."""

from __future__ import annotations

import hashlib
import json

from burnin.accept.bundle import bundle_files
from tests.unit.burnin.accept.acceptance_result import DMIDECODE, result


def test_a_bundle_holds_the_files_its_manifest_names_with_matching_checksums():
    files = bundle_files(result(), result().decisions[0])
    manifest = json.loads(files["manifest.json"])
    named = {m["path"] for m in manifest["files"]}
    assert named == set(files) - {"manifest.json", "SHA256SUMS"}
    for m in manifest["files"]:
        assert (
            hashlib.sha256(files[m["path"]]).hexdigest() == m["sha256"]
            and len(files[m["path"]]) == m["bytes"]
        )
    assert files["evidence/01-preflight-memory_dimms.txt"].decode() == DMIDECODE
    assert json.loads(files["bmc-event-log.json"])["entries"][0]["Message"] == "PSU 2 lost input"
    assert json.loads(files["firmware.json"])["firmware"] == [{"name": "BIOS", "version": "1.6.0"}]
    psu = json.loads(files["order/psu.json"])
    assert psu["reported"] == [{"slot": "PSU.Slot.2", "serial": "PSU-9", "health": "Critical"}]
    sums = files["SHA256SUMS"].decode().splitlines()
    assert f"{hashlib.sha256(files['summary.txt']).hexdigest()}  summary.txt" in sums


def test_the_summary_names_chassis_serial_parts_slots_actions_and_dates():
    text = bundle_files(result(), result().decisions[0])["summary.txt"].decode()
    for expected in (
        "Chassis serial:   SN1",
        "PowerEdge XE9680",
        "Part:     memory_dimms",
        "Slot:     DIMM_B1",
        "Serial:   80CE01234567",
        "Action:   RESEAT",
        "Seen:     2026-05-01T08:00:00+00:00",
        "Evidence: evidence/01-preflight-memory_dimms.txt",
        "Slot:     PSU.Slot.2",
        "Action:   RMA",
        "Evidence: order/psu.json",
        "decided 2026-05-04T08:00:00+00:00",
    ):
        assert expected in text, expected
