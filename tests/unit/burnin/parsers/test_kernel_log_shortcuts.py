"""The kernel-log parser's shortcuts (it was a tenth of a preflight's controller CPU)
read every line as the regexes do: a line is matched only against the prefixes its first
character can start, a regex is skipped only when its words are not in the line, and
``read_kernel_log`` reads the lines once for both the count and the events."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.parsers import ParseError
from burnin.parsers.kernel_log import (
    _FALLEN_RE,
    _FLAP_RE,
    _SUSPICIOUS_RE,
    _SUSPICIOUS_WORDS,
    _may_be,
    parse_kernel_log,
    read_kernel_log,
    require_kernel_log,
)
from burnin.parsers.kernel_prefix import _PREFIXES, _candidates
from tests.unit.burnin.parsers._samples import load, names

# Pieces of kernel-log lines, and characters that IGNORECASE matches to ASCII letters
# (dotless i, long s, Kelvin sign, dotted capital I) and other non-ASCII text.
PIECES = [
    "[  12.3456] ", "<3>", "kern  :warn  : ", "kernel: ", "2024-11-15T05:39:15,491363+00:00 ",
    "Aug 17 06:18:01 host kernel: ", "[Sun Feb 23 16:24:18 2025] ", "[  +0.000844] ", "[Jan21 10:14] ",
    "NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus.", "ERROR", "Fail", "segfault",
    "ib0: lost carrier", "eth1: Link is Down", "LINK UP", "BUG", "WARNING: CPU: 3", "hung Task", "mce:",
    "Timed Out", "stalled", "oops", "Fallen Off The Bus", "\u0131", "\u017f", "\u212a", "\u0130", "\u00e9",
    " ", "\t", "(", "x", "l", "n", "k", "s", "i", ": ", "0", "#",
]  # fmt: skip
lines = st.lists(st.sampled_from(PIECES), max_size=10).map("".join)


def first_prefix(text: str, prefixes) -> str | None:
    return next((kind for kind, rx in prefixes if rx.match(text)), None)


@settings(max_examples=800, deadline=None)
@given(lines)
def test_a_line_meets_the_prefix_it_met_among_them_all(text):
    assert first_prefix(text, _candidates(text[:1])) == first_prefix(text, _PREFIXES)


@settings(max_examples=800, deadline=None)
@given(lines)
def test_a_regex_is_skipped_only_where_it_cannot_match(text):
    low = text.lower()
    for rx, words in (
        (_SUSPICIOUS_RE, _SUSPICIOUS_WORDS),
        (_FLAP_RE, ("carrier", "link")),
        (_FALLEN_RE, ("fallen off the bus",)),
    ):
        if rx.search(text):
            assert _may_be(text, low, words), (rx.pattern[:40], text)


@pytest.mark.parametrize("name", names("dmesg_"))
def test_one_reading_gives_the_count_and_the_events(name):
    text = load(name)
    assert read_kernel_log(text) == (require_kernel_log(text), parse_kernel_log(text))


@settings(max_examples=300, deadline=None)
@given(st.lists(lines, max_size=8).map("\n".join))
def test_one_reading_refuses_what_the_count_refuses(text):
    try:
        expected = (require_kernel_log(text), parse_kernel_log(text))
    except ParseError as exc:
        with pytest.raises(ParseError, match="^" + str(exc).replace("(", r"\(").replace(")", r"\)") + "$"):
            read_kernel_log(text)
        return
    assert read_kernel_log(text) == expected
