"""A corrupt, read-only or full fleet store is the user's to fix: one line naming the store and
what to do, exit 1, never "internal error ... (a bug in bringup)" (exit 70) as before; and a write
that fails part-way says what was committed (a full disk enrolled 66 of 1,000 nodes silently)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from sqlalchemy import event

from bringup.cli.main import main
from bringup.fleet.enroll import enroll_hosts
from bringup.fleet.store import FleetStore, StoreError


def cli(db: str, *args: str):
    res = CliRunner().invoke(main, ["--db", db, *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res


def one_error_line(res) -> str:
    assert res.exit_code == 1 and "internal error" not in res.output, res.output
    (line,) = [x for x in res.output.splitlines() if x.startswith("error:")]
    return line


def test_a_corrupt_store_is_one_line_naming_it(tmp_path):
    db = tmp_path / "fleet.db"
    db.write_bytes(b"this is not a database, it is a text file someone saved here\n" * 100)
    line = one_error_line(cli(str(db), "nodes", "list"))
    assert str(db) in line and "not a database" in line and "--db" in line


def test_a_store_corrupt_after_opening_is_one_line_too(tmp_path):
    db = tmp_path / "fleet.db"
    FleetStore.open(str(db)).close()
    data = bytearray(db.read_bytes())
    data[4096 : 4096 * 3] = b"\xff" * (4096 * 2)  # pages of the schema's tables overwritten
    db.write_bytes(bytes(data))
    res = cli(str(db), "nodes", "list")
    line = one_error_line(res)
    assert str(db) in line


def test_a_read_only_store_is_one_line_naming_it(tmp_path):
    db = tmp_path / "fleet.db"
    store = FleetStore.open(str(db))
    store.enroll("gpu001", "r01", "h100-sxm-8x400g")
    store.close()
    url = f"sqlite:///file:{db}?mode=ro&uri=true"  # what a chmod 444 file is to a non-root user
    assert "gpu001" in cli(url, "nodes", "list").output  # reading still works
    line = one_error_line(cli(url, "nodes", "retire", "gpu001", "--reason", "gone"))
    assert str(db) in line and "read-only" in line


def _full_after(store: FleetStore, spare_pages: int) -> None:
    """SQLite's max_page_count: the store's file may grow by ``spare_pages`` pages only, as on a
    disk that fills (SQLITE_FULL, "database or disk is full")."""
    with store.engine.connect() as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar()

    @event.listens_for(store.engine, "connect")
    def _cap(dbapi_conn, _record):
        dbapi_conn.execute(f"PRAGMA max_page_count={pages + spare_pages}")

    store.engine.dispose()


def hosts(n: int) -> list[SimpleNamespace]:
    return [
        SimpleNamespace(
            name=f"gpu{i:04d}",
            profile="h100-sxm-8x400g",
            bmc_address=f"10.1.{i // 250}.{i % 250 + 1}",
            bmc_vendor="generic",
            rack_unit=i + 1,
        )
        for i in range(n)
    ]


def test_a_full_store_says_how_many_nodes_were_enrolled(tmp_path):
    store = FleetStore.open(str(tmp_path / "fleet.db"))
    _full_after(store, 6)
    with pytest.raises(StoreError) as caught:
        enroll_hosts(store, "r01", hosts(1000))
    enrolled = len(store.list_nodes(rack="r01"))
    assert 0 < enrolled < 1000
    message = str(caught.value)
    assert f"{enrolled} of 1000 node(s) enrolled" in message and "full" in message
    assert f"gpu{enrolled:04d}" in message  # the first one not enrolled
    assert "\n" not in message


def test_a_database_error_the_store_does_not_explain_stays_a_bug():
    import sqlite3

    from sqlalchemy.exc import IntegrityError, OperationalError

    from bringup.fleet.store_errors import store_fault

    broken = IntegrityError("INSERT ...", {}, sqlite3.IntegrityError("UNIQUE constraint failed: nodes.name"))
    assert store_fault("sqlite:////x/fleet.db", broken) is None
    gone = OperationalError("SELECT 1", {}, Exception("server closed the connection unexpectedly"))
    fault = store_fault("postgresql://u:secret@db/fleet", gone)
    assert fault is not None and "secret" not in str(fault) and "server closed" in str(fault)


@pytest.mark.postgres
def test_a_read_only_postgresql_store_is_one_line_naming_it(pg_url):
    """A standby or a read-only role: every write is refused by the server."""
    FleetStore(pg_url).enroll("gpu001", "r01", "h100-sxm-8x400g")
    sep = "&" if "?" in pg_url else "?"
    read_only = f"{pg_url}{sep}options=-c%20default_transaction_read_only%3Don"
    store = FleetStore(read_only)
    assert [n.name for n in store.list_nodes()] == ["gpu001"]
    with pytest.raises(StoreError, match="read-only") as caught:
        store.enroll("gpu002", "r01", "h100-sxm-8x400g")
    assert "bringup_test:***@" in str(caught.value)  # named, its password not
