"""The IMEX daemon and its domain, from ``nvidia-imex-ctl -N`` (NVIDIA IMEX guide, "The
nvidia-imex-ctl Tool": https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/cmdservice.html).

On GB200/GB300 NVL72 the IMEX daemon of every compute tray joins the others listed in its
``nodes_config.cfg``; multi-node NVLink memory sharing works only among the trays of one domain.
``-N`` prints, after a legend of the connectivity codes and a timestamp::

    Nodes:
    Node #0   - 172.31.48.81    - READY                - Version: 570.172
    ...
     Nodes From\\To  0   1 ...
           0        C   C ...
    Domain State: UP

one ``Node #i - ADDRESS - STATE`` line per configured tray (``- Version: V`` since driver 570),
the connection matrix (C = connected; I, N, R, D, A, ``!V!``, ``!M!`` are not) and the domain's
state. The command the check runs prints ``IMEX daemon: STATE`` first (``systemctl is-active
nvidia-imex``), so a stopped daemon is told from a domain it cannot report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from burnin.parsers._common import parser, split_lines
from burnin.parsers.errors import ParseError

CONNECTED = "C"
_DAEMON = re.compile(r"^IMEX daemon:\s*(\S+)\s*$")
_NODE = re.compile(r"^Node #(\d+)\s+-\s+(\S+)\s+-\s+(\S+)(?:\s+-\s+Version:\s*(\S+))?\s*$")
_MATRIX_HEAD = re.compile(r"^\s*Nodes From\\To\s+([\d\s]+)$")
_MATRIX_ROW = re.compile(r"^\s*(\d+)\s+((?:\S+\s*)+)$")
_DOMAIN = re.compile(r"^Domain State:\s*(\S+)\s*$")


@dataclass(frozen=True)
class ImexNode:
    index: int
    address: str
    state: str  # READY when the tray's daemon is in the domain
    version: str | None = None


@dataclass
class ImexDomain:
    daemon: str | None = None  # systemctl's answer for nvidia-imex, when the command printed it
    nodes: list[ImexNode] = field(default_factory=list)
    # (from, to) -> connection code, for each cell of the matrix
    links: dict[tuple[int, int], str] = field(default_factory=dict)
    domain_state: str | None = None  # UP when every node is connected

    def node(self, index: int) -> ImexNode | None:
        return next((n for n in self.nodes if n.index == index), None)


@parser
def parse_imex_domain(text: str) -> ImexDomain:
    """Parse ``IMEX daemon: STATE`` and ``nvidia-imex-ctl -N`` (either may be absent, not both).
    A matrix without its ``Domain State`` line is a cut output: refused."""
    out = ImexDomain()
    columns: list[int] = []
    for line in split_lines(text):
        stripped = line.strip()
        if m := _DAEMON.match(stripped):
            out.daemon = m.group(1)
        elif m := _NODE.match(stripped):
            out.nodes.append(ImexNode(int(m.group(1)), m.group(2), m.group(3), m.group(4)))
        elif m := _MATRIX_HEAD.match(line):
            columns = [int(c) for c in m.group(1).split()]
        elif columns and (m := _MATRIX_ROW.match(line)) and not stripped.startswith("Domain"):
            cells = m.group(2).split()
            if len(cells) != len(columns):
                raise ParseError(
                    f"IMEX matrix row {m.group(1)} has {len(cells)} cells for {len(columns)} nodes"
                )
            for to, code in zip(columns, cells, strict=True):
                out.links[(int(m.group(1)), to)] = code
        elif m := _DOMAIN.match(stripped):
            out.domain_state = m.group(1)
    if out.daemon is None and out.domain_state is None and not out.nodes:
        raise ParseError("no IMEX daemon state, node list or Domain State line")
    if (out.nodes or out.links) and out.domain_state is None:
        raise ParseError("nvidia-imex-ctl -N output without its 'Domain State' line (cut)")
    return out
