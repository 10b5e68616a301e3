"""Terminal output shared by the CLIs: tables that fold long cells instead of cutting them."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True)


def table(title: str, *columns: str) -> Table:
    t = Table(title=title)
    for col in columns:
        # An address or a serial cut to "10.213…" is useless to an operator: fold it instead.
        t.add_column(col, overflow="fold")
    return t
