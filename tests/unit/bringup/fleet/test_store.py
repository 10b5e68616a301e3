"""The fleet store on SQLite and on a real PostgreSQL server (make test starts one)."""

from __future__ import annotations

import multiprocessing as mp

import pytest
from sqlalchemy import text

from bringup.fleet.lifecycle import IllegalTransition, State
from bringup.fleet.store import FleetStore, NodeNotFound, StoreError, redact_url, resolve_db_url
from tests.fleet import walk_to


def _enroll(store: FleetStore, n: int = 3, rack: str = "r01") -> list[str]:
    names = [f"gpu{i:03d}" for i in range(1, n + 1)]
    for i, name in enumerate(names, 1):
        store.enroll(name, rack, "h100-sxm-8x400g", bmc_address=f"10.0.0.{i}", bmc_vendor="dell", rack_unit=i)
    return names


def test_enroll_is_idempotent_and_records_one_event(store_url):
    store = FleetStore(store_url)
    _enroll(store)
    node, created = store.enroll("gpu001", "r01", "other-profile", bmc_address="10.0.0.9", rack_unit=1)
    assert not created and node.profile == "other-profile"
    assert len(store.list_nodes()) == 3
    hist = store.history("gpu001")
    assert [(e.from_state, e.to_state) for e in hist] == [(None, "enrolled")]


def test_transitions_are_events_and_illegal_ones_raise(store_url):
    store = FleetStore(store_url)
    _enroll(store, 1)
    walk_to(store, "gpu001", "configured", actor="test")
    with pytest.raises(IllegalTransition, match=r"gpu001: illegal transition configured -> golden"):
        store.transition("gpu001", "golden", "skip burn-in")
    assert store.get_node("gpu001").state == "configured"
    events = store.history("gpu001")
    assert [e.to_state for e in events] == [
        "enrolled",
        "discovered",
        "provisioning",
        "provisioned",
        "configured",
    ]
    assert all(e.actor for e in events) and events[-1].from_state == "provisioned"


def test_node_found_by_serial_once_known(store_url):
    store = FleetStore(store_url)
    _enroll(store, 1)
    store.update_node("gpu001", serial="CN7XYZ123", macs=["b8:3f:d2:00:00:01"])
    assert store.get_node("CN7XYZ123").name == "gpu001"
    store.transition("CN7XYZ123", "discovered", "found by serial")
    assert store.get_node("gpu001").state == "discovered"
    with pytest.raises(NodeNotFound, match="nope"):
        store.get_node("nope")
    with pytest.raises(StoreError):
        store.update_node("gpu001", state="golden")


def test_results_committed_and_latest_per_check(store_url):
    store = FleetStore(store_url)
    _enroll(store, 1)
    run = store.start_run("burnin", "r01", {"stages": ["preflight"]})
    store.add_result(
        "gpu001",
        "preflight",
        "gpu_count",
        "FAIL",
        run_id=run.id,
        evidence="7 GPUs",
        findings=[{"severity": "error", "action": "RESEAT", "evidence": "GPU 3 missing"}],
    )
    store.add_result("gpu001", "preflight", "gpu_count", "PASS", run_id=run.id, metrics={"gpus": 8})
    store.add_result("gpu001", "preflight", "ecc", "UNKNOWN", run_id=run.id)
    with pytest.raises(StoreError, match="verdict"):
        store.add_result("gpu001", "preflight", "ecc", "OK")
    # A second store object (another process, say) sees everything already committed.
    other = FleetStore(store_url)
    latest = {(r.stage, r.check): r for r in other.latest_results("gpu001")}
    assert latest[("preflight", "gpu_count")].verdict == "PASS"
    assert latest[("preflight", "gpu_count")].metrics == {"gpus": 8}
    assert latest[("preflight", "ecc")].verdict == "UNKNOWN"
    finished = store.finish_run(run.id, "done", evidence="log")
    assert finished.finished_at is not None and other.get_run(run.id).status == "done"


def test_list_filters(store_url):
    store = FleetStore(store_url)
    _enroll(store, 3)
    store.enroll("other1", "r02", "p", bmc_address="10.9.9.9", rack_unit=1)
    store.transition("gpu002", "discovered", "x")
    assert [n.name for n in store.list_nodes(rack="r01")] == ["gpu001", "gpu002", "gpu003"]
    assert [n.name for n in store.list_nodes(state="discovered")] == ["gpu002"]
    with pytest.raises(ValueError, match="unknown node state"):
        store.list_nodes(state="bogus")


def test_db_url_resolution(tmp_path, monkeypatch):
    monkeypatch.delenv("BRINGUP_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert resolve_db_url() == f"sqlite:///{tmp_path / 'xdg' / 'bringup' / 'fleet.db'}"
    monkeypatch.setenv("BRINGUP_DB", str(tmp_path / "env.db"))
    assert resolve_db_url().endswith("env.db")
    assert resolve_db_url("postgresql://u:p@h/db") == "postgresql://u:p@h/db"
    assert "secret" not in redact_url("postgresql://u:secret@h/db")


def test_unreachable_postgres_is_a_clear_error():
    with pytest.raises(StoreError, match=r"cannot open fleet store postgresql://u:\*\*\*@127.0.0.1:1/x"):
        FleetStore("postgresql://u:secret@127.0.0.1:1/x?connect_timeout=2")


# -- two writers at once ------------------------------------------------------------------

NODES, RESULTS = 20, 150


def _writer(url: str, tag: str, barrier, out) -> None:
    store = FleetStore(url)
    barrier.wait()
    won = 0
    for i in range(RESULTS):
        name = f"gpu{i % NODES + 1:03d}"
        store.add_result(name, "preflight", f"check-{tag}-{i}", "PASS", evidence=f"{tag} {i}")
        if i < NODES:
            try:
                store.transition(name, State.BURNIN, f"burn-in by {tag}", actor=tag)
                won += 1
            except IllegalTransition:
                pass
    out.put((tag, won))


def test_two_writers_lose_nothing(store_url):
    store = FleetStore(store_url)
    names = _enroll(store, NODES)
    for name in names:
        walk_to(store, name, "configured", actor="test")
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(store_url, tag, barrier, out)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    wins = dict(out.get(timeout=5) for _ in procs)
    # Every node moved exactly once: the second writer saw the first one's move under the lock.
    assert wins["a"] + wins["b"] == NODES
    for name in names:
        moves = [e for e in store.history(name) if e.to_state == "burnin"]
        assert len(moves) == 1 and store.get_node(name).state == "burnin"
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM check_results")).scalar() == 2 * RESULTS


def test_sqlite_readers_do_not_queue_behind_a_writer(tmp_path):
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    writer, reader = FleetStore(url), FleetStore(url)
    _enroll(writer, 2)
    with writer.session() as s:  # holds the write lock until the block ends
        node = s.execute(text("SELECT id FROM nodes WHERE name = 'gpu001'")).scalar()
        s.execute(text("UPDATE nodes SET ip = '10.0.0.99' WHERE id = :i"), {"i": node})
        # A writer-style transaction here would wait for the lock (and fail after the timeout).
        assert [n.ip for n in reader.list_nodes()] == [None, None]
    assert reader.get_node("gpu001").ip == "10.0.0.99"
