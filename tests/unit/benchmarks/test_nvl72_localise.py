"""benchmarks/nvl72_localise.py: the rack-aware method names a bad switch tray's rack in one
statement where grouping without racks blames its 18 trays, and both find a single bad tray."""

from __future__ import annotations

import random

from benchmarks.nvl72_localise import fault, with_racks, without_racks

RACKS = {f"r{r + 1:02d}": [f"r{r + 1:02d}-t{t + 1:02d}" for t in range(18)] for r in range(4)}


def test_a_bad_switch_tray_is_one_statement_with_racks_and_18_blamed_trays_without():
    on, off, bad = fault("bad switch tray", RACKS, random.Random(3))
    racks = with_racks(RACKS, on, off, bad)
    assert racks["right"] and racks["stmts"] == 1 and racks["blamed"] == 0
    flat = without_racks(0)(RACKS, on, off, bad)
    assert not flat["right"] and flat["blamed"] == 18


def test_a_bad_tray_is_found_by_both_and_told_by_its_pass_with_racks():
    for kind in ("bad tray NVLink", "bad tray"):
        on, off, bad = fault(kind, RACKS, random.Random(5))
        assert with_racks(RACKS, on, off, bad)["right"]
        assert without_racks(18)(RACKS, on, off, bad)["right"]
