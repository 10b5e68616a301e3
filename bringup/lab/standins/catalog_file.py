"""catalog.json, parsed: which recording each stand-in tool prints for which faults.

Its own module so that sysfs.py (the catalog's ``sysfs`` section) and the package, which
imports sysfs.py, both read it from below.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from bringup.lab.standins.dispatch import CATALOG_NAME

CATALOG_PATH = Path(__file__).resolve().parent / CATALOG_NAME


@lru_cache(maxsize=1)
def catalog() -> dict[str, Any]:
    """The parsed catalog.json (cached: it is package data and does not change at run time)."""
    with CATALOG_PATH.open(encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data
