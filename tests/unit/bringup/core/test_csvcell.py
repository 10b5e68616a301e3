"""CSV cells a spreadsheet would run as formulas (OWASP, CSV injection)."""

from __future__ import annotations

import csv
import io

import pytest

from bringup.core.csvcell import csv_cell, csv_row


@pytest.mark.parametrize(
    "text", ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "=cmd|' /C calc'!A0"]
)
def test_a_formula_start_is_neutralised(text):
    cell = csv_cell(text)
    assert cell == "'" + text
    # written and read back, the cell is the same text: nothing else is changed
    buf = io.StringIO()
    csv.writer(buf).writerow([cell])
    assert next(csv.reader(io.StringIO(buf.getvalue()))) == [cell]


def test_a_carriage_return_stays_in_its_row():
    assert csv_cell("\r=1") == "'\\r=1"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([[csv_cell("a\rb"), "x"], ["y", "z"]])
    assert list(csv.reader(io.StringIO(buf.getvalue(), newline=""))) == [["a\\rb", "x"], ["y", "z"]]


@pytest.mark.parametrize("value", ["gpu001", "10.0.0.1", "a=b", "", "-", 8, -1, 3.5, None])
def test_other_cells_are_untouched(value):
    assert csv_cell(value) == value


def test_a_row_is_each_cell():
    assert csv_row(["=1", "x", 2]) == ["'=1", "x", 2]
