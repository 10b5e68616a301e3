"""`burnin golden` reads a rack in a fixed number of queries, however many nodes it has and however
long their history (it read each node's whole history with its evidence, node by node:
about an hour for 1,000 nodes x 300 runs)."""

from __future__ import annotations

import json

import jsonschema
from sqlalchemy import event

from bringup.fleet.lifecycle import State
from bringup.fleet.models import utcnow
from bringup.fleet.reads import last_transitions
from bringup.fleet.store import FleetStore
from bringup.inventory.rack import load_rack
from burnin.golden import export
from burnin.golden import rules as golden
from burnin.golden.select import select_and_apply
from burnin.stages import STAGE_ORDER
from tests.fleet import walk_to
from tests.inventories import write_rack

RACK = "r07"


def _rack(tmp_path, nodes: int, runs: int):
    names = [f"n{i:03d}" for i in range(1, nodes + 1)]
    inv = write_rack(
        tmp_path / "inv",
        RACK,
        {n: {"bmc_address": f"10.7.0.{i}", "rack_unit": i} for i, n in enumerate(names, 1)},
    )
    store = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    for name in names:
        store.enroll(name, RACK, "h100-sxm-8x400g")
        walk_to(store, name, State.BURNIN)
    for r in range(runs):
        for name in names:
            rows = [
                {"stage": s, "check": f"{s}_check", "verdict": "PASS", "evidence": f"{name} {r} {s}"}
                for s in STAGE_ORDER
            ]
            rows.append({"stage": "preflight", "check": "ib_ports", "verdict": "PASS", "evidence": "ibstat"})
            store.add_results(name, rows)
            store.transition(name, State.GOLDEN, f"run {r}")
            store.transition(name, State.BURNIN, f"re-test {r + 1}")
    loaded, problems = load_rack(RACK, inv)
    assert loaded is not None, problems
    return store, loaded


def _selects_in_gather(store, rack) -> tuple[int, list]:
    seen: list[str] = []
    listener = lambda conn, cursor, statement, *a: seen.append(statement)  # noqa: E731
    event.listen(store.engine, "before_cursor_execute", listener)
    try:
        facts = golden.gather(store, rack)
    finally:
        event.remove(store.engine, "before_cursor_execute", listener)
    return sum(s.lstrip().upper().startswith(("SELECT", "WITH")) for s in seen), facts


def test_golden_gather_is_a_fixed_number_of_queries(tmp_path):
    counts = {}
    for nodes, runs in ((2, 2), (7, 4)):
        store, rack = _rack(tmp_path / f"{nodes}", nodes, runs)
        counts[nodes], facts = _selects_in_gather(store, rack)
        for f in facts:
            assert f.state_reason == f"re-test {runs}" and f.golden_event.reason == f"run {runs - 1}"
            assert f.evidence == {"ib_ports": "ibstat"}  # what the exports read, and nothing else
            assert {r.check for r in f.rows} == {f"{s}_check" for s in STAGE_ORDER} | {"ib_ports"}
    assert counts[2] == counts[7], counts  # was a few queries more per node (results, history)


def test_last_transitions_are_the_newest_and_the_newest_to_golden(tmp_path):
    store, _ = _rack(tmp_path, 2, 3)
    store.enroll("fresh", RACK, "h100-sxm-8x400g")
    store.enroll("elsewhere", "r08", "h100-sxm-8x400g")
    found = last_transitions(store, RACK)
    assert set(found) == {"n001", "n002", "fresh"}
    last, gold = found["n001"]
    assert (last.to_state, last.reason, gold.to_state, gold.reason) == (
        "burnin",
        "re-test 3",
        "golden",
        "run 2",
    )
    assert found["fresh"][0].to_state == "enrolled" and found["fresh"][1] is None


def _statements(store, fn) -> tuple[list[str], object]:
    seen: list[str] = []
    listener = lambda conn, cursor, statement, *a: seen.append(statement)  # noqa: E731
    event.listen(store.engine, "before_cursor_execute", listener)
    try:
        value = fn()
    finally:
        event.remove(store.engine, "before_cursor_execute", listener)
    return seen, value


def _selects(statements: list[str]) -> int:
    return sum(s.lstrip().upper().startswith(("SELECT", "WITH")) for s in statements)


def test_golden_with_moves_reads_a_fixed_number_of_queries(tmp_path):
    """After recording the moves, `burnin golden` re-read each moved node's record and
    whole history, node by node (three more queries per node: 13 s of 43 at 10,000 nodes)."""
    counts = {}
    for nodes in (2, 7):
        store, rack = _rack(tmp_path / f"{nodes}", nodes, 1)
        seen, sel = _statements(store, lambda s=store, r=rack: select_and_apply(s, r, utcnow(), None, None))
        assert len(sel.golden) == nodes and len(sel.applied) == nodes
        for record in sel.golden:  # what the export says is what the store now holds
            node = store.get_node(record["name"])
            assert record["state"] == node.state == "golden"
            assert record["golden"]["since"] == store.history(node.name)[-1].time.isoformat(
                timespec="seconds"
            )
        counts[nodes] = _selects(seen)
    # the moves are one transaction (one locked read of their nodes); nothing read after them
    assert counts[7] == counts[2], counts  # was 4 per node (record, history...), then 1


def test_a_hostfile_or_slurm_selection_reads_no_evidence(tmp_path):
    """Every selection read and parsed each golden node's ibstat evidence, which only the
    json and csv exports show (at 10,000 nodes most of `burnin golden`'s time)."""
    store, rack = _rack(tmp_path, 3, 1)
    seen, sel = _statements(
        store, lambda: select_and_apply(store, rack, utcnow(), None, None, dry_run=True, hardware=False)
    )
    assert not [s for s in seen if "evidence_blobs" in s]
    assert export.render("hostfile", sel.meta, sel.golden, sel.excluded).count("slots=8") == 3
    assert "n[001-003]" in export.render("slurm", sel.meta, sel.golden, sel.excluded)
    full = select_and_apply(store, rack, utcnow(), None, None, dry_run=True)
    assert all("hcas" in r and "firmware" in r for r in full.golden)  # json and csv: the whole record
    assert [f for f in export.FORMATS if export.needs_hardware(f)] == ["json", "csv"]
    assert export.needs_hardware("json", want_excluded=True)  # the document holds both lists
    assert not export.needs_hardware("csv", want_excluded=True)


def test_the_json_of_excluded_nodes_still_carries_the_golden_hardware(tmp_path):
    store, rack = _rack(tmp_path, 2, 1)
    store.close()
    from click.testing import CliRunner

    from burnin.cli import main

    db, inv = tmp_path / "fleet.db", tmp_path / "inv"
    res = CliRunner().invoke(
        main,
        [
            "--db",
            str(db),
            "--inventory-dir",
            str(inv),
            "golden",
            "--rack",
            RACK,
            "--format",
            "json",
            "--excluded",
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert len(doc["nodes"]) == 2 and all("hcas" in n and "firmware" in n for n in doc["nodes"])
    jsonschema.validate(doc, export.json_schema())
