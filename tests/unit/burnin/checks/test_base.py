"""``sections`` cuts a multi-part output at its mark lines with str.find (walking every
line of a 900-line output cost the controller 0.15 ms a node); it must cut exactly where a walk
over ``str.splitlines`` cuts, for every line ending str.splitlines knows."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.checks.base import SECTION_MARK, sections


def by_lines(text: str) -> dict[str, str]:
    """The line walk sections() did before."""
    parts: dict[str, list[str]] = {"": []}
    current = ""
    for line in text.splitlines(keepends=True):
        if line.startswith(SECTION_MARK):
            current = line[len(SECTION_MARK) :].strip()
            parts.setdefault(current, [])
            continue
        parts[current].append(line)
    return {name: "".join(lines) for name, lines in parts.items()}


M = SECTION_MARK
PIECES = [M, f"{M}a\n", f"{M}b\r\n", f"{M}\n", f"{M}a", f"{M}c d \x0b", "@@burnin-sec", "x\n", "y", " ",
          "\r", "\n", "\r\n", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"]  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
def test_sections_cut_where_the_line_walk_cuts(text):
    assert sections(text) == by_lines(text)


def test_a_plain_output_is_one_section():
    assert sections("a\nb\n") == {"": "a\nb\n"}
    assert sections(f"head\n{M}idle\nx\n{M}load\r\ny") == {"": "head\n", "idle": "x\n", "load": "y"}
