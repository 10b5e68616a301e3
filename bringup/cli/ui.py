"""Terminal output shared by the CLIs: tables that keep a row on one line, a per-node progress bar.

A table is drawn with borders only on a terminal wide enough for it. Anywhere else a row stays
one line, whatever its cells hold: piped or redirected, the table is TSV (a header row, a
``# title`` line above it), and on a terminal narrower than the table it is plain columns the
terminal may wrap but nothing folds word by word. ``BRINGUP_TABLES=box|columns|tsv`` chooses
one explicitly. Lines printed on stdout or stderr are never wrapped by rich (``soft_wrap``): a
command printed for the operator to copy stays one line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

TABLES_ENV = "BRINGUP_TABLES"
TABLE_MODES = ("box", "columns", "tsv")
_BLANKS = re.compile(r"[\t\r\n\x0b\x0c]+")  # what would break a TSV field or a line

console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def table_mode(console: Console, fits: bool) -> str:
    """How a table is shown: the explicit choice, else box on a terminal it ``fits``, columns on
    a terminal too narrow for it, TSV when the output is not a terminal."""
    chosen = os.environ.get(TABLES_ENV, "").strip().lower()
    if chosen in TABLE_MODES:
        return chosen
    if not console.is_terminal:
        return "tsv"
    return "box" if fits else "columns"


def one_line(cell: str) -> str:
    """A cell's text as one line with no tab in it (a newline becomes ' / ')."""
    return _BLANKS.sub(lambda m: " / " if "\n" in m.group() else " ", cell).strip()


class RowTable(Table):
    """A rich Table that keeps each row on one line where its borders would not fit (module doc)."""

    def _natural_width(self, console: Console, options: ConsoleOptions) -> int:
        """The width the bordered table needs for every cell on one line."""
        return super().__rich_measure__(console, options.update_width(1_000_000)).maximum

    def _plain_cells(self, console: Console) -> list[list[Text]]:
        out = []
        for column in self.columns:
            cells = []
            for cell in column._cells:
                text = console.render_str(cell) if isinstance(cell, str) else cell
                cells.append(text if isinstance(text, Text) else Text(str(text)))
            out.append(cells)
        return out

    def rows_as_text(self, console: Console) -> tuple[list[str], list[list[Text]]]:
        """The header and each row's cells, as one-line texts (styles kept)."""
        header = [one_line(str(c.header)) for c in self.columns]
        columns = self._plain_cells(console)
        rows = []
        for i in range(self.row_count):
            row = []
            for cells in columns:
                cell = cells[i].copy() if i < len(cells) else Text("")
                if _BLANKS.search(cell.plain):
                    cell = Text(one_line(cell.plain), style=cell.style)
                row.append(cell)
            rows.append(row)
        return header, rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        fits = self._natural_width(console, options) <= options.max_width
        mode = table_mode(console, fits)
        if mode == "box":
            yield from super().__rich_console__(console, options)
            return
        header, rows = self.rows_as_text(console)
        title = one_line(str(self.title)) if self.title else ""
        lines = tsv_lines(title, header, rows) if mode == "tsv" else column_lines(title, header, rows)
        for line in lines:
            line.no_wrap, line.overflow, line.end = True, "ignore", ""
            yield from line.render(console)
            yield Segment.line()


def tsv_lines(title: str, header: list[str], rows: Iterable[list[Text]]) -> list[Text]:
    """``# title``, the header, one tab-separated line per row (no style: for other programs)."""
    out = [Text(f"# {title}")] if title else []
    out.append(Text("\t".join(header)))
    out += [Text("\t".join(cell.plain for cell in row)) for row in rows]
    return out


def column_lines(title: str, header: list[str], rows: Iterable[list[Text]]) -> list[Text]:
    """The title, the header and one line per row, columns padded to their widest cell."""
    rows = list(rows)
    widths = [max([cell_len(h)] + [cell_len(r[i].plain) for r in rows]) for i, h in enumerate(header)]
    out = [Text(title, style="italic")] if title else []

    def joined(cells: list[Text]) -> Text:
        line = Text()
        for i, cell in enumerate(cells):
            if i:
                line.append("  ")
            line.append_text(cell)
            if i < len(cells) - 1:
                line.append(" " * (widths[i] - cell_len(cell.plain)))
        return line

    out.append(joined([Text(h, style="bold") for h in header]))
    out += [joined(row) for row in rows]
    return out


def table(title: str, *columns: str) -> RowTable:
    t = RowTable(title=title)
    for col in columns:
        # An address or a serial cut to "10.213…" is useless to an operator: fold it where a
        # bordered table is drawn (it is only drawn where it fits: module docstring).
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
