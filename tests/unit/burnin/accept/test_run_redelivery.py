"""A re-delivery over a real fleet store, the burn-in runs played by a stand-in of run_rack:
the repaired node is tested beside the delivery's accepted nodes of its profile (partners in
the group stages, not re-tested themselves); with no partner of its profile it waits, neither
tested alone nor rejected; the folder's RMA bundle of a node accepted now moves to
rma/superseded/ with a line in the delivery's log; the reports cover the whole delivery."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from burnin.accept import ledger
from burnin.accept import run as run_mod
from burnin.accept.run import AcceptRequest, NothingToTest, accept_delivery
from burnin.stages.jobs import BurninOutcome
from tests.fleet import walk_to
from tests.inventories import write_rack

RACK = "r08"
NODES = ("n1", "n2", "n3")
GPU = {
    "message": "7 GPU(s) found, the profile has 8",
    "severity": "critical",
    "action": "RESEAT",
    "subject": "",
    "evidence": "Attached GPUs : 7",
}


@pytest.fixture
def site(tmp_path: Path):
    hosts = {
        n: {"bmc_address": f"10.9.1.{i}", "ansible_host": f"10.9.0.{i}", "rack_unit": i}
        for i, n in enumerate(NODES, 1)
    }
    inv = write_rack(tmp_path / "inventories", RACK, hosts)
    order = {
        "name": "po43",
        "nodes": {"count": 4, "serials": ["SN1", "SN2", "SN3", "SN-NEVER"]},
        "profiles": {"h100-sxm-8x400g": {}},
        "acceptance": {"stages": ["preflight", "ib", "nccl"], "soak": 0},
    }
    (inv / "deliveries").mkdir()
    (inv / "deliveries" / "po43.yml").write_text(yaml.safe_dump(order))
    store = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    for i, name in enumerate(NODES, 1):
        store.enroll(name, RACK, "h100-sxm-8x400g", rack_unit=i)
        walk_to(store, name, State.BURNIN)
        store.update_node(name, serial=f"SN{i}", hardware={"discovered_at": "2026-05-01T07:50:00+00:00"})
    return inv, store


class Burnin:
    """run_rack's stand-in: records each request and a result per node and stage, failing the
    nodes in ``bad`` (moved to failed, as a real run does)."""

    def __init__(self, store: FleetStore):
        self.store, self.requests, self.bad = store, [], set()

    def __call__(self, store, inventory_dir, request, progress=None):
        self.requests.append(request)
        params = {**request.tags, "nodes": list(request.nodes), "stages": list(request.stages)}
        run = store.start_run("burnin", request.rack, params)
        for node in request.nodes:
            if store.get_node(node).state != State.BURNIN.value:
                store.transition(node, State.BURNIN, f"burn-in run {run.id}")
        for node in request.nodes:
            bad = node in self.bad
            store.add_result(
                node,
                "preflight",
                "gpu_inventory",
                "FAIL" if bad else "PASS",
                run_id=run.id,
                findings=[GPU] if bad else [],
                evidence="Attached GPUs : 7" if bad else "Attached GPUs : 8",
            )
            for stage in request.stages[1:]:
                if not bad:
                    store.add_result(node, stage, stage, "PASS", run_id=run.id)
            if bad:
                store.transition(node, State.FAILED, f"burn-in run {run.id}: gpu_inventory")
        store.finish_run(run.id, "failed" if self.bad & set(request.nodes) else "done")
        return [BurninOutcome(n) for n in request.nodes]


def repaired(store: FleetStore, node: str) -> None:
    store.transition(node, State.REPAIR, "vendor reseated GPU 4")


def test_a_repaired_node_is_tested_beside_the_accepted_nodes_of_its_profile(site, tmp_path, monkeypatch):
    inv, store = site
    burnin = Burnin(store)
    monkeypatch.setattr(run_mod, "run_rack", burnin)
    out = tmp_path / "out"
    burnin.bad = {"n2"}
    first = accept_delivery(store, inv, AcceptRequest(RACK, "po43", out_dir=out))
    assert {d.node: d.decision for d in first.decisions} == {
        "n1": "accepted",
        "n2": "rejected",
        "n3": "accepted",
    }
    assert [b.name for b in (out / "rma").iterdir()] == ["n2-SN2-rma.tar.gz"]
    repaired(store, "n2")
    burnin.bad = set()
    second = accept_delivery(store, inv, AcceptRequest(RACK, "po43", out_dir=out))
    request = burnin.requests[-1]
    assert list(request.nodes) == ["n2"]
    assert list(request.partners) == ["n1", "n3"]  # accepted, same profile, not re-tested
    assert request.single_keep_going
    assert [(d.node, d.decision) for d in second.decisions] == [("n2", "accepted")]
    assert second.delivery_decision.accepted_nodes == 3
    assert {n: store.get_node(n).state for n in NODES} == dict.fromkeys(NODES, "burnin")

    # the folder matches the decisions: n2's bundle leaves rma/, a line in the delivery's log says so
    assert not list((out / "rma").glob("*.tar.gz"))
    (moved,) = (out / "rma" / "superseded").iterdir()
    assert moved.name.startswith("n2-SN2-rma") and moved.name.endswith(".tar.gz")
    log = (out / "acceptance.log").read_text()
    assert f"n2 accepted in acceptance #{second.acceptance_id}" in log and moved.name in log

    # the reports cover the whole delivery: every ordered serial and arrived node, never-arrived too
    report = json.loads((out / "acceptance.json").read_text())
    roster = {r["serial"]: r for r in report["delivery_nodes"]}
    assert set(roster) == {"SN1", "SN2", "SN3", "SN-NEVER"}
    assert roster["SN1"]["decision"] == "accepted" and roster["SN1"]["acceptance"] == first.acceptance_id
    assert roster["SN2"]["decision"] == "accepted" and roster["SN2"]["acceptance"] == second.acceptance_id
    assert roster["SN-NEVER"]["status"] == "never arrived" and roster["SN-NEVER"]["node"] is None
    rows = list(csv.DictReader((out / "acceptance.csv").open()))
    assert {r["chassis_serial"] for r in rows} == {"SN1", "SN2", "SN3", "SN-NEVER"}
    junit = (out / "acceptance.junit.xml").read_text()
    assert junit.count("<testcase ") == 4 and "SN-NEVER" in junit
    page = (out / "acceptance.html").read_text()
    assert all(f"<td>{n}</td>" in page for n in NODES) and "SN-NEVER" in page


def test_a_repaired_node_with_no_partner_of_its_profile_waits_instead_of_being_tested_alone(
    site, tmp_path, monkeypatch
):
    inv, store = site
    burnin = Burnin(store)
    monkeypatch.setattr(run_mod, "run_rack", burnin)
    out = tmp_path / "out"
    burnin.bad = set(NODES)
    accept_delivery(store, inv, AcceptRequest(RACK, "po43", out_dir=out))
    repaired(store, "n2")
    burnin.bad = set()
    with pytest.raises(NothingToTest, match="n2: too few partners") as caught:
        accept_delivery(store, inv, AcceptRequest(RACK, "po43", out_dir=out))
    assert not caught.value.accepted
    assert len(burnin.requests) == 1  # never tested alone
    assert store.get_node("n2").state == "repair"  # not rejected again: no move, no decision
    decisions = [d.decision for d in ledger.decisions(store, RACK, "po43") if d.node == "n2"]
    assert decisions == ["rejected"]
