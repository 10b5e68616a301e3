"""The literal text every match of a regular expression holds (pure): tested with `in`, which is
fast, before the pattern is searched, which is not (burnin/evaluate/markers.py)."""

from __future__ import annotations

import re

# The standard library's own regex parser: re._parser since Python 3.11, sre_parse before.
try:
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

_MIN_RUN = 3  # shorter runs are in most texts: testing them first saves nothing


def required_runs(pattern: str, flags: int = 0) -> tuple[str, ...]:
    """The runs of literal characters in the top-level sequence of ``pattern``: every match holds
    each of them (anything optional, repeated or alternative sits in a group, class or repeat, and
    ends a run). None for a case-folding pattern: its match may differ in case from the run."""
    parsed = sre_parse.parse(pattern, flags)
    if parsed.state.flags & re.IGNORECASE:  # given, or inline '(?i)'
        return ()
    runs: list[str] = []
    run: list[str] = []
    for op, arg in parsed:
        if op is sre_constants.LITERAL:
            run.append(chr(arg))
            continue
        if len(run) >= _MIN_RUN:
            runs.append("".join(run))
        run = []
    if len(run) >= _MIN_RUN:
        runs.append("".join(run))
    return tuple(runs)
