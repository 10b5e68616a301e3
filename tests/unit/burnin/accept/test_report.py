"""The acceptance's outputs: RMA bundles whose manifest matches their files, a readable summary,
the buyer's HTML, the vendor's CSV and JSON, and JUnit; no secret in any of them."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import tarfile
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

from burnin.accept.bundle import bundle_files
from burnin.accept.decide import ACCEPTED, REJECTED, DeliveryDecision, NodeDecision, Reason
from burnin.accept.outcome import AcceptanceResult, ConformanceRow, HistoryEntry, IterationSummary, NodeFacts
from burnin.accept.report import (
    failures_by_cause,
    render_csv,
    render_html,
    render_json,
    render_junit,
    write_outputs,
)

T0 = datetime(2026, 5, 1, 8, 0, tzinfo=timezone.utc)
T1 = datetime(2026, 5, 4, 8, 0, tzinfo=timezone.utc)
DMIDECODE = "Handle 0x1101\nMemory Device\n\tLocator: DIMM_B1\n\tSize: No Module Installed\n"
DIMM = Reason(
    "burn-in",
    "memory_dimms",
    "DIMM B1 not populated: 31 of 32 DIMMs",
    "RESEAT",
    slot="DIMM_B1",
    serial="80CE01234567",
    stage="preflight",
    check="memory_dimms",
    iteration=0,
    result_id=11,
    seen_at=T0,
)
PSU = Reason(
    "order",
    "psu",
    "PSU 2 failed (Critical)",
    "RMA",
    slot="PSU.Slot.2",
    serial="PSU-9",
    ordered="6",
    found="5 healthy",
)
PACKING = Reason("order", "chassis", "serial SN-X is not on the packing list", "RMA", serial="SN-X")


def hardware(serial: str) -> dict:
    return {
        "discovered_at": "2026-05-01T07:50:00+00:00",
        "system": {"manufacturer": "Dell Inc.", "model": "PowerEdge XE9680", "bios_version": "1.6.0"},
        "bmc": {"firmware_version": "7.10.30.00", "url": "https://10.0.0.1"},
        "firmware": [{"name": "BIOS", "version": "1.6.0"}],
        "event_log": [{"Id": "1", "Severity": "Critical", "Message": "PSU 2 lost input"}],
        "inventory": {"psus": [{"slot": "PSU.Slot.2", "serial": "PSU-9", "health": "Critical"}]},
    }


def result() -> AcceptanceResult:
    decisions = (
        NodeDecision("n1", "SN1", REJECTED, (DIMM, PSU)),
        NodeDecision("n2", "SN-X", REJECTED, (PACKING,)),
        NodeDecision("n3", "SN3", ACCEPTED),
    )
    return AcceptanceResult(
        delivery="po42",
        description="3 XE9680, PO 4711 <script>",
        rack="r07",
        acceptance_id=5,
        started_at=T0,
        finished_at=T1,
        soak_s=259200.0,
        stages=("preflight", "gpu"),
        soak_stages=("gpu", "ib", "nccl"),
        redelivery_of=None,
        tested=("n1", "n2", "n3"),
        decisions=decisions,
        delivery_decision=DeliveryDecision(False, 1, 3, 1.0, "1 of 3 ordered node(s) accepted"),
        conformance=(
            ConformanceRow("n1", "psu", "6 (N+N)", "5 healthy", False),
            ConformanceRow("n3", "memory", "32 x 64 GiB", "32 x 64 GiB", True),
        ),
        iterations=(IterationSummary(0, 20, "failed", T0, T0, ("n1", "n2", "n3"), ("n1",)),),
        history=(
            HistoryEntry("n1", 2, REJECTED, (PSU.line(),), datetime(2026, 4, 20, tzinfo=timezone.utc)),
            HistoryEntry("n1", 5, REJECTED, (DIMM.line(),), T1),
            HistoryEntry("n3", 5, ACCEPTED, (), T1),
        ),
        nodes={
            n: NodeFacts(n, s, "failed", "h100-sxm-8x400g", hardware(s))
            for n, s in (("n1", "SN1"), ("n2", "SN-X"), ("n3", "SN3"))
        },
        evidence={11: DMIDECODE},
    )


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


def test_write_outputs_writes_the_reports_and_one_bundle_per_rejected_node(tmp_path):
    paths = write_outputs(result(), tmp_path)
    names = sorted(p.relative_to(tmp_path).as_posix() for p in paths)
    assert names == [
        "acceptance.csv",
        "acceptance.html",
        "acceptance.json",
        "acceptance.junit.xml",
        "rma/n1-SN1-rma.tar.gz",
        "rma/n2-SN-X-rma.tar.gz",
    ]
    with tarfile.open(tmp_path / "rma/n2-SN-X-rma.tar.gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    manifest = json.loads(members["n2-SN-X-rma/manifest.json"])
    for m in manifest["files"]:
        assert hashlib.sha256(members[f"n2-SN-X-rma/{m['path']}"]).hexdigest() == m["sha256"]


def test_the_html_has_the_buyer_summary_the_failures_by_cause_and_the_conformance_table():
    page = render_html(result())
    assert "1 of 3" in page and "REJECTED" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "Content-Security-Policy" in page
    assert "<td>6 (N+N)</td><td>5 healthy</td>" in page
    assert "rejected on 2026-05-04 (acceptance #5): this one" in page
    assert "rejected on 2026-04-20 (acceptance #2) for psu" in page  # an earlier acceptance, with why
    causes = failures_by_cause(result().decisions)
    assert [(c.component, c.action, c.nodes) for c in causes] == [
        ("chassis", "RMA", ("n2",)),
        ("memory", "RESEAT", ("n1",)),
        ("psu", "RMA", ("n1",)),
    ]


def test_a_cause_counts_every_node_it_rejected_whatever_the_slot():
    other = Reason("order", "memory", "31 DIMMs; empty: DIMM_A7", "RESEAT", slot="DIMM_A7")
    decisions = (*result().decisions, NodeDecision("n4", "SN4", REJECTED, (other,)))
    memory = next(c for c in failures_by_cause(decisions) if c.component == "memory")
    assert memory.nodes == ("n1", "n4") and memory.example == DIMM.finding


def test_csv_json_and_junit_for_the_vendor_and_ci():
    rows = list(csv.DictReader(io.StringIO(render_csv(result()))))
    assert [(r["node"], r["part"], r["part_serial"], r["action"]) for r in rows] == [
        ("n1", "memory_dimms", "80CE01234567", "RESEAT"),
        ("n1", "psu", "PSU-9", "RMA"),
        ("n2", "chassis", "SN-X", "RMA"),
        ("n3", "", "", ""),
    ]
    data = json.loads(render_json(result()))
    assert data["decision"]["accepted"] is False and data["nodes"][2]["decision"] == "accepted"
    suite = ET.fromstring(render_junit(result())).find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "2"
    failure = suite.findall("testcase")[0].find("failure")
    assert "DIMM_B1" in failure.get("message") and "PSU.Slot.2" in failure.text
