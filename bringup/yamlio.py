"""Safe YAML loading that understands Ansible's ``!vault`` tag and reports where YAML breaks.

Inventories come from people and from other tools, so the loader also refuses what plain
PyYAML lets through silently or expensively:

- a key given twice in one mapping (PyYAML keeps the last one: a host's BMC silently lost);
- a file over ``MAX_YAML_BYTES``;
- text that is not UTF-8;
- a document that, once its aliases and ``<<`` merges are expanded, holds more than
  ``MAX_EXPANDED_VALUES`` values (an alias bomb: a 1 KB file that expands to 10^9 strings).
  Aliases themselves stay allowed: inventories use anchors for shared variables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from bringup.credentials import VaultText
from bringup.errors import UserError

# A 1,000-host inventory is about 200 KB; 8 MiB leaves room for comments and long vars.
MAX_YAML_BYTES = 8 * 1024 * 1024
# Values (scalars, lists, mappings) after alias expansion: far above any real inventory or
# profile (1,000 hosts x 50 variables is 50,000), far below what exhausts memory.
MAX_EXPANDED_VALUES = 1_000_000


class YamlError(UserError, ValueError):
    """Malformed YAML; the message names the file and the line."""


class _Loader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            try:
                first = seen.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:  # an unhashable key: PyYAML reports it itself
                continue
            if first != key_node.start_mark.line + 1:
                raise ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (lines {first} and {key_node.start_mark.line + 1}): "
                    "YAML would silently keep only the last one",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        super().flatten_mapping(node)
        if len(node.value) > MAX_EXPANDED_VALUES:  # nested << merges double at each level
            raise ConstructorError(
                None, None, f"<< merges expand past {MAX_EXPANDED_VALUES:,} keys", node.start_mark
            )


def _vault(loader: yaml.SafeLoader, node: yaml.Node) -> VaultText:
    return VaultText(loader.construct_scalar(node))  # type: ignore[arg-type]


def _unsafe(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_Loader.add_constructor("!vault", _vault)
_Loader.add_constructor("!unsafe", _unsafe)


def _expanded_size(data: Any) -> int | None:
    """How many values ``data`` holds with every alias expanded, or None past the cap or on a
    cycle. Shared objects (what an alias loads as) are counted once per use, computed once."""
    sizes: dict[int, int | None] = {}

    def size(obj: Any) -> int | None:
        if not isinstance(obj, (list, dict)):
            return 1
        key = id(obj)
        if key in sizes:
            return sizes[key]  # None while in progress: a cycle
        sizes[key] = None
        total = 1
        for child in obj.items() if isinstance(obj, dict) else obj:
            for part in child if isinstance(obj, dict) else (child,):
                n = size(part)
                if n is None:
                    return None
                total += n
                if total > MAX_EXPANDED_VALUES:
                    return None
        sizes[key] = total
        return total

    return size(data)


def load_yaml_text(text: str, source: str) -> Any:
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlError(
            f"malformed YAML at{where}: {problem}" if where else f"malformed YAML: {problem}"
        ) from None
    except RecursionError:
        raise YamlError("YAML nested too deeply") from None
    try:
        expanded = _expanded_size(data)
    except RecursionError:
        expanded = None
    if expanded is None:
        raise YamlError(
            f"refused: with its aliases expanded the YAML holds more than {MAX_EXPANDED_VALUES:,} values, "
            "or an alias refers to itself (an alias bomb?)"
        )
    return data


def load_yaml_file(path: Path) -> Any:
    try:
        with Path(path).open("rb") as f:
            raw = f.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise YamlError(f"cannot read: {exc.strerror}") from None
    if len(raw) > MAX_YAML_BYTES:
        raise YamlError(f"larger than {MAX_YAML_BYTES // (1024 * 1024)} MiB: refused (is this an inventory?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    return load_yaml_text(text, str(path))
