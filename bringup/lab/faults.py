"""Fault specs: which stand-in hardware faults each lab node carries.

```yaml
nodes:
  node02: [gpu-hw-slowdown]
  node05: [pcie-nic-downtrained]
```

Names are validated against the stand-in catalog (bringup.lab.standins), so a typo fails at
load time with the file, node and fault named, not as a silently healthy node later.
Parsing (`parse_fault_spec`) is pure; `load_fault_spec` only adds the file read.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import yaml

from bringup.core.errors import UserError
from bringup.lab.standins import fault_conflicts, known_faults, on_platform

_TOP_KEYS = frozenset({"nodes"})


class FaultSpecError(UserError, ValueError):
    """An invalid fault spec; the message names the file, and the node and fault/field if known."""

    def __init__(self, source: str, message: str, node: str | None = None, field: str | None = None):
        self.source = source
        self.node = node
        self.field = field
        where = f"{source}: node {node!r}: " if node is not None else f"{source}: "
        super().__init__(where + message)


@dataclass(frozen=True)
class FaultSpec:
    """Node name -> the stand-in faults it carries (nodes not listed are healthy)."""

    nodes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    source: str = "<memory>"

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", MappingProxyType(dict(self.nodes)))

    def faults_for(self, node: str) -> tuple[str, ...]:
        return self.nodes.get(node, ())

    def faulty_nodes(self) -> list[str]:
        """Nodes that carry at least one fault, sorted."""
        return sorted(n for n, faults in self.nodes.items() if faults)


def parse_fault_spec(data: object, source: str = "<string>", platform: str | None = None) -> FaultSpec:
    """Validate already-loaded YAML data (no I/O). `source` names the file in errors; `platform`
    (a profile name; None: the base, HGX H100) is whose faults the nodes can have."""
    if data is None:  # an empty file: no faults anywhere
        return FaultSpec({}, source)
    if not isinstance(data, dict):
        raise FaultSpecError(source, f"top level must be a mapping with 'nodes', got {_kind(data)}")
    extra = sorted(str(k) for k in data if k not in _TOP_KEYS)
    if extra:
        raise FaultSpecError(
            source, f"unknown field(s) {', '.join(extra)}; expected only 'nodes'", field=extra[0]
        )
    nodes = data.get("nodes")
    if nodes is None:
        return FaultSpec({}, source)
    if not isinstance(nodes, dict):
        raise FaultSpecError(
            source, f"'nodes' must be a mapping of node -> [faults], got {_kind(nodes)}", field="nodes"
        )
    known = known_faults(platform)
    parsed: dict[str, tuple[str, ...]] = {}
    for node, faults in nodes.items():
        if not isinstance(node, str) or not node:
            raise FaultSpecError(
                source, f"'nodes' keys (node names) must be non-empty strings, got {node!r}", field="nodes"
            )
        parsed[node] = _parse_node(source, node, faults, known, platform)
    return FaultSpec(parsed, source)


def _parse_node(
    source: str, node: str, faults: object, known: dict[str, str], platform: str | None
) -> tuple[str, ...]:
    if faults is None:
        return ()
    if not isinstance(faults, list):
        raise FaultSpecError(
            source,
            f"faults must be a list of names, got {_kind(faults)} {faults!r}",
            node=node,
            field="faults",
        )
    seen: list[str] = []
    for fault in faults:
        if not isinstance(fault, str):
            raise FaultSpecError(
                source,
                f"fault names must be strings, got {_kind(fault)} {fault!r}",
                node=node,
                field="faults",
            )
        if fault not in known:
            close = difflib.get_close_matches(fault, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise FaultSpecError(
                source,
                f"unknown fault {fault!r}{on_platform(platform)}{hint} (known: {', '.join(sorted(known))})",
                node=node,
                field=fault,
            )
        if fault in seen:
            raise FaultSpecError(source, f"fault {fault!r} listed twice", node=node, field=fault)
        seen.append(fault)
    clashes = fault_conflicts(seen, platform)
    if clashes:
        raise FaultSpecError(source, "; ".join(clashes), node=node, field=seen[0])
    return tuple(seen)


def load_fault_spec(path: str | Path, platform: str | None = None) -> FaultSpec:
    """Read and validate a fault spec YAML file for a rack of `platform` (None: HGX H100)."""
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FaultSpecError(source, f"cannot read: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FaultSpecError(source, f"not valid YAML: {exc}") from exc
    return parse_fault_spec(data, source, platform)


def _kind(value: object) -> str:
    return type(value).__name__


# ---- switching a fault on a running node (`bringup lab fault NODE add|remove NAME`) ------------
# Faults whose effect is made when the node (or its BMC, or its link) starts: the fake sysfs tree
# is unpacked by the node's init, the BMC reads its faults when the lab starts it, `unreachable`
# takes the link down once. On a running node they would change only half of what they change.
_AT_START_ONLY = {
    "unreachable": "its link is taken down when the lab starts",
    "bmc-dimm-missing": "the BMC reads its faults when the lab starts it",
    "bmc-psu-failed": "the BMC reads its faults when the lab starts it",
    "dimm-missing": "the BMC reads its faults (this one implies bmc-dimm-missing) when the lab starts it",
    "nvlink-switch-tray-slow": "every tray of the rack learns its rack's faults when the lab starts",
}


class FaultSwitchError(UserError, ValueError):
    """A fault that cannot be switched on or off on a running node; the message says why."""


def kernel_log_faults(platform: str | None = None) -> frozenset[str]:
    """Faults that add kernel-log lines: a dmesg recording part `logged_by` them (catalog.json)."""
    from bringup.lab.standins.catalog_file import catalog

    return frozenset(
        part["logged_by"]
        for entry in catalog(platform)["tools"].get("dmesg", [])
        for part in entry["output"]
        if "logged_by" in part
    )


def switch_fault(
    data: object, node: str, action: str, fault: str, now_iso: str, platform: str | None = None
) -> dict:
    """What a node's faults file (/etc/bringup-lab/faults.json, as loaded) becomes when `fault` is
    switched on (`add`) or off (`remove`) at `now_iso` (a `dmesg --time-format iso` stamp).

    A kernel-log fault switched on is logged at `now_iso`: its lines are stamped from then on
    (dispatch.py restamps them), so each switch-on logs lines the kernel-log check has not seen;
    switched off, its lines leave the log, as a repair's reboot clears it. No I/O."""
    from bringup.lab.standins import fault_conflicts, known_faults
    from bringup.lab.standins.catalog_file import catalog

    known = known_faults(platform)
    if fault not in known:
        close = difflib.get_close_matches(fault, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise FaultSwitchError(
            f"unknown fault {fault!r}{on_platform(platform)}{hint} (known: {', '.join(sorted(known))})"
        )
    why = _AT_START_ONLY.get(fault) or (
        "it changes the fake sysfs tree, which the node's init unpacks"
        if fault in catalog(platform).get("sysfs", {})
        else ""
    )
    if why:
        raise FaultSwitchError(
            f"fault {fault!r} cannot be switched on a running node ({why}): give it in the fault spec of `bringup lab up --faults`"
        )
    faults = list(data.get("faults", [])) if isinstance(data, dict) else []
    logged_at = dict(data.get("logged_at", {})) if isinstance(data, dict) else {}
    if action == "add":
        if fault in faults:
            raise FaultSwitchError(f"fault {fault!r} is already on {node}")
        faults.append(fault)
        clashes = fault_conflicts(faults, platform)
        if clashes:
            raise FaultSwitchError(f"{node}: " + "; ".join(clashes))
        if fault in kernel_log_faults(platform):
            logged_at[fault] = now_iso
    elif action == "remove":
        if fault not in faults:
            on = ", ".join(faults) or "none"
            raise FaultSwitchError(f"fault {fault!r} is not on {node} (on it: {on})")
        faults.remove(fault)
        logged_at.pop(fault, None)
    else:
        raise FaultSwitchError(f"action must be add or remove, got {action!r}")
    return {"faults": faults, **({"logged_at": logged_at} if logged_at else {})}


def fault_file_text(data: dict) -> str:
    """The faults file as `lab up` writes it (standins.install_standins), so a node whose faults are
    back to those it started with answers again from its resolved recordings (front.py)."""
    import json

    return json.dumps(data, indent=2) + "\n"


def switch_node_fault(state_dir: str | Path, lab: str, node: str, action: str, fault: str) -> list[str]:
    """Switch `fault` on or off on running lab node `node`: its faults file (what the stand-ins
    read at every call) and the lab's record (`lab status`). Returns the node's faults after."""
    import json
    import time

    from bringup.lab.standins import FAULTS_FILE
    from bringup.lab.state import STATE_FILE, LabState

    state = LabState.load(Path(state_dir))
    if state is None:
        raise FaultSwitchError(
            f"lab {lab!r} is not up (no {Path(state_dir) / STATE_FILE}): run `bringup lab up --name {lab}` first"
        )
    record = next((n for n in state.nodes if n.name == node), None)
    if record is None:
        raise FaultSwitchError(
            f"lab {lab!r} has no node {node!r} (it has {', '.join(n.name for n in state.nodes)})"
        )
    path = Path(state.state_dir) / "nodes" / node / "root" / FAULTS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {"faults": []}
    except (OSError, ValueError) as exc:
        raise FaultSwitchError(f"cannot read {node}'s faults file {path}: {exc}") from exc
    now = time.time_ns() // 1000
    stamp = (
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now // 1_000_000)) + f",{now % 1_000_000:06d}+00:00"
    )
    new = switch_fault(data, node, action, fault, stamp, state.profile)
    if fault.startswith("fabric-"):
        from bringup.lab.fabric import FabricFaultError, check_lab_faults

        try:  # refused before anything is written
            check_lab_faults(state, {n.name: n.faults for n in state.nodes} | {node: new["faults"]})
        except FabricFaultError as exc:
            raise FaultSwitchError(str(exc)) from None
    tmp = path.with_suffix(".tmp")
    tmp.write_text(fault_file_text(new), encoding="utf-8")
    tmp.replace(path)  # atomic: a stand-in running meanwhile never reads half a file
    record.faults = list(new["faults"])
    if fault.startswith("fabric-"):  # the fabric is shared: every node's view may change
        from bringup.lab.fabric import write_lab_fabric

        write_lab_fabric(state)
    state.save()
    return record.faults
