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
from bringup.lab.standins import fault_conflicts, known_faults

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


def parse_fault_spec(data: object, source: str = "<string>") -> FaultSpec:
    """Validate already-loaded YAML data (no I/O). `source` names the file in errors."""
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
    known = known_faults()
    parsed: dict[str, tuple[str, ...]] = {}
    for node, faults in nodes.items():
        if not isinstance(node, str) or not node:
            raise FaultSpecError(
                source, f"'nodes' keys (node names) must be non-empty strings, got {node!r}", field="nodes"
            )
        parsed[node] = _parse_node(source, node, faults, known)
    return FaultSpec(parsed, source)


def _parse_node(source: str, node: str, faults: object, known: dict[str, str]) -> tuple[str, ...]:
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
                f"unknown fault {fault!r}{hint} (known: {', '.join(sorted(known))})",
                node=node,
                field=fault,
            )
        if fault in seen:
            raise FaultSpecError(source, f"fault {fault!r} listed twice", node=node, field=fault)
        seen.append(fault)
    clashes = fault_conflicts(seen)
    if clashes:
        raise FaultSpecError(source, "; ".join(clashes), node=node, field=seen[0])
    return tuple(seen)


def load_fault_spec(path: str | Path) -> FaultSpec:
    """Read and validate a fault spec YAML file."""
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
    return parse_fault_spec(data, source)


def _kind(value: object) -> str:
    return type(value).__name__
