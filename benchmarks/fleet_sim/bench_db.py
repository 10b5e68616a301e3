"""The database a store benchmark writes into: its own SQLite file, or ``--db URL``.

A benchmark writes thousands of simulated nodes, runs and results, and `burnin golden` moves
them: pointed at a real fleet store by mistake it would bury the real history. So a ``--db``
database must be a fresh one (``refuse_unless_fresh``): no tables (an empty database, as
``createdb`` makes it), or a fleet store without nodes. Re-timing a store a benchmark built
(``refuse_unless_bench_store``) takes a fleet store whose nodes are all in the benchmark's
racks, and refuses an empty database too (the command timed would give it the store's schema).
Both check before the store is opened, so a refused database is left as it was.
"""

from __future__ import annotations

from sqlalchemy import create_engine, func, inspect, select, text

from bringup.fleet.store import redact_url


class NotABenchmarkDatabase(SystemExit):
    """The ``--db`` database holds something a benchmark must not write over."""


def _nodes_per_rack(url: str) -> dict[str, int] | None:
    """None for a database without tables, else the fleet store's node count per rack."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
            if not tables:
                return None
            if "nodes" not in tables:
                raise NotABenchmarkDatabase(
                    f"refusing {redact_url(url)}: it holds tables that are not a fleet store's "
                    f"({', '.join(sorted(tables)[:5])}); give the benchmark an empty database"
                )
            rows = conn.execute(text("SELECT rack, count(*) FROM nodes GROUP BY rack")).all()
            return {rack: n for rack, n in rows}
    finally:
        engine.dispose()


def _refuse_foreign(url: str, racks: dict[str, int], allowed: frozenset[str]) -> None:
    foreign = {rack: n for rack, n in racks.items() if rack not in allowed}
    if foreign:
        raise NotABenchmarkDatabase(
            f"refusing {redact_url(url)}: it already holds {sum(foreign.values()):,} node(s) "
            f"(racks {', '.join(sorted(foreign)[:5])}); a benchmark writes and moves simulated "
            "nodes, so give it an empty database (createdb) and drop it after"
        )


def refuse_unless_fresh(url: str) -> None:
    """Raise unless the database is empty or a fleet store without nodes."""
    _refuse_foreign(url, _nodes_per_rack(url) or {}, frozenset())


def refuse_unless_bench_store(url: str, racks: frozenset[str]) -> None:
    """Raise unless the database is a fleet store holding nodes, all of them in ``racks``."""
    found = _nodes_per_rack(url)
    if not found:
        raise NotABenchmarkDatabase(
            f"refusing {redact_url(url)}: it holds no benchmark store to time (build one first)"
        )
    _refuse_foreign(url, found, racks)


def store_bytes(store) -> int:  # noqa: ANN001 (a FleetStore)
    """The store's size on disk: the SQLite file, or PostgreSQL's pg_database_size."""
    engine = store.engine
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            return conn.execute(select(func.pg_database_size(func.current_database()))).scalar_one()
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar_one()
        return pages * conn.exec_driver_sql("PRAGMA page_size").scalar_one()
