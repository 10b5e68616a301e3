"""Names for every object a lab run creates.

Each run gets a random id; every namespace, interface, mount source and bridge carries the
prefix ``bl<run_id>`` so parallel runs (pytest-xdist workers, two developers on one host)
never collide, and so ``sweep(prefix)`` can find leftovers after a crash without a state file.
Linux interface names are limited to 15 characters (IFNAMSIZ - 1), hence the terse scheme.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from bringup.core.hostnames import LABEL

IFNAME_MAX = 15
MAX_INDEX = 99_999  # keeps veth names within IFNAME_MAX: "bl" + 6 + "h" + 5 = 14
_RUN_ID_RE = re.compile(r"^[0-9a-f]{6}$")


# A lab's name is a directory under the lab root (with "-pxe" and "-files" siblings), its
# inventory's file name and its rack's name: one plain word, never a path, "." or "..".
LAB_NAME_MAX = 40
_LAB_NAME_RE = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_-]{{0,{LAB_NAME_MAX - 1}}}")


def check_lab_name(name: str) -> str:
    """Return ``name`` if a lab may be called so, else raise ValueError saying what a name is."""
    if not _LAB_NAME_RE.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a lab name: a lab is named by a letter or digit, then letters, digits, "
            f"'-' or '_', {LAB_NAME_MAX} at most (never a path, '.' or '..'); "
            "`bringup lab status --name NAME` shows a lab"
        )
    return name


def new_run_id() -> str:
    """Six random lowercase hex characters."""
    return secrets.token_hex(3)


def check_node_name(name: str) -> str:
    """Return ``name`` if it is a valid hostname label, else raise ValueError."""
    # Node names become hostnames and part of namespace names: one RFC 1123 label.
    if not LABEL.fullmatch(name):
        raise ValueError(f"invalid node name {name!r}: must be a hostname label (letters, digits, '-')")
    return name


@dataclass(frozen=True)
class LabNames:
    run_id: str

    def __post_init__(self) -> None:
        if not _RUN_ID_RE.match(self.run_id):
            raise ValueError(f"run id must be 6 lowercase hex characters, got {self.run_id!r}")

    @property
    def prefix(self) -> str:
        return "bl" + self.run_id

    @property
    def bridge(self) -> str:
        return self.prefix + "br"

    def _check_index(self, index: int) -> int:
        if not 0 <= index <= MAX_INDEX:
            raise ValueError(f"node index {index} out of range 0..{MAX_INDEX}")
        return index

    def veth_host(self, index: int) -> str:
        """Host end of node ``index``'s veth pair (enslaved to the bridge)."""
        return f"{self.prefix}h{self._check_index(index)}"

    def veth_node(self, index: int) -> str:
        """Node end of the pair while it is still in the host namespace.

        start_node creates the peer directly inside the node's namespace as ``eth0`` (what a real
        server shows), so this name only appears if someone builds the pair in two steps.
        """
        return f"{self.prefix}n{self._check_index(index)}"

    def netns(self, node_name: str) -> str:
        return f"{self.prefix}-{check_node_name(node_name)}"

    def mac(self, index: int) -> str:
        """A stable, locally administered unicast MAC for node ``index`` of this run."""
        i = self._check_index(index)
        if i > 0xFFFF:
            raise ValueError(f"node index {index} too large for a MAC (max 65535)")
        rid = self.run_id
        return f"02:{rid[0:2]}:{rid[2:4]}:{rid[4:6]}:{i >> 8:02x}:{i & 0xFF:02x}"
