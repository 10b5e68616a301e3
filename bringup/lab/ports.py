"""The host ports a lab's daemons listen on, chosen once per lab when its Slurm config is written.

A lab prefers a slot derived from its run id, so its ports are predictable, and takes the next
free slot when something already holds a port of that one. Labs up at once on one machine (the
test suite's workers) have random run ids, and two of them could hash to one slot: a CI run
lost a whole lab module to "port 127.0.0.1:30340 for this lab's accounting is taken".

Only ports that listen in the host's namespace are checked: slurmd listens inside each node.
A port is tried on the wildcard address, which any listener on that port, on any address, holds.

The ranges stay below the kernel's ephemeral range (32768 up), where any outgoing connection may
hold a port:
- 21000-28999: slurmctld (the slot's first port) and slurmd (its second);
- 29000-32759: MariaDB (first) and slurmdbd (second).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from bringup.lab.network import LabError

TRIES = 64  # slots tried from the preferred one: a handful of labs are up at a time


@dataclass(frozen=True)
class SlotRange:
    """``slots`` pairs of ports from ``base``: slot i is (base + 2i, base + 2i + 1)."""

    base: int
    slots: int

    def ports(self, slot: int) -> tuple[int, int]:
        return self.base + 2 * slot, self.base + 2 * slot + 1

    def preferred(self, run_id: str) -> int:
        return int(run_id, 16) % self.slots

    @property
    def last(self) -> int:
        return self.base + 2 * self.slots - 1


SLURM = SlotRange(21000, 4000)
ACCOUNTING = SlotRange(29000, 1880)  # ends at 32759


@dataclass(frozen=True)
class LabPorts:
    slurmctld: int
    slurmd: int
    mariadb: int
    slurmdbd: int

    @classmethod
    def preferred(cls, run_id: str) -> LabPorts:
        """The lab's own slots, taken or not (pure)."""
        return cls(*SLURM.ports(SLURM.preferred(run_id)), *ACCOUNTING.ports(ACCOUNTING.preferred(run_id)))

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path, run_id: str) -> LabPorts:
        """What ``save`` wrote; the preferred ports for a lab whose state predates the file."""
        if not path.exists():
            return cls.preferred(run_id)
        return cls(**json.loads(path.read_text()))


def choose(run_id: str, is_free: Callable[[int], bool] | None = None) -> LabPorts:
    """The lab's ports: from its preferred slots on, the first whose host-side ports are free."""
    free = is_free or port_free
    ctld, slurmd = _first_free(SLURM, run_id, lambda pair: free(pair[0]))
    db, dbd = _first_free(ACCOUNTING, run_id, lambda pair: free(pair[0]) and free(pair[1]))
    return LabPorts(ctld, slurmd, db, dbd)


def _first_free(r: SlotRange, run_id: str, free: Callable[[tuple[int, int]], bool]) -> tuple[int, int]:
    start = r.preferred(run_id)
    for i in range(TRIES):
        pair = r.ports((start + i) % r.slots)
        if free(pair):
            return pair
    raise LabError(
        f"no free pair of ports in {r.base}-{r.last}: the {TRIES} slots from {r.ports(start)} on are "
        "all taken (labs left running? `bringup lab down --name ...` takes one down)"
    )


def port_free(port: int) -> bool:
    """Nothing listens on ``port`` (any address) and no socket holds it."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True
