"""Counting a fleet store's write transactions (lifecycle writes batched, not one
transaction per node): the real engine's own events, nothing stood in for."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event

from bringup.fleet.store import FleetStore


@contextmanager
def write_transactions(store: FleetStore) -> Iterator[list[str]]:
    """The write transactions committed on ``store`` while the block runs, each as its first
    write statement (a transaction that only read is not counted)."""
    committed: list[str] = []
    first: dict[int, str] = {}

    def on_statement(conn, cursor, statement, *args) -> None:
        if statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
            first.setdefault(id(conn), statement.split("\n")[0][:80])

    def on_commit(conn) -> None:
        if id(conn) in first:
            committed.append(first.pop(id(conn)))

    event.listen(store.engine, "after_cursor_execute", on_statement)
    event.listen(store.engine, "commit", on_commit)
    try:
        yield committed
    finally:
        event.remove(store.engine, "after_cursor_execute", on_statement)
        event.remove(store.engine, "commit", on_commit)
