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


def csv_cell(value: Any) -> Any:
    """``value``, with a single quote in front when it is text a spreadsheet would evaluate."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_row(values: Iterable[Any]) -> list[Any]:
    return [csv_cell(v) for v in values]
