"""Safe YAML loading that understands Ansible's ``!vault`` tag and reports where YAML breaks.

Inventories come from people and from other tools, so the loader also refuses what plain
PyYAML lets through silently or expensively:

- a key given twice in one mapping (PyYAML keeps the last one: a host's BMC silently lost);
- a file over ``MAX_YAML_BYTES``;
- text that is not UTF-8;
- a document that, once its aliases and ``<<`` merges are expanded, holds more than
  ``MAX_EXPANDED_VALUES`` values (an alias bomb: a 1 KB file that expands to 10^9 strings).
  Aliases themselves stay allowed: inventories use anchors for shared variables;
- a document nested too deeply to build (Python's recursion limit, not a crash).

libyaml parses where PyYAML has it (``CLoader``; 10,000 hosts: 1.6 -> 0.26 s), the pure-Python
parser otherwise (``PureLoader``); the refusals are the same on both.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.resolver import Resolver

from bringup.core.credentials import VaultText
from bringup.core.errors import UserError

try:  # libyaml, PyYAML's C extension: scans and parses about 6x faster (10,000 hosts: 1.6 -> 0.3 s)
    from yaml._yaml import CParser
except ImportError:  # a PyYAML built without it: the pure-Python parser, the same checks
    CParser = None

# A 1,000-host inventory is about 200 KB; 8 MiB leaves room for comments and long vars.
MAX_YAML_BYTES = 8 * 1024 * 1024
# Values (scalars, lists, mappings) after alias expansion: far above any real inventory or
# profile (1,000 hosts x 50 variables is 50,000), far below what exhausts memory.
MAX_EXPANDED_VALUES = 1_000_000


class YamlError(UserError, ValueError):
    """Malformed YAML; the message names the file and the line."""


class _Checks:
    """The refusals that need the document's nodes; mixed into both loaders below, so they hold
    whichever parser read the text."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)  # type: ignore[attr-defined]
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
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        super().flatten_mapping(node)  # type: ignore[misc]
        if len(node.value) > MAX_EXPANDED_VALUES:  # nested << merges double at each level
            raise ConstructorError(
                None, None, f"<< merges expand past {MAX_EXPANDED_VALUES:,} keys", node.start_mark
            )


class PureLoader(_Checks, yaml.SafeLoader):
    """PyYAML's safe loader, all in Python."""


LOADERS: list[type] = [PureLoader]

if CParser is not None:

    class CLoader(_Checks, Composer, CParser, SafeConstructor, Resolver):  # type: ignore[misc]
        """libyaml scans and parses (most of the time); PyYAML's Python composer builds the nodes
        from its events. Not yaml.CSafeLoader: its composer recurses in C, and 100,000 nested
        '[' (200 KB) overflow the C stack and kill the process; Python's recursion limit
        turns that into an error (`YAML nested too deeply`), as with the pure loader."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    LOADERS.insert(0, CLoader)

# The loader load_yaml_text uses: libyaml's where PyYAML has it.
LOADER: type = LOADERS[0]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No garbage collection while a document is built: it allocates objects by the hundred
    thousand (10,000 hosts), each burst starting a collection that also walks what the process
    already holds (0.2-0.3 s of the load at 10,000). Reference counting still frees as it goes;
    the collector runs again afterwards (for a document whose aliases make a cycle)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _vault(loader: yaml.SafeLoader, node: yaml.Node) -> VaultText:
    return VaultText(loader.construct_scalar(node))  # type: ignore[arg-type]


def _unsafe(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return loader.construct_scalar(node)  # type: ignore[arg-type]


for _loader in LOADERS:
    _loader.add_constructor("!vault", _vault)
    _loader.add_constructor("!unsafe", _unsafe)


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
        with _gc_paused():
            data = yaml.load(text, Loader=LOADER)  # noqa: S506 - safe: SafeConstructor's tags only
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
