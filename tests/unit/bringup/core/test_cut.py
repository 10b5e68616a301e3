"""How a cut output is said: the sizes, the marker line put where the middle was dropped, and the
one line a finding says. The store and the SSH reader both write these, so their wording is one."""

from __future__ import annotations

from bringup.core.cut import MIB, cut_marker, cut_note, mb


def test_sizes_are_mib_with_one_decimal():
    assert mb(0) == "0.0 MB"
    assert mb(100 * MIB) == "100.0 MB"
    assert mb(MIB + MIB // 2) == "1.5 MB"


def test_the_marker_says_what_was_kept_and_what_was_not():
    marker = cut_marker(total=20 * MIB, dropped=4 * MIB)
    assert marker.startswith("\n") and marker.endswith("\n")  # a line of its own in the text
    assert "output cut at 16.0 MB: 4.0 MB of 20.0 MB not kept" in marker


def test_the_note_names_what_was_cut():
    assert (
        cut_note(20 * MIB, 4 * MIB) == "output cut at 16.0 MB: 20.0 MB printed, 4.0 MB in its middle not kept"
    )
    assert cut_note(5 * MIB, MIB, "stderr").startswith("stderr cut at 4.0 MB")
