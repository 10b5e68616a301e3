"""CSV cells that a spreadsheet would run as formulas, made plain text.

OWASP's guidance on CSV injection (https://owasp.org/www-community/attacks/CSV_Injection): a
cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula to Excel
and LibreOffice; prefixing it with a single quote makes it text. A host name, a serial or a
finding written by a BMC or a node lands in the exports as it came, so every text cell goes
through ``csv_cell``. Numbers stay numbers (a negative number is no formula).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def formula_like(text: str) -> bool:
    """Whether a spreadsheet would take ``text`` for a formula (a lone "-" it shows as text)."""
    return text.startswith(FORMULA_START) and bool(text.strip("-"))


def csv_cell(value: Any) -> Any:
    """``value``, with a single quote in front when it is text a spreadsheet would evaluate, and a
    carriage return written as ``\\r``: Python's csv writer leaves a field holding one unquoted
    (only the line terminator's characters are quoted), and readers end the row there."""
    if not isinstance(value, str):
        return value
    if formula_like(value):
        value = "'" + value
    return value.replace("\r", "\\r")


def csv_row(values: Iterable[Any]) -> list[Any]:
    return [csv_cell(v) for v in values]
