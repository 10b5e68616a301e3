"""Terminal output shared by the CLIs: tables that fold long cells, a per-node progress bar."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

console = Console()
err_console = Console(stderr=True)


def table(title: str, *columns: str) -> Table:
    t = Table(title=title)
    for col in columns:
        # An address or a serial cut to "10.213…" is useless to an operator: fold it instead.
        t.add_column(col, overflow="fold")
    return t


def node_progress() -> Progress:
    """A bar of nodes done on stderr; off when stderr is not a terminal (logs stay readable)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
        disable=not err_console.is_terminal,
    )
