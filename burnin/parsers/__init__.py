"""Pure parsers: tool output text in, frozen dataclasses out.

Every public parser takes the tool's output exactly as printed (callers strip nothing) and
either returns typed records or raises :class:`ParseError` when the text is not that tool's
output at all, or is too broken to trust. Nothing else ever escapes: a parser bug surfaces
as a ``ParseError`` with ``internal=True`` (so a check reports UNKNOWN, never a pass), and
the robustness tests assert that this never happens on their inputs.

Parsers classify but never judge: PASS/FAIL against a hardware profile belongs to the checks.
"""

from __future__ import annotations

from burnin.parsers._common import load_json, normalize_bdf
from burnin.parsers.errors import ParseError

__all__ = ["ParseError", "load_json", "normalize_bdf"]
