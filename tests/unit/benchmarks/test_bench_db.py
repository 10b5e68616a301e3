"""A store benchmark's ``--db`` (benchmarks/store.py, report.py, run_claims.py) writes and moves
thousands of simulated nodes, so it must refuse a database that holds a real fleet, or anything
else, before it opens the store (which would give that database the store's schema)."""

from __future__ import annotations

import sqlite3

import pytest

from benchmarks.fleet_sim.bench_db import (
    NotABenchmarkDatabase,
    refuse_unless_bench_store,
    refuse_unless_fresh,
    store_bytes,
)
from bringup.fleet.store import FleetStore

BENCH = frozenset({"bench", "sample-rack"})


def test_an_empty_database_or_a_store_without_nodes_is_fresh(tmp_path):
    refuse_unless_fresh(f"sqlite:///{tmp_path / 'empty.db'}")
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    FleetStore(url).close()
    refuse_unless_fresh(url)


def test_a_store_with_nodes_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    store = FleetStore(url)
    store.enroll("gpu001", "r01", "p")
    store.enroll("gpu002", "r01", "p")
    store.close()
    with pytest.raises(NotABenchmarkDatabase, match=r"already holds 2 node\(s\) \(racks r01\)"):
        refuse_unless_fresh(url)
    # a real fleet is not a benchmark's store to re-time either
    with pytest.raises(NotABenchmarkDatabase, match="r01"):
        refuse_unless_bench_store(url, BENCH)


def test_a_database_of_something_else_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    for check in (refuse_unless_fresh, lambda url: refuse_unless_bench_store(url, BENCH)):
        with pytest.raises(NotABenchmarkDatabase, match="not a fleet store's"):
            check(f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["invoices"]


def test_re_timing_takes_only_a_store_of_the_benchmarks_racks(tmp_path):
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    with pytest.raises(NotABenchmarkDatabase, match="no benchmark store to time"):
        refuse_unless_bench_store(url, BENCH)
    store = FleetStore(url)
    with pytest.raises(NotABenchmarkDatabase, match="no benchmark store to time"):
        refuse_unless_bench_store(url, BENCH)
    store.enroll("n0001", "bench", "p")
    store.enroll("sample", "sample-rack", "p")
    assert store_bytes(store) > 0
    store.close()
    refuse_unless_bench_store(url, BENCH)
    with pytest.raises(NotABenchmarkDatabase, match="already holds 2 node"):
        refuse_unless_fresh(url)
