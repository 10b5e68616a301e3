"""Tables and lines on stdout: one line per row, piped or on an 80-column terminal (bringup/cli/ui.py)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from bringup.cli import ui

ROWS = 32
TABLES_ENV = "BRINGUP_TABLES"  # the documented switch (README, "The CLI")
COLUMNS = ("node", "serial", "bmc", "macs", "firmware", "notes")


def _row(i: int) -> tuple[str, ...]:
    return (
        f"node{i:02d}",
        f"LAB3F9A2C{i:03d}",
        f"http://10.213.1.{i + 11}:8000",
        f"aa:bb:cc:00:01:{i:02x}, aa:bb:cc:00:02:{i:02x}",
        "BIOS 2.19.1, iDRAC 7.10.30.00",
        "provisioning NIC ambiguous: candidates NIC.Slot.5-1-1, NIC.Embedded.1-1-1 (set provisioning_nic)",
    )


def _discover_table():
    out = ui.table(f"rack p32: {ROWS} node(s) discovered", *COLUMNS)
    for i in range(ROWS):
        out.add_row(*_row(i))
    return out


def _render(renderable, *, terminal: bool, width: int = 80) -> list[str]:
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=terminal, width=width, color_system=None, soft_wrap=True)
    con.print(renderable)
    return buf.getvalue().splitlines()


@pytest.fixture(autouse=True)
def no_choice(monkeypatch):
    monkeypatch.delenv(TABLES_ENV, raising=False)


def test_piped_table_is_tsv_one_line_per_row():
    lines = _render(_discover_table(), terminal=False)
    assert lines[0] == f"# rack p32: {ROWS} node(s) discovered"
    assert lines[1].split("\t") == list(COLUMNS)
    assert [line.split("\t") for line in lines[2:]] == [list(_row(i)) for i in range(ROWS)]


def test_80_column_terminal_keeps_each_row_on_one_line():
    lines = _render(_discover_table(), terminal=True, width=80)
    assert len(lines) == 2 + ROWS  # title, header, one line per row
    assert lines[1].split() == list(COLUMNS)
    for i, line in enumerate(lines[2:]):
        assert line.startswith(f"node{i:02d}  ")
        for cell in _row(i):
            assert cell in line  # no cell split across lines
    # the columns line up: every row's bmc cell starts where the header's does
    start = lines[1].index("bmc")
    assert all(line[start:].startswith("http://") for line in lines[2:])


def test_a_table_that_fits_keeps_its_borders():
    small = ui.table("two nodes", "node", "state")
    small.add_row("node01", "discovered")
    small.add_row("node02", "[red]failed[/]")
    lines = _render(small, terminal=True, width=80)
    assert any("┃" in line for line in lines)
    assert any("node02" in line and "failed" in line for line in lines)


def test_markup_newlines_and_tabs_do_not_break_a_row():
    t = ui.table("odd cells", "node", "verdict", "reason")
    t.add_row("node01", "[green]PASS[/]", "first line\nsecond\tline")
    lines = _render(t, terminal=False)
    assert lines[2].split("\t") == ["node01", "PASS", "first line / second line"]


@pytest.mark.parametrize("mode", ["box", "columns", "tsv"])
def test_the_operator_can_choose(monkeypatch, mode):
    monkeypatch.setenv(TABLES_ENV, mode)
    lines = _render(_discover_table(), terminal=False, width=400)
    header = next(line for line in lines if "serial" in line)
    assert ("\t" in header) == (mode == "tsv")
    assert ("┃" in header) == (mode == "box")


def test_a_long_command_line_is_printed_on_one_line(monkeypatch):
    command = "ssh -i /root/gpu-bringup/.lab/lab/id_ed25519 -o UserKnownHostsFile=/root/gpu-bringup/.lab/lab/known_hosts root@10.213.4.11"
    buf = io.StringIO()
    monkeypatch.setattr(ui.console, "_file", buf)
    monkeypatch.setattr(ui.console, "_width", 80)  # an 80-column terminal
    ui.console.print(f"ssh:       {command}")
    assert buf.getvalue() == f"ssh:       {command}\n"


def test_a_long_progress_line_on_stderr_is_one_line(monkeypatch):
    line = (
        "nccl: 1 group(s) of 3 node(s), soak 0.1 min, launcher mpirun, tests all_reduce_perf, all_gather_perf"
    )
    buf = io.StringIO()
    monkeypatch.setattr(ui.err_console, "_file", buf)
    monkeypatch.setattr(ui.err_console, "_width", 80)
    ui.err_console.print(line, highlight=False, markup=False)
    assert buf.getvalue() == line + "\n"
