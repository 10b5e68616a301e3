"""The store's schema through Alembic: fresh stores, stores made by older bringups, refusals."""

from __future__ import annotations

import os
import shutil
import sqlite3

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from bringup.fleet import schema
from bringup.fleet.models import Base
from bringup.fleet.runs import run_ledger
from bringup.fleet.schema import SchemaError
from bringup.fleet.store import FleetStore
from tests.paths import FIXTURES

MADE_BY_V1 = FIXTURES / "stores" / "fleet-v1.db"  # made by bringup at aca68b7 (schema_version 1)
MADE_BY_V1_PG = FIXTURES / "stores" / "fleet-v1.pg.sql"  # the same on PostgreSQL (pg_dump)


def _scripts() -> ScriptDirectory:
    config = Config()
    config.set_main_option("script_location", str(schema.MIGRATIONS_DIR))
    return ScriptDirectory.from_config(config)


def test_revisions_are_one_numbered_chain_and_the_head_is_the_highest_file():
    scripts = _scripts()
    ids = schema.known_revisions()
    assert ids == [f"{n:04d}" for n in range(1, len(ids) + 1)]
    assert scripts.get_heads() == [schema.head()] == [ids[-1]]
    for previous, rev in zip([None, *ids], ids, strict=False):
        assert scripts.get_revision(rev).down_revision == previous


def test_a_new_store_is_made_by_the_migrations_and_matches_the_models(store_url):
    store = FleetStore(store_url)
    assert store.schema_revision() == schema.head()
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    # Nothing in the models that the migrations did not make, and nothing more.
    assert diff == []


def test_opening_a_current_store_runs_no_migration(store_url, caplog):
    FleetStore(store_url).close()
    with caplog.at_level("INFO", logger="bringup.fleet.store"):
        FleetStore(store_url).close()
    assert "upgraded" not in caplog.text


def _history_intact(store: FleetStore) -> None:
    """What the store made by the previous main holds (make_fleet_v1.py), after the upgrade."""
    assert store.schema_revision() == schema.head()
    nodes = {n.name: n for n in store.list_nodes(rack="r01")}
    assert {k: (n.serial, n.state) for k, n in nodes.items()} == {
        "node01": ("SN001", "golden"),
        "node02": ("SN002", "failed"),
        "node03": ("SN003", "burnin"),
    }
    assert nodes["node01"].ssh_host_keys == []
    history = store.history("node02")
    assert [e.to_state for e in history if e.kind == "transition"] == [
        "enrolled",
        "discovered",
        "provisioning",
        "provisioned",
        "configured",
        "burnin",
        "failed",
    ]
    assert history[-1].reason == "Xid 79" and history[-1].actor == "maker"
    latest = {(r.stage, r.check): r for r in store.latest_results("node02")}
    assert latest["preflight", "gpu_ecc"].verdict == "FAIL"
    assert latest["preflight", "gpu_ecc"].findings == [{"severity": "FAIL", "message": "Xid 79"}]
    # The run left running by a Ctrl-C before this schema keeps its row; its controller is unknown.
    stranded = store.get_run(2)
    assert stranded.status == "running" and stranded.controller_pid is None
    assert store.get_run(1).status == "done"
    # Evidence moved into blobs (0003): six results shared one nvidia-smi -q, stored once now.
    smi = "==============NVSMI LOG==============\nAttached GPUs : 8\n" + "x" * 5000
    assert store.evidence(latest["preflight", "gpu_versions"]) == smi
    assert store.evidence(store.latest_results("node01")[0]) == smi + "second"  # the newest
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT value FROM meta WHERE key = 'schema_version'")).scalar() == "2"
        blobs = conn.execute(text("SELECT count(*), sum(size) FROM evidence_blobs")).one()
        assert tuple(blobs) == (2, 2 * len(smi) + 6)
        assert conn.execute(text("SELECT count(DISTINCT evidence_id) FROM check_results")).scalar() == 2
        assert (
            conn.execute(text("SELECT count(*) FROM check_results WHERE evidence_id IS NULL")).scalar() == 0
        )
        columns = {c["name"] for c in inspect(conn).get_columns("check_results")}
        assert "evidence" not in columns and {"evidence_id", "evidence_pruned_at"} <= columns
    # The store works on: a new result, a run that claims its nodes.
    store.add_result("node03", "preflight", "gpu_ecc", "PASS")
    assert {r.verdict for r in store.latest_results("node03")} == {"PASS"}
    with run_ledger(store, "burnin", "r01", nodes=["node01", "node03"]) as run:
        assert run.id == 3  # the id sequence carried over
    assert store.get_run(3).status == "done"


def test_a_store_made_by_the_previous_main_is_upgraded_with_its_history(tmp_path):
    path = tmp_path / "fleet.db"
    shutil.copyfile(MADE_BY_V1, path)
    os.chmod(path, 0o600)
    _history_intact(FleetStore(f"sqlite:///{path}"))
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA foreign_keys").fetchone() == (0,)  # a fresh connection's default
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@pytest.mark.postgres
def test_a_postgresql_store_made_by_the_previous_main_is_upgraded_with_its_history(pg_url):
    """The same store, made by the previous main on PostgreSQL (its pg_dump), upgraded the same way."""
    engine = create_engine(pg_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(MADE_BY_V1_PG.read_text())
    engine.dispose()  # the dump emptied its session's search_path
    store = FleetStore(pg_url)
    try:
        _history_intact(store)
    finally:
        store.close()


def test_the_baseline_revision_is_what_the_previous_main_made(tmp_path, store_url):
    """0001 spells out the old tables: a store upgraded from the old file and a store made from
    nothing end with the same schema."""
    path = tmp_path / "old.db"
    shutil.copyfile(MADE_BY_V1, path)
    os.chmod(path, 0o600)
    FleetStore(f"sqlite:///{path}").close()
    with create_engine(f"sqlite:///{path}").connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []


def test_a_store_stamped_at_the_baseline_is_upgraded(store_url):
    """The same path on PostgreSQL: a store at 0001 with rows in it reaches the head."""
    engine = create_engine(store_url)
    config = Config()
    config.set_main_option("script_location", str(schema.MIGRATIONS_DIR))
    from alembic import command

    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
        conn.execute(
            text(
                "INSERT INTO nodes (name, rack, profile, state, macs, hardware, created_at, updated_at) "
                "VALUES ('n1', 'r01', 'p', 'golden', '[]', '{}', '2026-11-01 00:00:00+00', "
                "'2026-11-01 00:00:00+00')"
            )
        )
    engine.dispose()
    store = FleetStore(store_url)
    assert store.schema_revision() == schema.head()
    node = store.get_node("n1")
    assert (node.state, node.ssh_host_keys) == ("golden", [])


def test_a_newer_store_is_refused_by_name(store_url):
    store = FleetStore(store_url)
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    store.close()
    with pytest.raises(SchemaError, match="schema revision 9999, newer than this bringup understands"):
        FleetStore(store_url)


def test_tables_without_a_version_are_refused(tmp_path):
    path = tmp_path / "foreign.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE nodes (id INTEGER)")
    con.close()
    with pytest.raises(SchemaError, match="no schema version; refusing to guess"):
        FleetStore(f"sqlite:///{path}")


def test_a_failed_migration_leaves_the_store_as_it_was(tmp_path):
    path = tmp_path / "fleet.db"
    shutil.copyfile(MADE_BY_V1, path)
    os.chmod(path, 0o600)
    with sqlite3.connect(path) as con:
        # A column 0002 adds, already there: the upgrade fails half-way through.
        con.execute("ALTER TABLE runs ADD COLUMN end_reason TEXT")
    with pytest.raises(SchemaError, match="from 0001 to .* failed"):
        FleetStore(f"sqlite:///{path}")
    with sqlite3.connect(path) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "claims" not in tables and "alembic_version" not in tables
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
