"""The acceptance CSV with text a spreadsheet would run as a formula: a node name, a serial or a
BMC's finding starting with '=', '+', '-', '@', a tab or a CR (OWASP, CSV injection). Before the
fix each was written as it came."""

from __future__ import annotations

import csv
import dataclasses
import io

from bringup.core.csvcell import formula_like
from burnin.accept.decide import REJECTED, NodeDecision, Reason
from burnin.accept.report import render_csv
from tests.unit.burnin.accept.acceptance_result import result

EVIL = Reason(
    "order",
    "@psu",
    '=HYPERLINK("http://evil.example","click")',
    "RMA",
    slot="\t=1+1",
    serial="+SN-9",
    ordered="-2+3",
    found="\r=cmd|' /C calc'!A0",
)


def test_no_cell_of_the_acceptance_csv_is_a_formula():
    evil = dataclasses.replace(
        result(), decisions=(NodeDecision('=HYPERLINK("x")', "-SN1", REJECTED, (EVIL,)),)
    )
    rows = list(csv.reader(io.StringIO(render_csv(evil), newline="")))
    cells = [c for r in rows[1:] for c in r]
    assert cells and not [c for c in cells if formula_like(c)], cells
    assert '\'=HYPERLINK("x")' in cells and "'+SN-9" in cells  # the text itself is kept
