"""accept_delivery over a real fleet store: an acceptance whose controller died after its burn-in
run finished is continued to its decision (nothing is run again), the decisions are events and
move rejected nodes to failed, the outputs are written, and no secret of the inventory is in any
of them."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
import yaml

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from burnin.accept import ledger
from burnin.accept.decide import NodeDecision, Reason
from burnin.accept.run import AcceptRequest, NothingToTest, accept_delivery, record_decisions
from tests.fleet import walk_to
from tests.inventories import write_rack
from tests.writes import write_transactions

RACK = "r07"
NODES = ("n1", "n2", "n3")
PASSWORD = "pw-7f3a9c-must-never-leak"
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ-unit-test-key-body-0123456789"
DMIDECODE = "Handle 0x1101, DMI type 17\nMemory Device\n\tSize: No Module Installed\n\tLocator: DIMM_B1\n"
DIMM = {
    "message": "DIMM slot DIMM_B1 is empty: 31 of 32 DIMMs present",
    "severity": "critical",
    "action": "RESEAT",
    "subject": "DIMM_B1",
    "evidence": "Locator: DIMM_B1",
}


@pytest.fixture
def site(tmp_path: Path):
    hosts = {
        n: {"bmc_address": f"10.9.1.{i}", "ansible_host": f"10.9.0.{i}", "rack_unit": i}
        for i, n in enumerate(NODES, 1)
    }
    key = tmp_path / "inventories" / "id_test"
    inv = write_rack(
        tmp_path / "inventories", RACK, hosts, password=PASSWORD, ansible_ssh_private_key_file=str(key)
    )
    key.write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----\n")
    order = {
        "name": "po42",
        "nodes": {"count": 3, "serials": ["SN1", "SN2", "SN-PACKED"]},
        "profiles": {"h100-sxm-8x400g": {}},
        "acceptance": {"stages": ["preflight"], "soak": 0},
    }
    (inv / "deliveries").mkdir()
    (inv / "deliveries" / "po42.yml").write_text(yaml.safe_dump(order))
    store = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    for i, name in enumerate(NODES, 1):
        store.enroll(name, RACK, "h100-sxm-8x400g", rack_unit=i)
        walk_to(store, name, State.BURNIN)
        hardware = {
            "discovered_at": "2026-05-01T07:50:00+00:00",
            "system": {"manufacturer": "Dell Inc.", "model": "PowerEdge XE9680"},
            "bmc": {"firmware_version": "7.10.30.00", "url": f"https://10.9.1.{i}"},
            "firmware": [{"name": "BIOS", "version": "1.6.0"}],
            "event_log": [{"Id": "7", "Severity": "Critical", "Message": "Memory DIMM_B1 not detected"}],
        }
        store.update_node(name, serial=f"SN{i}", hardware=hardware)
    return inv, store


def died_after_its_burn_in(store: FleetStore) -> int:
    """An acceptance whose controller died once its burn-in run had finished."""
    params = {"delivery": "po42", "acceptance": None, "nodes": list(NODES), "soak_s": 0.0}
    accept = store.start_run(ledger.ACCEPT_KIND, RACK, params)
    store.finish_run(accept.id, "abandoned")
    burn = store.start_run("burnin", RACK, {"acceptance": accept.id, "iteration": 0, "nodes": list(NODES)})
    for node in NODES:
        bad = node == "n2"
        store.add_result(
            node,
            "preflight",
            "memory_dimms",
            "FAIL" if bad else "PASS",
            run_id=burn.id,
            findings=[DIMM] if bad else [],
            evidence=DMIDECODE if bad else "32 DIMMs",
        )
    store.transition("n2", State.FAILED, f"burn-in run {burn.id}: memory_dimms")
    store.finish_run(burn.id, "failed")
    return accept.id


def every_byte_written(out: Path) -> dict[str, bytes]:
    files = {str(p): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    for path in out.rglob("*.tar.gz"):
        with tarfile.open(fileobj=io.BytesIO(path.read_bytes())) as tar:
            files.update(
                {f"{path}:{m.name}": tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
            )
    return files


def test_a_dead_controllers_acceptance_is_decided_without_running_anything_again(site, tmp_path):
    inv, store = site
    acceptance = died_after_its_burn_in(store)
    result = accept_delivery(store, inv, AcceptRequest(RACK, "po42", out_dir=tmp_path / "out"))
    assert result.acceptance_id == acceptance
    assert [i.iteration for i in result.iterations] == [0]  # no second burn-in run
    decided = {d.node: d for d in result.decisions}
    assert {n: d.decision for n, d in decided.items()} == {
        "n1": "accepted",
        "n2": "rejected",
        "n3": "rejected",
    }
    (dimm,) = decided["n2"].reasons
    assert (dimm.part, dimm.slot, dimm.action, dimm.iteration) == ("memory_dimms", "DIMM_B1", "RESEAT", 0)
    assert [(r.part, r.serial, r.action) for r in decided["n3"].reasons] == [("chassis", "SN3", "RMA")]
    assert not result.delivery_decision.accepted
    assert any("SN-PACKED" in p for p in result.delivery_decision.problems)
    assert {n: store.get_node(n).state for n in NODES} == {"n1": "burnin", "n2": "failed", "n3": "failed"}
    events = [e for e in store.history("n3") if e.kind == ledger.DECISION_EVENT]
    assert [e.details["decision"] for e in events] == ["rejected"]
    (record,) = ledger.acceptances(store, RACK, "po42")
    assert record.complete and record.id == acceptance
    names = sorted(Path(p).name for p in result.outputs)
    assert names[-2:] == ["n2-SN2-rma.tar.gz", "n3-SN3-rma.tar.gz"]
    written = every_byte_written(tmp_path / "out")
    assert any(DMIDECODE.encode() == data for data in written.values())  # the raw output behind the finding
    for secret in (PASSWORD, KEY_BODY):
        assert not [where for where, data in written.items() if secret.encode() in data], secret
    # decided: the same command waits for the vendor's fixes
    with pytest.raises(NothingToTest, match="mark-repaired n2"):
        accept_delivery(store, inv, AcceptRequest(RACK, "po42"))


def test_the_decisions_are_one_transaction_and_a_refused_move_loses_no_other(site):
    """Each node's decision was its own transactions (its event, then its move to
    failed). Now the acceptance's decisions are one. A rejected node in repair cannot move to
    failed: it stays there, its decision recorded; a rejected node already failed is not moved."""
    _inv, store = site
    store.transition("n3", State.FAILED, "test")
    store.transition("n3", State.REPAIR, "vendor fixed it")
    walk_to(store, "n1", State.GOLDEN)
    store.transition("n1", State.FAILED, "found by the nightly")
    dimm = Reason("order", "memory_dimms", "DIMM slot DIMM_B1 is empty", "RESEAT", slot="DIMM_B1")
    decisions = [
        NodeDecision("n1", "SN1", "rejected", (dimm,)),
        NodeDecision("n2", "SN2", "rejected", (dimm,)),
        NodeDecision("n3", "SN3", "rejected", (dimm,)),
    ]
    run = store.start_run(ledger.ACCEPT_KIND, RACK, {"delivery": "po42"})
    with write_transactions(store) as writes:
        record_decisions(store, "po42", 7, decisions, run.id)
    assert len(writes) == 1, writes
    assert {n: store.get_node(n).state for n in NODES} == {"n1": "failed", "n2": "failed", "n3": "repair"}
    for name in NODES:
        (event,) = [e for e in store.history(name) if e.kind == ledger.DECISION_EVENT]
        assert (
            event.reason
            == "delivery po42, acceptance #7: rejected: memory_dimms [DIMM_B1]: DIMM slot DIMM_B1 is empty -> RESEAT"
        )
        assert event.details["decision"] == "rejected" and event.run_id == run.id
    (moved,) = [e for e in store.history("n2") if e.kind == "transition" and e.run_id == run.id]
    assert (moved.from_state, moved.to_state) == ("burnin", "failed")
    assert not [
        e for e in store.history("n1") + store.history("n3") if e.kind == "transition" and e.run_id == run.id
    ]
