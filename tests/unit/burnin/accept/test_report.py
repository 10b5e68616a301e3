"""The acceptance's reports: the buyer's HTML, the vendor's CSV and JSON, and JUnit, written with one
RMA bundle per rejected node (the bundles themselves: test_bundle.py); no secret in any of them."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import tarfile
import xml.etree.ElementTree as ET

from burnin.accept.decide import REJECTED, NodeDecision, Reason
from burnin.accept.report import (
    failures_by_cause,
    render_csv,
    render_html,
    render_json,
    render_junit,
    write_outputs,
)
from tests.unit.burnin.accept.acceptance_result import DIMM, result


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


def test_the_roster_holds_every_node_and_ordered_serial_with_its_latest_decision():
    from dataclasses import replace

    from burnin.accept.outcome import HistoryEntry, delivery_roster

    r = result()
    history = (
        *r.history,
        HistoryEntry("n4", 2, REJECTED, ("gpu: 7 GPUs, the order has 8 -> RESEAT",), r.started_at),
    )
    roster = delivery_roster(
        ["SN1", "SN3", "SN4", "SN-LOST"],
        [("n1", "SN1"), ("n2", "SN-X"), ("n3", "SN3"), ("n4", "SN4"), ("n5", "SN5")],
        history,
        {"n5": "too few partners"},
    )
    assert [(x.node, x.serial, x.status, x.decision, x.acceptance) for x in roster] == [
        ("n1", "SN1", "arrived", "rejected", 5),
        ("n2", "SN-X", "unordered", "not decided", None),
        ("n3", "SN3", "arrived", "accepted", 5),
        ("n4", "SN4", "arrived", "rejected", 2),
        ("n5", "SN5", "unordered", "waiting", None),
        (None, "SN-LOST", "never arrived", "never arrived", None),
    ]
    whole = replace(r, roster=roster, history=history)
    rows = list(csv.DictReader(io.StringIO(render_csv(whole))))
    assert {x["chassis_serial"] for x in rows} == {"SN1", "SN-X", "SN3", "SN4", "SN5", "SN-LOST"}
    (n4,) = [x for x in rows if x["node"] == "n4"]
    assert n4["acceptance"] == "2" and "7 GPUs" in n4["finding"]
    suite = ET.fromstring(render_junit(whole)).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("6", "3", "2")
    page = render_html(whole)
    assert all(f"<td>{n}</td>" in page for n in ("n1", "n2", "n3", "n4", "n5")) and "SN-LOST" in page
    data = json.loads(render_json(whole))
    assert len(data["delivery_nodes"]) == 6
