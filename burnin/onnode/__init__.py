"""Programs that run ON the nodes, sent as source text to ``python3 -`` (or, for stress, run as
the installed ``burnin-stress`` console script where the node has the package).

Each module here is standard library only (stress also uses torch/CuPy when the node has them)
and imports nothing from the project: its file is the program. ``source(name)`` is the one way
the checks get a program's text.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

PROGRAMS: tuple[str, ...] = ("stress", "pcie_collect")


@cache
def source(name: str) -> str:
    """The text of the on-node program ``name`` (burnin/onnode/<name>.py)."""
    if name not in PROGRAMS:
        raise ValueError(f"no on-node program {name!r} (programs: {', '.join(PROGRAMS)})")
    return Path(__file__).with_name(f"{name}.py").read_text(encoding="utf-8")
