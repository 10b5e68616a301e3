"""A marker is searched only in texts that hold the literal text every match needs."""

from __future__ import annotations

from burnin.evaluate.tool_marks import mark


def test_a_marker_needs_its_literal_runs_and_its_pattern():
    m = mark(r"^Driver Version\s+:\s+\d", 3, "'Driver Version' line")
    assert "Driver Version" in "".join(m.needs)
    assert m.found_in("x\nDriver Version    : 535.1\n")
    assert not m.found_in("x\nDriver Version    : n/a\n")
    assert not m.found_in("driver version 535\n")
