"""P_Key tables (``smpquery pkeys``, infiniband-diags) of many HCA ports, and which disagree.

One file holds the tables of many ports, each after a header line naming it:

    == gpu0001 mlx5_0 1 ==
       0: 0xffff 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
    ...
    64 pkeys capacity for this port

(``smpquery`` prints eight ``0x%04x`` entries a line after the index of the first, then the
capacity line: linux-rdma/rdma-core infiniband-diags/smpquery.c.) The empty entries (0x0000) are
dropped; the membership bit (0x8000: full member) is kept, since a limited member of a partition
cannot talk to another limited member (InfiniBand Architecture Specification, partitioning).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from burnin.fabric.plan import End, PlanError

_HEADER_RE = re.compile(r"^==\s*(?P<node>\S+)\s+(?P<hca>\S+)\s+(?P<port>\d+)\s*==\s*$")
_ROW_RE = re.compile(r"^\s*\d+:((?:\s+0x[0-9a-fA-F]{1,4})+)\s*$")
_END_RE = re.compile(r"^\d+ pkeys capacity for this port\s*$")


@dataclass(frozen=True)
class PkeyTable:
    end: End
    keys: frozenset[int]  # the non-empty entries, membership bit included

    def text(self) -> str:
        return " ".join(f"0x{k:04x}" for k in sorted(self.keys)) or "(empty)"


def parse_pkey_tables(text: str, source: str) -> list[PkeyTable]:
    """Every port's table (pure); a table cut before its capacity line is refused."""
    tables: list[PkeyTable] = []
    current: End | None = None
    keys: set[int] = set()
    header_line = 0
    for number, line in enumerate(text.splitlines(), 1):
        m = _HEADER_RE.match(line)
        if m:
            if current is not None:
                raise PlanError(
                    source, header_line, None, f"the table of {_name(current)} has no capacity line"
                )
            current, keys, header_line = End(m["node"], m["hca"], int(m["port"])), set(), number
            continue
        row = _ROW_RE.match(line)
        if row and current is not None:
            keys.update(v for v in (int(x, 16) for x in row.group(1).split()) if v & 0x7FFF)
        elif _END_RE.match(line.strip()) and current is not None:
            tables.append(PkeyTable(current, frozenset(keys)))
            current = None
    if current is not None:
        raise PlanError(source, header_line, None, f"the table of {_name(current)} has no capacity line")
    if not tables:
        raise PlanError(source, None, None, "no '== NODE HCA PORT ==' section with an smpquery pkeys table")
    return tables


def _name(end: End) -> str:
    return f"{end.device} {end.hca} port {end.port}"


def odd_tables(tables: list[PkeyTable]) -> tuple[frozenset[int], list[PkeyTable]]:
    """The table most ports hold, and the ports whose table differs from it."""
    if not tables:
        return frozenset(), []
    common, _ = Counter(t.keys for t in tables).most_common(1)[0]
    return common, [t for t in tables if t.keys != common]
