"""Which nodes a command works on: the rack, ``--nodes``, and the state gate, in one place.

Every command that works on a rack's nodes (discover, power, boot, provision, configure, burn-in)
uses it the same way, and prints nothing itself::

    rack, warnings = load_valid_rack(rack_name, inventory_dir)   # InvalidRack: every problem
    hosts = pick_hosts(rack, split_nodes(nodes))                 # UnknownNodes: rack + names
    gate = gate_hosts(store, Step.CONFIGURE, hosts, force)       # admitted / refused, with why

or, in one call, ``select(store, rack_name, inventory_dir, nodes, Step.CONFIGURE, force)``,
which returns a :class:`Selection` holding all of it. The command then works on
``gate.admitted`` (each with its inventory host and node record) and shows ``gate.refused``
(each with ``lifecycle.gate_refusal``'s reason) as skipped rows. Before configure and burn-in,
a node whose BMC lists other GPUs than its inventory profile names is refused too, naming both
(``bringup.profiles.suggest.mismatch``; docs/platforms.md): every judgement of the wrong profile
would be wrong. Which state a step may start
from is data in ``bringup.fleet.lifecycle`` (``STARTS_FROM``, ``FORCE_ALSO``); nothing here or
in a command tests states itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bringup.core.errors import BadInput
from bringup.core.problems import Problem
from bringup.fleet.lifecycle import Step, gate_refusal, parse_state
from bringup.fleet.models import Node
from bringup.fleet.store import FleetStore
from bringup.inventory.rack import InventoryHost, Rack, load_rack
from bringup.profiles.model import Profile
from bringup.profiles.suggest import mismatch, shipped_profiles

NOT_ENROLLED = "not in the fleet store: enroll it (`bringup inventory enroll RACK`)"
# The steps that work by the node's profile (configure installs its pins, burn-in judges by its
# figures): a node whose BMC lists other GPUs than the profile names does not start them.
PROFILE_GATED = frozenset({Step.CONFIGURE, Step.BURNIN})


class InvalidRack(BadInput):
    """The rack inventory (or a profile it names) has errors; the message lists every one."""

    def __init__(self, rack: str, problems: Sequence[Problem]):
        self.rack = rack
        self.problems = [p for p in problems if not p.warning]
        super().__init__(f"rack {rack} is not valid:\n" + "\n".join(str(p) for p in self.problems))


class UnknownNodes(BadInput):
    """``--nodes`` named hosts the rack does not have."""

    def __init__(self, rack: str, names: Sequence[str]):
        self.rack, self.names = rack, list(names)
        super().__init__(f"rack {rack} has no host(s) {', '.join(self.names)}")


@dataclass(frozen=True)
class Admitted:
    """A node the step may start on: its inventory host and its fleet record."""

    host: InventoryHost
    node: Node

    @property
    def name(self) -> str:
        return self.host.name


@dataclass(frozen=True)
class Refused:
    """A node the gate keeps out, and why (with what to do about it)."""

    host: InventoryHost
    node: Node | None  # None: not in the fleet store
    reason: str

    @property
    def name(self) -> str:
        return self.host.name

    @property
    def state(self) -> str:
        return self.node.state if self.node is not None else "-"


@dataclass
class Gate:
    step: Step
    force: bool
    admitted: list[Admitted] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)

    def reasons(self) -> dict[str, str]:
        """Node name -> why it is refused."""
        return {r.name: r.reason for r in self.refused}


@dataclass
class Selection:
    """A command's nodes: the rack, the hosts ``--nodes`` picked (rack order), and the gate."""

    rack: Rack
    hosts: list[InventoryHost]
    gate: Gate
    warnings: list[Problem] = field(default_factory=list)
    named: bool = False  # --nodes was given: refusals are the user's explicit ask


# -- the pieces -----------------------------------------------------------------------------------


def split_nodes(values: Iterable[str] | str | None) -> list[str]:
    """``--nodes a,b --nodes c`` (or ``"a, b"``) -> [a, b, c], in order, without repeats."""
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values or ():
        out += [v.strip() for v in value.split(",") if v.strip() and v.strip() not in out]
    return out


def load_valid_rack(rack: str, inventory_dir: Path | None = None) -> tuple[Rack, list[Problem]]:
    """The rack and its warnings; ``InvalidRack`` (listing every file/host/field problem) if any
    problem is an error."""
    loaded, problems = load_rack(rack, inventory_dir)
    if loaded is None:
        raise InvalidRack(rack, problems)
    return loaded, [p for p in problems if p.warning]


def pick_hosts(rack: Rack, names: Sequence[str] | None) -> list[InventoryHost]:
    """The named hosts (all of them when none are named), in rack order."""
    if not names:
        return list(rack.hosts)
    known = {h.name for h in rack.hosts}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UnknownNodes(rack.name, unknown)
    wanted = set(names)
    return [h for h in rack.hosts if h.name in wanted]


def gate_nodes(
    step: Step,
    hosts: Sequence[InventoryHost],
    records: Mapping[str, Node],
    force: bool = False,
    profiles: Mapping[str, Profile] | None = None,
) -> Gate:
    """Apply the gate to ``hosts`` given their fleet records by name (pure). With ``profiles``
    (the rack's, by name), a step in ``PROFILE_GATED`` also refuses a node whose BMC lists other
    GPUs than its profile names, unless ``force``; one whose BMC lists none is not compared."""
    gate = Gate(step, force)
    for host in hosts:
        node = records.get(host.name)
        if node is None:
            gate.refused.append(Refused(host, None, NOT_ENROLLED.replace("RACK", host.rack)))
            continue
        why = gate_refusal(step, parse_state(node.state), force)
        if why is None and profiles and step in PROFILE_GATED and not force:
            profile = profiles.get(host.profile)
            if profile is not None:
                why = mismatch(host.name, node.hardware or {}, host.profile, profile, profiles)
        if why is None:
            gate.admitted.append(Admitted(host, node))
        else:
            gate.refused.append(Refused(host, node, why))
    return gate


def gate_hosts(
    store: FleetStore,
    step: Step,
    hosts: Sequence[InventoryHost],
    force: bool = False,
    profiles: Mapping[str, Profile] | None = None,
) -> Gate:
    """Apply the gate to ``hosts`` with their records read from ``store``."""
    # By name, whatever rack the record says: the inventory is what names the hosts.
    wanted = {h.name for h in hosts}
    records = {n.name: n for n in store.list_nodes() if n.name in wanted}
    return gate_nodes(step, hosts, records, force, profiles)


def select(
    store: FleetStore,
    rack: str,
    inventory_dir: Path | None,
    nodes: Iterable[str] | str | None,
    step: Step,
    force: bool = False,
) -> Selection:
    """Load ``rack``, pick ``--nodes`` and gate them for ``step``; raises the UserErrors above."""
    loaded, warnings = load_valid_rack(rack, inventory_dir)
    names = split_nodes(nodes)
    hosts = pick_hosts(loaded, names)
    # Every profile beside the rack's, so that a refusal can name the one the GPUs do fit.
    profiles: dict[str, Profile] = {}
    if step in PROFILE_GATED:
        profiles = {**shipped_profiles(loaded.path.parent / "profiles"), **loaded.profiles}
    gate = gate_hosts(store, step, hosts, force, profiles)
    return Selection(loaded, hosts, gate, warnings, named=bool(names))


__all__ = [
    "NOT_ENROLLED",
    "PROFILE_GATED",
    "Admitted",
    "Gate",
    "InvalidRack",
    "Refused",
    "Selection",
    "Step",
    "UnknownNodes",
    "gate_hosts",
    "gate_nodes",
    "load_valid_rack",
    "pick_hosts",
    "select",
    "split_nodes",
]
