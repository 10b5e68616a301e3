"""The cabling plan (docs/fabric.md, "The plan"): every cable as its two ends, and every switch
by its place (rack, unit) and GUID, so a finding names a physical port at both ends.

A plan is a CSV of cables (``node,hca,hca_port,switch,switch_port[,speed,width]``; ``hca`` is
``-`` for a switch-to-switch cable, ``node`` then naming the lower switch) or a YAML file that
holds the switch map and either ``cabling: FILE.csv`` or a ``fat_tree:`` description from which
the cables of a rail-optimised fat tree are generated: per scalable unit one leaf per rail, HCA
``r`` of every node of the unit on rail ``r``'s leaf, every leaf up to every spine. A malformed
plan raises ``PlanError`` naming the file, the line and the field.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bringup.core.errors import UserError

SPEEDS = ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR")
_WIDTH_RE = re.compile(r"^\d+x$")
CSV_COLUMNS = ("node", "hca", "hca_port", "switch", "switch_port")


class PlanError(UserError, ValueError):
    """A cabling plan that cannot be read; the message names the file, line and field."""

    def __init__(self, source: str, line: int | None, field_name: str | None, message: str) -> None:
        where = (
            [source] + ([f"line {line}"] if line else []) + ([f"field {field_name}"] if field_name else [])
        )
        super().__init__(f"{': '.join(where)}: {message}")


@dataclass(frozen=True, order=True)
class End:
    """One end of a cable: an HCA port (``hca`` set) or a switch port (``hca`` None)."""

    device: str  # the node for an HCA end, the switch's planned name for a switch end
    hca: str | None
    port: int


@dataclass(frozen=True)
class Switch:
    name: str
    guid: int | None = None
    rack: str | None = None
    unit: str | None = None

    def place(self) -> str:
        bits = [b for b in (f"rack {self.rack}" if self.rack else "", self.unit or "") if b]
        return " ".join(bits)


@dataclass(frozen=True)
class PlannedLink:
    a: End  # the HCA end, or the lower switch
    b: End  # the switch end
    speed: str | None = None
    width: str | None = None
    line: int | None = None  # where the plan says it (a CSV line; None when generated)


@dataclass
class Plan:
    source: str
    links: list[PlannedLink]
    switches: dict[str, Switch] = field(default_factory=dict)
    speed: str | None = None  # every link's, unless the link says otherwise
    width: str | None = None
    ignore: tuple[str, ...] = ("Mellanox Technologies Aggregation Node",)  # SHARP, inside a switch

    def switch_by_guid(self) -> dict[int, str]:
        return {s.guid: s.name for s in self.switches.values() if s.guid is not None}

    def describe(self, end: End) -> str:
        """'gpu0001 mlx5_0 port 1', 'switch su1-leaf0 (rack R01 U40) port 3'."""
        if end.hca is not None:
            return f"{end.device} {end.hca} port {end.port}"
        switch = self.switches.get(end.device)
        place = switch.place() if switch else ""
        return f"switch {end.device}{f' ({place})' if place else ''} port {end.port}"


# ---- the CSV -------------------------------------------------------------------------------------


def _speed(value: str, source: str, line: int | None, name: str) -> str | None:
    value = value.strip()
    if not value:
        return None
    if value.upper() not in SPEEDS:
        raise PlanError(source, line, name, f"{value!r} is not an InfiniBand speed ({', '.join(SPEEDS)})")
    return value.upper()


def _width(value: str, source: str, line: int | None, name: str) -> str | None:
    value = value.strip().lower()
    if not value:
        return None
    if not _WIDTH_RE.match(value):
        raise PlanError(source, line, name, f"{value!r} is not a link width such as 4x")
    return value


def _port(value: str, source: str, line: int | None, name: str) -> int:
    text = value.strip()
    if not text.isdigit() or int(text) < 1:
        raise PlanError(source, line, name, f"{value!r} is not a port number (1 or more)")
    return int(text)


def parse_cabling_csv(text: str, source: str) -> list[PlannedLink]:
    """The cables of a CSV plan (pure); blank lines and lines starting with '#' are skipped."""
    lines = [
        (n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip() and not line.startswith("#")
    ]
    if not lines:
        raise PlanError(source, None, None, "no header line: expected " + ",".join(CSV_COLUMNS))
    header_no, header = lines[0]
    columns = [c.strip().lower() for c in next(csv.reader([header]))]
    lacking = [c for c in CSV_COLUMNS if c not in columns]
    if lacking:
        raise PlanError(
            source, header_no, lacking[0], "column missing from the header: " + ",".join(CSV_COLUMNS)
        )
    links: list[PlannedLink] = []
    seen: dict[End, int] = {}
    for number, text_line in lines[1:]:
        row = next(csv.reader([text_line]))
        if len(row) != len(columns):
            raise PlanError(source, number, None, f"{len(row)} fields, the header has {len(columns)}")
        cell = dict(zip(columns, row, strict=True))
        for name in ("node", "hca", "switch"):
            if not cell[name].strip():
                raise PlanError(source, number, name, "empty")
        hca = cell["hca"].strip()
        a = End(
            cell["node"].strip(),
            None if hca == "-" else hca,
            _port(cell["hca_port"], source, number, "hca_port"),
        )
        b = End(cell["switch"].strip(), None, _port(cell["switch_port"], source, number, "switch_port"))
        for end, name in ((a, "hca_port" if a.hca else "node"), (b, "switch_port")):
            if end in seen:
                raise PlanError(
                    source,
                    number,
                    name,
                    f"{end.device} port {end.port} is already cabled on line {seen[end]}",
                )
            seen[end] = number
        speed = _speed(cell.get("speed", ""), source, number, "speed")
        width = _width(cell.get("width", ""), source, number, "width")
        links.append(PlannedLink(a, b, speed, width, number))
    return links


# ---- the YAML: switch map, and a CSV or a fat tree -------------------------------------------------


def _line_of(root: yaml.Node | None, path: tuple[str, ...]) -> int | None:
    """The 1-based line of the key at ``path`` in the composed document (None when not found)."""
    node, line = root, None
    for key in path:
        if not isinstance(node, yaml.MappingNode):
            return line
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                node, line = v, k.start_mark.line + 1
                break
        else:
            return line
    return line


_FAT_TREE_INTS = ("scalable_units", "nodes_per_unit", "rails", "spines")
_FAT_TREE_DEFAULTS: dict[str, Any] = {
    "uplinks": 1,
    "hca_port": 1,
    "node": "gpu{node:04d}",
    "hca": "mlx5_{rail}",
    "leaf": "su{su}-leaf{rail}",
    "spine": "spine{spine}",
}


def _fat_tree_settings(tree: Any, fail: Any) -> dict[str, Any]:
    if not isinstance(tree, dict):
        fail(("fat_tree",), "must be a mapping")
    unknown = set(tree) - set(_FAT_TREE_INTS) - set(_FAT_TREE_DEFAULTS)
    if unknown:
        fail(("fat_tree", sorted(unknown)[0]), "unknown key")
    out = dict(_FAT_TREE_DEFAULTS) | tree
    for key in (*_FAT_TREE_INTS, "uplinks", "hca_port"):
        if not isinstance(out.get(key), int) or isinstance(out.get(key), bool) or out[key] < 1:
            fail(("fat_tree", key), f"{out.get(key)!r} is not a whole number of 1 or more")
    for key, fields in (("node", "node"), ("hca", "rail"), ("leaf", "su, rail"), ("spine", "spine")):
        try:
            str(out[key]).format(node=1, rail=0, su=1, spine=1)
        except (KeyError, IndexError, ValueError) as exc:
            fail(("fat_tree", key), f"{out[key]!r} is not a name template (fields: {fields}): {exc}")
    return out


def fat_tree_links(tree: dict[str, Any]) -> Iterator[PlannedLink]:
    """The cables of a rail-optimised fat tree (settings as ``_fat_tree_settings`` returns them).

    Node ``k`` (0-based) of scalable unit ``su`` (1-based) has its HCA of rail ``r`` (0-based) on
    port ``k + 1`` of leaf (su, r); the leaf's uplink ``u`` to spine ``s`` (1-based) is its port
    ``nodes_per_unit + (s - 1) * uplinks + u + 1``, on the spine's port
    ``leaf_index * uplinks + u + 1`` where leaf_index = (su - 1) * rails + r."""
    per, rails, uplinks = tree["nodes_per_unit"], tree["rails"], tree["uplinks"]
    for su in range(1, tree["scalable_units"] + 1):
        leaves = [tree["leaf"].format(su=su, rail=r) for r in range(rails)]
        for k in range(per):
            node = tree["node"].format(node=(su - 1) * per + k + 1)
            for r in range(rails):
                yield PlannedLink(
                    End(node, tree["hca"].format(rail=r), tree["hca_port"]), End(leaves[r], None, k + 1)
                )
        for r in range(rails):
            leaf_index = (su - 1) * rails + r
            for s in range(1, tree["spines"] + 1):
                spine = tree["spine"].format(spine=s)
                for u in range(uplinks):
                    yield PlannedLink(
                        End(leaves[r], None, per + (s - 1) * uplinks + u + 1),
                        End(spine, None, leaf_index * uplinks + u + 1),
                    )


def parse_plan_yaml(text: str, source: str, csv_text: dict[str, str] | None = None) -> Plan:
    """A YAML plan (pure); ``csv_text`` maps the ``cabling:`` file named in it to its text."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise PlanError(source, mark.line + 1 if mark else None, None, f"not YAML: {exc}") from None

    def fail(path: tuple[str, ...], message: str) -> None:
        raise PlanError(source, _line_of(root, path), ".".join(path), message)

    if not isinstance(data, dict):
        fail((), "a plan is a mapping with switches and cabling or fat_tree")
    unknown = set(data) - {"switches", "cabling", "fat_tree", "speed", "width", "ignore"}
    if unknown:
        fail((sorted(unknown)[0],), "unknown key (switches, cabling, fat_tree, speed, width, ignore)")
    line = _line_of(root, ("speed",))
    speed = _speed(str(data["speed"]), source, line, "speed") if "speed" in data else None
    width = (
        _width(str(data["width"]), source, _line_of(root, ("width",)), "width") if "width" in data else None
    )
    switches: dict[str, Switch] = {}
    for name, info in (data.get("switches") or {}).items():
        info = info or {}
        if not isinstance(info, dict) or set(info) - {"guid", "rack", "unit"}:
            fail(("switches", str(name)), "expected {guid, rack, unit}")
        guid = None
        if info.get("guid") is not None:
            try:
                guid = int(str(info["guid"]), 16)
            except ValueError:
                fail(("switches", str(name), "guid"), f"{info['guid']!r} is not a hexadecimal GUID")
        switches[str(name)] = Switch(str(name), guid, _text(info.get("rack")), _text(info.get("unit")))
    guids: dict[int, str] = {}
    for s in switches.values():
        if s.guid is not None and s.guid in guids:
            fail(("switches", s.name, "guid"), f"the same GUID as switch {guids[s.guid]}")
        if s.guid is not None:
            guids[s.guid] = s.name
    if ("cabling" in data) == ("fat_tree" in data):
        fail(("cabling",) if "cabling" in data else (), "give one of cabling (a CSV file) or fat_tree")
    if "cabling" in data:
        name = str(data["cabling"])
        if csv_text is None or name not in csv_text:
            fail(("cabling",), f"{name}: file not found")
        links = parse_cabling_csv(csv_text[name], name)  # type: ignore[index]
    else:
        links = list(fat_tree_links(_fat_tree_settings(data["fat_tree"], fail)))
    ignore = data.get("ignore", list(Plan.ignore))
    return Plan(source, links, switches, speed, width, tuple(str(i) for i in ignore or ()))


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def load_plan(path: Path) -> Plan:
    """The plan in ``path``: a ``.csv`` of cables, or a YAML plan (and the CSV it names)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PlanError(str(path), None, None, f"cannot read: {exc.strerror}") from None
    if path.suffix.lower() == ".csv":
        return Plan(str(path), parse_cabling_csv(text, str(path)))
    csv_text: dict[str, str] = {}
    try:
        name = (yaml.safe_load(text) or {}).get("cabling") if text.strip() else None
    except (yaml.YAMLError, AttributeError):
        name = None
    if isinstance(name, str) and (path.parent / name).is_file():
        csv_text[name] = (path.parent / name).read_text(encoding="utf-8")
    return parse_plan_yaml(text, str(path), csv_text)
