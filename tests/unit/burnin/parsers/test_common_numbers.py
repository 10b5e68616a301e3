"""The parsers' integer reading takes a whole run of digits without a regex (it runs
some 30 times per GPU of every `nvidia-smi -q`); it must read every value as the regexes do."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.parsers._common import clean, to_int


def by_regex(value: str | None) -> int | None:
    value = clean(value)
    if value is None:
        return None
    if re.match(r"^0[xX][0-9a-fA-F]+$", value):
        return int(value, 16)
    m = re.match(r"^[-+]?\d+", value)
    return int(m.group(0)) if m else None


# ASCII digits, other Unicode decimal digits (Arabic-Indic, fullwidth), digits that are not
# decimal (superscript two, circled one), signs, hex, units and N/A.
PIECES = [
    "0",
    "7",
    "12",
    "\u0663",
    "\uff19",
    "\u00b2",
    "\u2460",
    "+",
    "-",
    "0x",
    "1F",
    "x",
    " ",
    "C",
    "N/A",
    ".",
]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=6).map("".join))
def test_a_value_reads_as_the_regexes_read_it(value):
    assert to_int(value) == by_regex(value)
