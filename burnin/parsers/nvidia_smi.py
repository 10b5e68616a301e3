"""nvidia-smi outputs: ``-q`` (and its ``-d`` partial views), ``nvlink -s``, ``-L``, CSV queries,
``topo -m`` and the default table.

Format drift handled here: ``Clocks Throttle Reasons`` (< 535) vs ``Clocks Event Reasons``;
ECC counters as SRAM/DRAM (Ampere+) or Single/Double Bit per memory (Volta and older);
``GPU Power Readings`` vs ``Power Readings``; ``N/A`` everywhere means "not supported" (None).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat

from burnin.parsers._common import (
    clean,
    is_na,
    normalize_bdf,
    parser,
    snake,
    split_lines,
    to_float,
    to_int,
    yes_no,
)
from burnin.parsers.errors import ParseError

# ---------------------------------------------------------------------------------------------
# nvidia-smi -q
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetiredPages:
    """``Retired Pages`` (pre-Ampere page retirement; row remapping replaced it)."""

    sbe: int | None  # pages retired for single-bit ECC errors
    dbe: int | None  # pages retired for double-bit ECC errors
    pending: bool | None  # "Pending Page Blacklist" / "Pending Page Retirement": Yes -> reboot needed


@dataclass(frozen=True)
class RemappedRows:
    """``Remapped Rows`` (Ampere+)."""

    correctable: int | None
    uncorrectable: int | None
    pending: bool | None  # a remap waits for a GPU reset
    failure: bool | None  # "Remapping Failure Occurred": RMA criterion
    histogram: dict[str, int] = field(default_factory=dict)  # bank availability: max/high/partial/low/none


@dataclass(frozen=True)
class PcieLink:
    """``PCI > GPU Link Info``. Generation drops at idle (power saving); width should not."""

    gen_max: int | None
    gen_current: int | None
    gen_device_max: int | None
    gen_device_current: int | None
    gen_host_max: int | None
    width_max: int | None  # "16x" -> 16
    width_current: int | None


@dataclass(frozen=True)
class GpuQuery:
    """One ``GPU 00000000:19:00.0`` block of ``nvidia-smi -q``; a field is None when the block
    does not show it (``-d`` partial views) or the GPU does not support it (``N/A``)."""

    bus_id: str  # as printed, e.g. "00000000:19:00.0"
    product_name: str | None
    serial: str | None
    uuid: str | None
    vbios_version: str | None
    minor_number: int | None
    persistence_mode: str | None  # "Enabled" / "Disabled"
    mig_mode_current: str | None
    reset_required: bool | None  # "GPU Reset Status > Reset Required"
    drain_and_reset_recommended: bool | None
    ecc_mode_current: str | None  # "Enabled" / "Disabled"
    ecc_mode_pending: str | None
    # ECC counters, snake_case names as printed ('sram_uncorrectable_parity', 'single_bit_l1_cache'...)
    # plus canonical 'sram_correctable', 'sram_uncorrectable', 'dram_correctable',
    # 'dram_uncorrectable' derived from either layout. Values None when N/A.
    ecc_volatile: dict[str, int | None]
    ecc_aggregate: dict[str, int | None]
    retired_pages: RetiredPages | None  # None when absent or all N/A
    remapped_rows: RemappedRows | None  # None when absent or "N/A" (pre-Ampere)
    pcie: PcieLink
    replays: int | None  # "Replays Since Reset"
    replay_rollovers: int | None
    # name -> active; names match decode_throttle_reasons() ('gpu_idle', 'hw_slowdown',
    # 'hw_power_brake_slowdown', ...); N/A reasons are left out.
    clocks_event_reasons: dict[str, bool]
    fabric_state: str | None  # "Completed", "In Progress", ...; None when N/A
    fabric_status: str | None  # "Success", ...
    temperature_c: int | None
    power_draw_w: float | None
    power_limit_w: float | None

    @property
    def bdf(self) -> str | None:
        """Canonical PCI address ('0000:19:00.0'), comparable with kernel log and lspci BDFs."""
        return normalize_bdf(self.bus_id)


@dataclass(frozen=True)
class SmiQuery:
    timestamp: str | None
    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None
    gpus: tuple[GpuQuery, ...]
    problems: tuple[str, ...] = ()  # e.g. fewer GPU blocks than "Attached GPUs" (truncated output)


@dataclass(slots=True)
class _Node:
    key: str
    value: str | None
    indent: int
    children: list[_Node] = field(default_factory=list)
    # lower-case key -> (position, first child with it), built on the first find: a GPU block is
    # searched some 400 times per `nvidia-smi -q`, once per node of a 1,000-node run
    _index: dict[str, tuple[int, _Node]] | None = None
    _read: dict | None = None  # _read_once's results

    def find(self, *names: str) -> _Node | None:
        """First child whose key equals one of names (case-insensitive)."""
        index = self._index
        if index is None:
            index = self._index = {}
            for i, child in enumerate(self.children):
                index.setdefault(child.key.lower(), (i, child))
        if len(names) == 1:
            hit = index.get(names[0].lower())
            return hit[1] if hit is not None else None
        hits = [hit for n in names if (hit := index.get(n.lower())) is not None]
        return min(hits, key=lambda h: h[0])[1] if hits else None

    def get(self, *path: str) -> str | None:
        """Value at a path of keys; each path element may be 'A|B' for alternatives."""
        node: _Node | None = self
        for part in path:
            if node is None:
                return None
            node = node.find(*part.split("|")) if "|" in part else node.find(part)
        return node.value if node else None

    def walk(self):
        """All descendants, depth first (iterative: nesting depth is unbounded in bad input)."""
        stack = list(reversed(self.children))
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def empty(self) -> bool:
        return not self.children

    def has(self, key: str) -> bool:
        """Whether a child's key is `key`, exactly."""
        return any(c.key == key for c in self.children)


_KV_RE = re.compile(r"^([^:]*?\S)\s*:(?:\s+(.*))?$")


def _key_value(body: str) -> tuple[str, str | None]:
    """'Key : value' exactly as _KV_RE reads it, without the regex (the parse was most of a
    preflight's judging at 1,000 nodes): the key runs to the first colon, which is followed by
    whitespace or the end; failing that, the key ends with that colon and a second one follows
    after optional whitespace (the regex's other reading). Anything else is a key alone."""
    before, colon, after = body.partition(":")
    if not colon:
        return body, None
    key = before.rstrip()
    if key and (not after or after[0].isspace()):
        return key, after.strip()
    rest = after.lstrip()
    if rest.startswith(":") and (len(rest) == 1 or rest[1].isspace()):
        return (before + ":").strip(), rest[1:].strip()
    return body, None


def _tree(lines: list[str]) -> _Node:
    root = _Node("", None, -1, [])
    stack = [root]
    top = root  # stack[-1]
    for line in lines:
        if "\t" in line:
            line = line.expandtabs(4)
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        body = body.strip()  # as line.strip(): the spaces are gone already
        if not body:
            continue
        # _key_value's common case inline (it runs for every line of 1,600): 'Key : value'
        before, colon, after = body.partition(":")
        key = before.rstrip()
        if colon and key and (not after or after[0].isspace()):
            value: str | None = after.strip()
        else:
            key, value = _key_value(body)
        while top.indent >= indent:
            stack.pop()
            top = stack[-1]
        node = _Node(key, value, indent, [])
        top.children.append(node)
        stack.append(node)
        top = node
    return root


# ---------------------------------------------------------------------------------------------
# nvidia-smi -q, read lazily: _tree makes a node of every line in Python, when _gpu looks at some
# 40 of a GPU's 200. A _LazyNode cuts its children out of the text under its line only when they
# are asked for, all at once with one regex split (the per-line work done in C); a section that
# the GPUs of an output print alike (ECC, row remapping, clock event reasons...) is one node,
# which _read_once judges once. That reads as _tree does where the lines are indented as
# nvidia-smi indents them (4 spaces a level); elsewhere _Irregular, and _tree reads the text.
# ---------------------------------------------------------------------------------------------


class _Irregular(Exception):
    """Lines not indented as nvidia-smi indents them: _lazy_tree gives up, _tree reads them."""


# The lines at the top (no indent), each up to its first colon; and, to refuse the text, any
# line indented by other than a multiple of 4 spaces. Without those, the children of a line at
# n spaces are the lines at n + 4 under it, as long as the first line under it is one of them.
_ROOT_RE = re.compile(r"\n(?:(?=[^ \n])([^\n:]*+)|(?:    )*+ {1,3}+(?=[^ \n])())")
_LAZY_DEPTH = 32  # deeper lines (none in real output) are _tree's: the regexes stay few

# After a line's text up to its first colon: where the colon is followed by one of these (a
# space, the end of the line or of the text), or there is no colon, that text is its key.
_AFTER_COLON = ("", " ", "\n")
_NOWHERE = float("inf")  # the position of a key that no child has: after all of them


@functools.lru_cache(maxsize=16)
def _level_re(indent: int) -> re.Pattern[str]:
    """The lines at `indent` spaces, each up to its first colon ('\\n' and the spaces are a
    literal prefix, which the regex module finds quickly)."""
    return re.compile("\n" + " " * indent + r"(?=[^ \n])([^\n:]*+)")


class _LazyNode:
    """A _Node whose children are read from ``below``, the text under its line, when needed."""

    __slots__ = (
        "key",
        "value",
        "indent",
        "_below",
        "_memo",
        "_keys",
        "_rests",
        "_children",
        "_index",
        "_read",
    )

    def __init__(self, key: str, value: str | None, indent: int, below: str, memo: dict) -> None:
        self.key = key
        self.value = value
        self.indent = indent
        self._below = below  # from the newline that ends the line on
        self._memo = memo  # _lazy_tree's, for all its nodes: nodes and indexes by their text
        self._keys: list[str] = []  # once cut: each child's line up to its first colon
        self._rests: list[str] | None = None  # and the rest of that line, with the text under it
        self._children: list[_Node | _LazyNode] | None = None
        self._index: dict[str, int] | None = None  # lower-case _keys -> first position
        self._read: dict | None = None  # _read_once's results

    @property
    def children(self) -> list[_Node | _LazyNode]:
        if self._children is None:
            if self.indent < 0:  # the root: its GPU blocks stay lazy
                self._children = [self._child(i) for i in range(len(self._cut()))]
            else:  # all of them: _tree reads the lines at once, quicker than one by one
                self._children = _tree(self._below.split("\n")).children
        return self._children

    walk = _Node.walk  # (over `children`)

    def empty(self) -> bool:
        return not self._cut()

    def has(self, key: str) -> bool:
        """Whether a child's key is `key`, exactly."""
        if ":" in key:
            return any(c.key == key for c in self.children)
        return any(self._line(i)[0] == key for i, k in enumerate(self._cut()) if k.rstrip() == key)

    def find(self, *names: str) -> _Node | _LazyNode | None:
        """First child whose key equals one of names (case-insensitive)."""
        i = self._position(names)
        return None if i is None else self._child(i)

    def get(self, *path: str) -> str | None:
        """Value at a path of keys; each path element may be 'A|B' for alternatives."""
        if not path:
            return self.value
        if len(path) > 1:
            node = self.find(*path[0].split("|"))
            return node.get(*path[1:]) if node else None
        i = self._position(path[0].split("|"))
        return None if i is None else self._line(i)[1]  # (a leaf's value, without making the leaf)

    def _cut(self) -> list[str]:
        if self._rests is None:
            self._keys, self._rests = _lines_under(self._below, self.indent + 4)
        return self._keys

    def _line(self, i: int, end: int = -1) -> tuple[str, str | None]:
        """Key and value of child i's line, which ends at `end` in its rest."""
        rest = self._rests[i]
        if end < 0:
            end = rest.find("\n")
            end = len(rest) if end < 0 else end
        return _key_value((self._keys[i] + rest[:end]).rstrip(" "))

    def _child(self, i: int) -> _Node | _LazyNode:
        if self._children is not None:
            return self._children[i]
        rest = self._rests[i]
        end = rest.find("\n")
        if end < 0:  # nothing under the line
            return _Node(*self._line(i, len(rest)), self.indent + 4)
        if self.indent < 0:  # a GPU block: each is different
            return _LazyNode(*self._line(i, end), 0, rest[end:], self._memo)
        text = (self.indent, self._keys[i], rest)
        node = self._memo.get(text)
        if node is None:
            node = self._memo[text] = _LazyNode(*self._line(i, end), self.indent + 4, rest[end:], self._memo)
        return node

    def _position(self, names: Sequence[str]) -> int | None:
        """Position of the first child whose key equals one of names (case-insensitive)."""
        index = self._index if self._index is not None else self._make_index()
        if len(names) == 1:  # most finds: no comprehension
            wanted: tuple[str, ...] = (names[0].lower(),)
            first = index.get(wanted[0])
            whole_lines = ":" in wanted[0] or not wanted[0]
        else:  # (map and min, not generators: they are slower)
            wanted = tuple(map(str.lower, names))
            first = min(map(index.get, wanted, repeat(_NOWHERE, len(wanted))))
            first = None if first == _NOWHERE else first
            whole_lines = not all(wanted) or ":" in "".join(wanted)
        if not whole_lines:
            if first is None:
                return None
            rest = self._rests[first]
            if rest[:1] != ":" or rest[1:2] in _AFTER_COLON:
                return first
        # An empty key, or one with a colon: _key_value reads some lines so ('Key:x', 'Key:: x'),
        # and the first line whose text before the colon is a name may be one of them
        start = 0 if whole_lines else first + 1
        return next((i for i in range(start, len(self._keys)) if self._line(i)[0].lower() in wanted), None)

    def _make_index(self) -> dict[str, int]:
        layout = tuple(self._cut())
        index = self._memo.get(layout)  # (the GPU blocks of an output print the same lines)
        if index is None:
            keys = list(map(str.lower, map(str.rstrip, layout)))
            # reversed, so that the first child with a key is the one that stays
            index = self._memo[layout] = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1), strict=True))
        self._index = index
        return index


def _lazy_tree(text: str) -> _LazyNode:
    """The root of `text`, as _tree would read it. Only for ASCII text whose whitespace is ' '
    and '\\n' (where strip() is rstrip(' '))."""
    parts = _ROOT_RE.split("\n" + text)
    if parts[0].strip(" \n") or parts[2::3].count(None) != len(parts) // 3:
        raise _Irregular
    root = _LazyNode("", None, -4, "", {})
    root._keys, root._rests = parts[1::3], parts[3::3]
    return root


def _lines_under(below: str, indent: int) -> tuple[list[str], list[str]]:
    """The text under a line cut at its children's lines, at ``indent``: each one's text up to
    its first colon, and what follows. _Irregular where the first line is further in (it would
    be a child too)."""
    if not below:
        return [], []  # most lines: nothing under them
    if indent > _LAZY_DEPTH:
        raise _Irregular
    parts = _level_re(indent).split(below)
    if parts[0].strip(" \n"):
        raise _Irregular
    return parts[1::2], parts[2::2]


def _read_once(node: _Node | _LazyNode | None, read):
    """read(node), once per node: _LazyNode gives a section that GPUs print alike as one node.
    Callers copy what is mutable (dicts), so that no two GPUs share one."""
    if node is None:
        return read(None)
    done = node._read
    if done is None:
        done = node._read = {}
    if read not in done:
        done[read] = read(node)
    return done[read]


_GPU_HEADER_RE = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$")

_REASON_ALIASES = {"idle": "gpu_idle", "gpu_idle": "gpu_idle"}

# Volta-era per-memory counters that live in SRAM (everything but device memory).
_OLD_SRAM_PARTS = ("register_file", "l1_cache", "l2_cache", "texture_memory", "texture_shared", "cbu")


def _sum_known(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _ecc_counters(node: _Node | None) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    if node is None:
        return out
    for child in node.children:
        if child.children and child.key.lower() in ("single bit", "double bit"):
            prefix = snake(child.key)
            for leaf in child.children:
                if leaf.value is not None:
                    out[f"{prefix}_{snake(leaf.key)}"] = to_int(leaf.value)
        elif child.value is not None:
            if not is_na(child.value) and to_int(child.value) is None:
                continue  # "SRAM Threshold Exceeded : No" and other non-counters
            out[snake(child.key)] = to_int(child.value)
    if "sram_uncorrectable" not in out and any(k.startswith("sram_uncorrectable_") for k in out):
        out["sram_uncorrectable"] = _sum_known(
            [v for k, v in out.items() if k.startswith("sram_uncorrectable_")]
        )
    if "single_bit_device_memory" in out or "double_bit_device_memory" in out:
        out.setdefault("dram_correctable", out.get("single_bit_device_memory"))
        out.setdefault("dram_uncorrectable", out.get("double_bit_device_memory"))
        out.setdefault("sram_correctable", _sum_known([out.get(f"single_bit_{p}") for p in _OLD_SRAM_PARTS]))
        out.setdefault(
            "sram_uncorrectable", _sum_known([out.get(f"double_bit_{p}") for p in _OLD_SRAM_PARTS])
        )
    return out


def _retired_pages(node: _Node | None) -> RetiredPages | None:
    if node is None:
        return None
    sbe = to_int(node.get("Single Bit ECC"))
    dbe = to_int(node.get("Double Bit ECC"))
    pending_node = next((c for c in node.children if c.key.lower().startswith("pending")), None)
    pending = yes_no(pending_node.value) if pending_node else None
    if sbe is None and dbe is None and pending is None:
        return None
    return RetiredPages(sbe=sbe, dbe=dbe, pending=pending)


def _remapped_rows(node: _Node | None) -> RemappedRows | None:
    if node is None or not node.children:
        return None  # absent, or "Remapped Rows : N/A"
    corr = to_int(node.get("Correctable Error"))
    unc = to_int(node.get("Uncorrectable Error"))
    pending = yes_no(node.get("Pending"))
    failure = yes_no(node.get("Remapping Failure Occurred"))
    if corr is None and unc is None and pending is None and failure is None:
        return None
    hist_node = node.find("Bank Remap Availability Histogram")
    histogram: dict[str, int] = {}
    for child in hist_node.children if hist_node else []:
        value = to_int(child.value)
        if value is not None:
            histogram[snake(child.key)] = value
    return RemappedRows(corr, unc, pending, failure, histogram)


def _reasons(node: _Node | None) -> dict[str, bool]:
    out: dict[str, bool] = {}
    if node is None:
        return out
    for child in node.walk():
        active = yes_no(child.value)
        if active is not None:
            name = snake(child.key)
            out[_REASON_ALIASES.get(name, name)] = active
    return out


def _pcie_link(info: _Node | None) -> PcieLink:
    """``PCI > GPU Link Info``."""
    gen = info.find("PCIe Generation") if info else None
    width = info.find("Link Width") if info else None
    return PcieLink(
        gen_max=to_int(gen.get("Max")) if gen else None,
        gen_current=to_int(gen.get("Current")) if gen else None,
        gen_device_max=to_int(gen.get("Device Max")) if gen else None,
        gen_device_current=to_int(gen.get("Device Current")) if gen else None,
        gen_host_max=to_int(gen.get("Host Max")) if gen else None,
        width_max=to_int(width.get("Max")) if width else None,
        width_current=to_int(width.get("Current")) if width else None,
    )


def _ecc_errors(ecc: _Node | None) -> tuple[dict[str, int | None], dict[str, int | None]]:
    """``ECC Errors``: the volatile and the aggregate counters."""
    return (
        _ecc_counters(ecc.find("Volatile") if ecc else None),
        _ecc_counters(ecc.find("Aggregate") if ecc else None),
    )


def _pair(node: _Node | _LazyNode | None, first: str, second: str, read) -> tuple:
    return (read(node.get(first)), read(node.get(second))) if node else (None, None)


# Readers of small sections, for _read_once (which keeps a result per reader: module functions).
def _mig_mode(node: _Node | None) -> str | None:
    return clean(node.get("Current")) if node else None


def _reset_status(node: _Node | None) -> tuple[bool | None, bool | None]:
    return _pair(node, "Reset Required", "Drain and Reset Recommended", yes_no)


def _ecc_mode(node: _Node | None) -> tuple[str | None, str | None]:
    return _pair(node, "Current", "Pending", clean)


def _fabric(node: _Node | None) -> tuple[str | None, str | None]:
    return _pair(node, "State", "Status", clean)


def _gpu(bus_id: str, g: _Node | _LazyNode) -> GpuQuery:
    pci = g.find("PCI")
    power = g.find("GPU Power Readings", "Power Readings")
    reset_required, drain_and_reset = _read_once(g.find("GPU Reset Status"), _reset_status)
    ecc_mode_current, ecc_mode_pending = _read_once(g.find("ECC Mode"), _ecc_mode)
    fabric_state, fabric_status = _read_once(g.find("Fabric"), _fabric)
    volatile, aggregate = _read_once(g.find("ECC Errors"), _ecc_errors)
    rows = _read_once(g.find("Remapped Rows"), _remapped_rows)
    reasons = _read_once(g.find("Clocks Event Reasons", "Clocks Throttle Reasons"), _reasons)
    return GpuQuery(
        bus_id=bus_id,
        product_name=clean(g.get("Product Name")),
        serial=clean(g.get("Serial Number")),
        uuid=clean(g.get("GPU UUID")),
        vbios_version=clean(g.get("VBIOS Version")),
        minor_number=to_int(g.get("Minor Number")),
        persistence_mode=clean(g.get("Persistence Mode")),
        mig_mode_current=_read_once(g.find("MIG Mode"), _mig_mode),
        reset_required=reset_required,
        drain_and_reset_recommended=drain_and_reset,
        ecc_mode_current=ecc_mode_current,
        ecc_mode_pending=ecc_mode_pending,
        ecc_volatile=dict(volatile),
        ecc_aggregate=dict(aggregate),
        retired_pages=_read_once(g.find("Retired Pages"), _retired_pages),
        remapped_rows=rows
        and RemappedRows(
            rows.correctable, rows.uncorrectable, rows.pending, rows.failure, dict(rows.histogram)
        ),
        pcie=_read_once(pci.find("GPU Link Info") if pci else None, _pcie_link),
        replays=to_int(pci.get("Replays Since Reset")) if pci else None,
        replay_rollovers=to_int(pci.get("Replay Number Rollovers")) if pci else None,
        clocks_event_reasons=dict(reasons),
        fabric_state=fabric_state,
        fabric_status=fabric_status,
        temperature_c=to_int(g.get("Temperature", "GPU Current Temp")),
        power_draw_w=to_float(power.get("Power Draw|Instantaneous Power Draw|Average Power Draw"))
        if power
        else None,
        power_limit_w=to_float(power.get("Current Power Limit|Enforced Power Limit|Power Limit"))
        if power
        else None,
    )


_SMI_FAILURE_RE = re.compile(r"(NVIDIA-SMI has failed|No devices were found|couldn't communicate)", re.I)


def _cut_block(first: _Node | _LazyNode, last: _Node | _LazyNode) -> str:
    """Why the last GPU block was cut short, or ''. Output is printed in order, so only the
    last block can be cut. A full block ('Product Name' ...) always prints 'Processes' (newer
    drivers add 'Capabilities' after it); a ``-d`` view prints the same lines for every GPU.
    Only those are compared: GPUs differ in optional sections (MIG devices) otherwise."""
    if last.empty():
        return f"the block of {last.key} is empty: the output was cut short"
    if first.has("Product Name"):
        missing = [] if last.has("Processes") else ["Processes"]
    else:  # the same sections, down to their last line
        have = [n.key for n in last.walk()]
        missing = (
            [n.key for n in first.walk()][len(have) :] if len(have) < sum(1 for _ in first.walk()) else []
        )
    if not missing:
        return ""
    return f"the block of {last.key} ends before {', '.join(missing[:3])!r}: the output was cut short"


# ASCII's whitespace besides ' ' and '\n' (tabs and '\r' are gone by then): _LazyNode's regexes
# take only ' ' for whitespace, where str.strip() strips these too.
_OTHER_SPACE = "\x0b\x0c\x1c\x1d\x1e\x1f"


@parser
def parse_query(text: str) -> SmiQuery:
    """``nvidia-smi -q`` (also ``-q -d PAGE_RETIREMENT`` and other ``-d`` partial views)."""
    # the lines as _tree reads them: split_lines' line ends (looked for first: a replace() that
    # finds nothing still takes 0.05 ms) and tabs at 4 columns, which restart at each newline
    below = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    if "\t" in below:
        below = below.expandtabs(4)
    if below.isascii() and not any(c in below for c in _OTHER_SPACE):
        try:
            return _query(_lazy_tree(below), text)
        except _Irregular:
            pass  # lines not indented as nvidia-smi indents them: _tree reads them all
    return _query(_tree(split_lines(text)), text)


def _query(root: _Node | _LazyNode, text: str) -> SmiQuery:
    gpus: list[GpuQuery] = []
    blocks: list[_Node | _LazyNode] = []
    for node in root.children:
        m = _GPU_HEADER_RE.match(node.key) if node.value is None else None
        if m:
            gpus.append(_gpu(m.group(1), node))
            blocks.append(node)
    driver = clean(root.get("Driver Version"))
    attached = to_int(root.get("Attached GPUs"))
    if not gpus and driver is None and attached is None:
        failure = _SMI_FAILURE_RE.search(text)
        if failure:
            line = next(ln for ln in split_lines(text) if failure.group(0) in ln)
            raise ParseError(f"nvidia-smi reported an error: {line.strip()[:200]}")
        raise ParseError("not nvidia-smi -q output: no 'Driver Version', 'Attached GPUs' or GPU block")
    problems: list[str] = []
    if attached is not None and attached != len(gpus):
        problems.append(f"'Attached GPUs : {attached}' but {len(gpus)} GPU block(s) found")
    if blocks and (cut := _cut_block(blocks[0], blocks[-1])):
        problems.append(cut)
    return SmiQuery(
        timestamp=clean(root.get("Timestamp")),
        driver_version=driver,
        cuda_version=clean(root.get("CUDA Version")),
        attached_gpus=attached,
        gpus=tuple(gpus),
        problems=tuple(problems),
    )


# ---------------------------------------------------------------------------------------------
# nvidia-smi nvlink -s
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NvlinkLink:
    number: int
    speed_gbps: float | None  # GB/s per link as printed ("26.562 GB/s"); None when inactive/N/A
    inactive: bool


@dataclass(frozen=True)
class NvlinkGpu:
    index: int
    name: str
    uuid: str | None
    links: tuple[NvlinkLink, ...]
    all_inactive: bool  # NVML printed "Unable to retrieve NVLink information as all links are inactive"


@dataclass(frozen=True)
class NvlinkStatus:
    gpus: tuple[NvlinkGpu, ...]
    # True when the "all links are inactive" message was printed at all (for any GPU, or with
    # no GPU line before it); see NvlinkGpu.all_inactive for which GPU.
    all_inactive: bool


_GPU_LINE_RE = re.compile(r"^GPU (\d+): (.*)$")
_UUID_RE = re.compile(r" \(UUID: ([^()]*)\)$")
_LINK_RE = re.compile(r"^\s*Link (\d+): (.*)$")


def _gpu_line(line: str) -> tuple[int, str, str | None] | None:
    """'GPU 0: NAME (UUID: GPU-...)' -> (0, 'NAME', 'GPU-...')."""
    if "GPU " not in line:  # most lines: no regex
        return None
    m = _GPU_LINE_RE.match(line.strip())
    if not m:
        return None
    rest = m.group(2).rstrip()
    uuid = _UUID_RE.search(rest)
    if uuid:
        return int(m.group(1)), rest[: uuid.start()].strip(), clean(uuid.group(1))
    return int(m.group(1)), rest.strip(), None


_ALL_INACTIVE_RE = re.compile(r"all links are inactive", re.I)
_SPEED_RE = re.compile(r"^([\d.]+)\s*GB/s")


def _all_inactive(line: str) -> bool:
    if line.isascii():  # there IGNORECASE is str.lower()'s, and a substring test is enough
        return "all links are inactive" in line.lower()
    return _ALL_INACTIVE_RE.search(line) is not None


def _nvlink_line(line: str) -> tuple[str, tuple | re.Match[str] | None]:
    """What a line of ``nvlink -s`` is: 'gpu' (with _gpu_line's GPU), 'inactive', 'link' (with
    its match) or ''."""
    if gpu := _gpu_line(line):
        return "gpu", gpu
    if _all_inactive(line):
        return "inactive", None
    if m := _LINK_RE.match(line):
        return "link", m
    return "", None


def _nvlink_link(m: re.Match[str]) -> NvlinkLink:
    value = m.group(2).strip()
    speed = _SPEED_RE.match(value)
    inactive = "inactive" in value.lower()
    return NvlinkLink(int(m.group(1)), to_float(speed.group(1)) if speed else None, inactive)


@parser
def parse_nvlink_status(text: str) -> NvlinkStatus:
    """``nvidia-smi nvlink -s`` / ``--status``."""
    gpus: list[NvlinkGpu] = []
    current: dict | None = None
    orphan_inactive = False
    # Each line is read once per output: the GPUs of a node print the same link lines ('Link 0:
    # 26.562 GB/s'), and NvlinkLink is immutable, so they share one.
    kinds: dict[str, tuple] = {}
    links: dict[str, NvlinkLink] = {}

    def flush() -> None:
        if current is not None:
            gpus.append(
                NvlinkGpu(
                    current["index"],
                    current["name"],
                    current["uuid"],
                    tuple(current["links"]),
                    current["inactive"],
                )
            )

    for line in split_lines(text):
        kind, found = kinds.get(line) or kinds.setdefault(line, _nvlink_line(line))
        if kind == "gpu":
            flush()
            current = {
                "index": found[0],
                "name": found[1],
                "uuid": found[2],
                "links": [],
                "inactive": False,
            }
        elif kind == "inactive":
            if current is None:
                orphan_inactive = True
            else:
                current["inactive"] = True
        elif kind == "link" and current is not None:
            link = links.get(line)
            if link is None:
                link = links[line] = _nvlink_link(found)
            current["links"].append(link)
    flush()
    if not gpus and not orphan_inactive:
        raise ParseError("not 'nvidia-smi nvlink -s' output: no 'GPU n:' line")
    return NvlinkStatus(tuple(gpus), orphan_inactive or any(g.all_inactive for g in gpus))


# ---------------------------------------------------------------------------------------------
# nvidia-smi -L
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MigDevice:
    profile: str  # e.g. "2g.20gb"
    device: int
    uuid: str | None


@dataclass(frozen=True)
class GpuListEntry:
    index: int
    name: str
    uuid: str | None
    mig_devices: tuple[MigDevice, ...] = ()


_MIG_LINE_RE = re.compile(r"^\s+MIG\s+(\S+)\s+Device\s+(\d+):\s*(?:\(UUID: ([^)]*)\))?")


# The lines of `nvidia-smi -L` output that are no GPU: "No devices were found", and the command
# itself echoed before its output in a pasted capture (':nvidia-smi -L', '$ nvidia-smi -L').
_LIST_OTHER_RE = re.compile(r"\s*(?:No devices were found|\S{0,2}\s*nvidia-smi -L)\s*")


@parser
def parse_gpu_list(text: str) -> list[GpuListEntry]:
    """``nvidia-smi -L``: GPUs in order; indented ``MIG ...`` lines belong to the GPU above.

    "No devices were found" gives an empty list; text with no GPU line at all is a ParseError,
    and so is any other line: ``-L`` prints nothing else, and GPU lines inside another tool's
    output (``nvlink -s``, gpu_burn) must not read as a GPU list.
    """
    gpus: list[GpuListEntry] = []
    for line in split_lines(text):
        if gpu := _gpu_line(line):
            if line[:1].isspace():
                raise ParseError(f"not 'nvidia-smi -L' output: an indented GPU line: {line.strip()[:120]!r}")
            gpus.append(GpuListEntry(*gpu))
        elif (m := _MIG_LINE_RE.match(line)) and gpus:
            last = gpus[-1]
            mig = MigDevice(m.group(1), int(m.group(2)), clean(m.group(3)))
            gpus[-1] = GpuListEntry(last.index, last.name, last.uuid, (*last.mig_devices, mig))
        elif line.strip() and not _LIST_OTHER_RE.fullmatch(line):
            raise ParseError(f"not 'nvidia-smi -L' output: a line that is no GPU: {line.strip()[:120]!r}")
    if not gpus and not re.search(r"No devices were found", text):
        raise ParseError("not 'nvidia-smi -L' output: no 'GPU n: ...' line")
    return gpus


# ---------------------------------------------------------------------------------------------
# --query-gpu=index,clocks_throttle_reasons.active,temperature.gpu,power.draw sampling
# ---------------------------------------------------------------------------------------------

# NVML nvmlClocksEventReason* / nvmlClocksThrottleReason* bits (nvml.h).
THROTTLE_REASON_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def decode_throttle_reasons(mask: int) -> list[str]:
    """Names of the bits set in a clocks throttle/event reasons mask, lowest bit first.

    Unknown bits come out as 'unknown_0x...'. A negative or non-int mask is a ParseError.
    """
    if isinstance(mask, bool) or not isinstance(mask, int) or mask < 0:
        raise ParseError(f"not a throttle reasons mask: {mask!r}")
    names = []
    bit = 1
    while bit <= mask:
        if mask & bit:
            names.append(THROTTLE_REASON_BITS.get(bit, f"unknown_0x{bit:x}"))
        bit <<= 1
    return names


@dataclass(frozen=True)
class ThrottleSample:
    index: int
    reasons_mask: int | None  # None when [N/A]
    temperature_c: float | None
    power_draw_w: float | None

    @property
    def reasons(self) -> list[str]:
        return decode_throttle_reasons(self.reasons_mask) if self.reasons_mask is not None else []


def _mask(value: str) -> int | None:
    value = value.strip()
    if is_na(value):
        return None
    try:
        return int(value, 0) if value.lower().startswith("0x") else int(value)
    except ValueError:
        return None


@parser
def parse_throttle_samples(text: str) -> list[ThrottleSample]:
    """Rows ``index, 0x...88, temp, power`` from repeated ``--query-gpu ... -lms`` sampling.

    Header rows, blank lines and rows that do not parse are skipped; units ('67 C', '690.12 W')
    and '[N/A]' are tolerated. No valid row at all is a ParseError.
    """
    samples: list[ThrottleSample] = []
    for line in split_lines(text):
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 2 or not re.fullmatch(r"\d+", fields[0]):
            continue
        mask = _mask(fields[1])
        if mask is None and not is_na(fields[1]):
            continue
        temp = to_float(fields[2]) if len(fields) > 2 else None
        power = to_float(fields[3]) if len(fields) > 3 else None
        samples.append(ThrottleSample(int(fields[0]), mask, temp, power))
    if not samples:
        raise ParseError("no throttle-reason sample rows ('index, 0x..., temp, power')")
    return samples


# ---------------------------------------------------------------------------------------------
# generic --query-gpu=... --format=csv
# ---------------------------------------------------------------------------------------------

_HEADER_FIELD_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(?: \[[^\]]*\])?$")


def _header_names(fields: list[str]) -> list[str] | None:
    if fields and all(_HEADER_FIELD_RE.match(f) for f in fields):
        return [re.sub(r" \[[^\[\]]*\]$", "", f) for f in fields]
    return None


@parser
def parse_query_gpu_csv(text: str, fields: list[str] | None = None) -> list[dict[str, str | None]]:
    """``nvidia-smi --query-gpu=a,b,c --format=csv``: one dict per data row, keyed by header
    name without its unit ('memory.used [MiB]' -> 'memory.used'); values stripped strings,
    None for '[N/A]' / '[Not Supported]'.

    A repeated header starts a new section (e.g. idle then under-load captures). Lines that are
    neither header nor a row of the current header's width (prompts, comments) are skipped.
    With ``fields`` given (for ``noheader`` output) rows are keyed by those names.
    """
    names: list[str] | None = list(fields) if fields else None
    rows: list[dict[str, str | None]] = []
    seen_header = names is not None
    for line in split_lines(text):
        if not line.strip() or "--query-" in line or "--format" in line:
            continue  # blank, or the command line itself pasted above its output
        cells = [c.strip() for c in line.split(",")]
        header = _header_names(cells)
        if header is not None and (fields is None or header == names):
            names = header if fields is None else names
            seen_header = True
            continue
        if names is None or len(cells) != len(names):
            continue
        rows.append({n: clean(c) if not is_na(c) else None for n, c in zip(names, cells, strict=False)})
    if not seen_header:
        raise ParseError("no CSV header line ('index, pcie.link.gen.current, ...') found")
    return rows


# ---------------------------------------------------------------------------------------------
# nvidia-smi topo -m
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Topology:
    devices: tuple[str, ...]  # matrix labels in order: GPU0..GPUn, NIC0..NICm (or mlx5_N on old drivers)
    matrix: dict[str, dict[str, str]]  # matrix[row][col] = 'X', 'NV18', 'PIX', 'PXB', 'NODE', 'SYS', ...
    cpu_affinity: dict[str, str | None]
    numa_affinity: dict[str, str | None]
    gpu_numa_id: dict[str, str | None]
    nic_legend: dict[str, str]  # 'NIC0' -> 'mlx5_0'

    def link(self, a: str, b: str) -> str | None:
        return self.matrix.get(a, {}).get(b)


_AFFINITY_COLUMNS = ("cpu affinity", "numa affinity", "gpu numa id")


@parser
def parse_topology(text: str) -> Topology:
    """``nvidia-smi topo -m``. Cells are tab-separated and may be empty (CPU Affinity), so rows
    are split on tabs; text whose tabs were lost is split on runs of spaces as a fallback."""
    lines = split_lines(text)
    header_idx = None
    for i, line in enumerate(lines):
        cells = [c.strip() for c in re.split(r"\t| {2,}", line.strip())]
        if "GPU0" in cells and line[:1].isspace():
            header_idx = i
            break
    if header_idx is None:
        raise ParseError("not 'nvidia-smi topo -m' output: no header row with GPU0")
    header_line = lines[header_idx]
    tabbed = "\t" in header_line
    head = [c.strip() for c in (header_line.split("\t") if tabbed else re.split(r" {2,}", header_line))]
    head = [c for c in head if c]
    devices = []
    extra_cols = []
    for cell in head:
        if cell.lower() in _AFFINITY_COLUMNS or " " in cell:
            extra_cols.append(cell.lower())
        elif not extra_cols:
            devices.append(cell)
    matrix: dict[str, dict[str, str]] = {}
    affinity: dict[str, dict[str, str | None]] = {c: {} for c in _AFFINITY_COLUMNS}
    legend: dict[str, str] = {}
    for line in lines[header_idx + 1 :]:
        if m := re.match(r"^\s*(NIC\d+|[A-Za-z]+\d+):\s*(\S+)\s*$", line):
            legend[m.group(1)] = m.group(2)
            continue
        label = line.split("\t", 1)[0].strip() if tabbed else (line.split() or [""])[0]
        if label not in devices or line[:1].isspace():
            continue
        cells = line.split("\t")[1:] if tabbed else line.split()[1:]
        cells = [c.strip() for c in cells]
        row = cells[: len(devices)]
        if len(row) < len(devices):
            continue
        matrix[label] = dict(zip(devices, row, strict=False))
        rest = cells[len(devices) :]
        # Real output puts an extra tab before 'GPU NUMA ID': first columns map from the left,
        # the last one from the right.
        cols = [c for c in extra_cols if c in _AFFINITY_COLUMNS]
        for j, col in enumerate(cols):
            if j == len(cols) - 1 and len(rest) > len(cols):
                value = rest[-1]
            else:
                value = rest[j] if j < len(rest) else ""
            affinity[col][label] = clean(value)
    if not matrix:
        raise ParseError("'nvidia-smi topo -m' header without any matrix row")
    return Topology(
        devices=tuple(devices),
        matrix=matrix,
        cpu_affinity=affinity["cpu affinity"],
        numa_affinity=affinity["numa affinity"],
        gpu_numa_id=affinity["gpu numa id"],
        nic_legend=legend,
    )


# ---------------------------------------------------------------------------------------------
# default nvidia-smi table
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableGpu:
    index: int
    name: str  # may be truncated by nvidia-smi ("NVIDIA A100-SXM4-...")
    persistence_mode: bool | None  # Persistence-M On/Off
    bus_id: str
    display_active: bool | None
    volatile_uncorrected_ecc: int | None  # None when N/A
    fan: str | None
    temperature_c: int | None
    perf_state: str | None
    power_draw_w: float | None
    power_cap_w: float | None
    memory_used_mib: int | None
    memory_total_mib: int | None
    utilization_pct: int | None
    compute_mode: str | None
    mig_mode: str | None


@dataclass(frozen=True)
class SmiTable:
    smi_version: str | None
    driver_version: str | None
    cuda_version: str | None
    gpus: tuple[TableGpu, ...]
    no_running_processes: bool


_TABLE_BUS_RE = re.compile(r"^([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+(On|Off|N/A)$")


def _cells(line: str) -> list[str] | None:
    """The stripped cells of a '| a | b | c |' table line (None for other lines)."""
    if not line.startswith("|"):
        return None
    return [c.strip() for c in line.split("|")[1:-1]]


def _table_gpu(row1: list[str], row2: list[str] | None, row3: list[str] | None) -> TableGpu | None:
    """The GPU rows of one table block: 'idx name persistence | bus disp | ecc', then
    'fan temp perf draw / cap | used / total | util compute', then '| | mig'."""
    words = row1[0].split() if len(row1) >= 3 else []
    bus = _TABLE_BUS_RE.match(row1[1]) if len(row1) >= 3 else None
    if len(words) < 3 or not words[0].isdigit() or words[-1] not in ("On", "Off", "N/A") or not bus:
        return None
    name = row1[0][len(words[0]) : len(row1[0]) - len(words[-1])].strip()
    left = row2[0].split() if row2 and len(row2) >= 3 else []
    power = [w for w in left[3:] if w != "/"]
    memory = re.findall(r"(?<!\d)(\d+)MiB", row2[1]) if row2 and len(row2) >= 3 else []
    util = row2[2].split() if row2 and len(row2) >= 3 else []
    return TableGpu(
        index=int(words[0]),
        name=name,
        persistence_mode=yes_no(words[-1]),
        bus_id=bus.group(1),
        display_active=yes_no(bus.group(2)),
        volatile_uncorrected_ecc=to_int(row1[2]),
        fan=clean(left[0]) if left else None,
        temperature_c=to_int(left[1]) if len(left) > 1 else None,
        perf_state=clean(left[2]) if len(left) > 2 else None,
        power_draw_w=to_float(power[0]) if power else None,
        power_cap_w=to_float(power[1]) if len(power) > 1 else None,
        memory_used_mib=int(memory[0]) if memory else None,
        memory_total_mib=int(memory[1]) if len(memory) > 1 else None,
        utilization_pct=to_int(util[0]) if util else None,
        compute_mode=clean(" ".join(util[1:])) if len(util) > 1 else None,
        mig_mode=clean(row3[-1]) if row3 and len(row3) >= 3 and not row3[0] else None,
    )


@parser
def parse_table(text: str) -> SmiTable:
    """The default ``nvidia-smi`` table: GPU count, names, Persistence-M, Volatile Uncorr. ECC..."""
    lines = [_cells(ln.rstrip()) for ln in split_lines(text)]
    head = re.search(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA Version:\s*(\S+))?", text)
    gpus: list[TableGpu] = []
    for i, row in enumerate(lines):
        if row is None:
            continue
        row2 = lines[i + 1] if i + 1 < len(lines) else None
        row3 = lines[i + 2] if i + 2 < len(lines) else None
        gpu = _table_gpu(row, row2, row3)
        if gpu is not None:
            gpus.append(gpu)
    if head is None and not gpus:
        raise ParseError("not the nvidia-smi table: no 'NVIDIA-SMI ... Driver Version' header or GPU row")
    return SmiTable(
        smi_version=head.group(1) if head else None,
        driver_version=head.group(2) if head else None,
        cuda_version=clean(head.group(3)) if head else None,
        gpus=tuple(gpus),
        no_running_processes="No running processes found" in text,
    )
