"""AMD's `amd-smi` outputs (pure): `amd-smi static` (inventory, RAS state), `amd-smi metric --ecc
--ecc-blocks` (ECC counts per block) and `amd-smi xgmi` (the XGMI link table).

amd-smi's default output is an indented tree: a ``GPU: N`` line at column 0 starts a GPU's block,
and each level below it is indented four spaces further, ``KEY: value`` or ``KEY:`` opening a
section (the layouts of https://github.com/ROCm/amdsmi/blob/develop/docs/how-to/amdsmi-cli-tool.md
and its CHANGELOG.md). The output has no end line and no GPU count, so a parser holds every GPU's
block to the first one's shape: amd-smi prints the same keys for every GPU of a node, and a last
block with fewer keys is an output cut short.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from burnin.parsers._common import parser, split_lines
from burnin.parsers.errors import ParseError

NA = "N/A"
_GPU = re.compile(r"^GPU: (\d+)\s*$")
_ENTRY = re.compile(r"^(?P<indent>(?:    )+)(?P<key>[A-Z][A-Z0-9_ ]*[A-Z0-9_]):(?: (?P<value>.*?))?\s*$")


@dataclass(frozen=True)
class GpuTree:
    """One GPU's block: each key by its path ('ASIC/MARKET_NAME') with its value ('' for a section)."""

    index: int
    values: dict[str, str] = field(default_factory=dict)

    def get(self, path: str) -> str | None:
        value = self.values.get(path)
        return None if value is None or value in ("", NA) else value


def _gpu_trees(text: str, tool: str) -> list[GpuTree]:
    """Each ``GPU: N`` block as a tree of key paths. Other top-level blocks (``CPU: N`` of an APU
    node) are skipped; a line that is neither a key nor blank inside a GPU block is refused."""
    trees: list[GpuTree] = []
    path: list[str] = []
    current: GpuTree | None = None
    for number, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        if m := _GPU.match(line):
            current = GpuTree(int(m[1]))
            trees.append(current)
            path = []
            continue
        if not line.startswith(" "):
            current = None  # another device's block (CPU: 0) or a heading amd-smi prints
            continue
        if current is None:
            continue
        m = _ENTRY.match(line)
        if m is None:
            raise ParseError(f"{tool}: line {number} is not a 'KEY: value' line: {line.strip()[:80]!r}")
        depth = len(m["indent"]) // 4
        if depth > len(path) + 1:
            raise ParseError(f"{tool}: line {number} is indented below no section")
        del path[depth - 1 :]
        path.append(m["key"])
        key = "/".join(path)
        if key not in current.values:  # a repeated key (POLICY_ID) keeps its first value
            current.values[key] = m["value"] or ""
    if not trees:
        raise ParseError(f"{tool}: no 'GPU: N' block")
    indexes = [t.index for t in trees]
    if len(set(indexes)) != len(indexes):
        raise ParseError(f"{tool}: a GPU index appears twice: more than one output run together")
    first = set(trees[0].values)
    for tree in trees[1:]:
        if missing := first - set(tree.values):
            raise ParseError(
                f"{tool}: GPU {tree.index} lacks {len(missing)} key(s) GPU {trees[0].index} has "
                f"({sorted(missing)[0]}...): the output was cut short"
            )
    return trees


@dataclass(frozen=True)
class AmdGpu:
    """What `amd-smi static` says of one GPU."""

    index: int
    market_name: str | None  # ASIC MARKET_NAME ('MI300X', 'MI300A')
    product_name: str | None  # BOARD PRODUCT_NAME ('Aqua Vanjaram [Instinct MI300A]')
    serial: str | None  # BOARD PRODUCT_SERIAL, else ASIC ASIC_SERIAL
    bdf: str | None
    vbios: str | None  # VBIOS VERSION
    driver: str | None  # DRIVER VERSION (amdgpu)
    ecc_blocks_enabled: tuple[str, ...]  # RAS ECC_BLOCK_STATE blocks ENABLED
    ecc_blocks_disabled: tuple[str, ...]


@parser
def parse_static(text: str) -> list[AmdGpu]:
    """`amd-smi static` (any of its sections; MARKET_NAME needs --asic)."""
    trees = _gpu_trees(text, "amd-smi static")
    if not any(t.get("ASIC/MARKET_NAME") or t.get("BOARD/PRODUCT_NAME") for t in trees):
        raise ParseError("amd-smi static: no GPU names its model (ASIC MARKET_NAME or BOARD PRODUCT_NAME)")
    gpus = []
    for t in trees:
        state = {k.rsplit("/", 1)[1]: v for k, v in t.values.items() if k.startswith("RAS/ECC_BLOCK_STATE/")}
        gpus.append(
            AmdGpu(
                index=t.index,
                market_name=t.get("ASIC/MARKET_NAME"),
                product_name=t.get("BOARD/PRODUCT_NAME"),
                serial=t.get("BOARD/PRODUCT_SERIAL") or t.get("ASIC/ASIC_SERIAL"),
                bdf=t.get("BUS/BDF"),
                vbios=t.get("VBIOS/VERSION"),
                driver=t.get("DRIVER/VERSION"),
                ecc_blocks_enabled=tuple(b for b, s in state.items() if s == "ENABLED"),
                ecc_blocks_disabled=tuple(b for b, s in state.items() if s == "DISABLED"),
            )
        )
    return gpus


@dataclass(frozen=True)
class EccCount:
    correctable: int
    uncorrectable: int
    deferred: int | None  # DEFERRED_COUNT: amd-smi prints it since ROCm 6.1


@dataclass(frozen=True)
class AmdGpuEcc:
    """What `amd-smi metric --ecc --ecc-blocks` says of one GPU: its totals (--ecc) and its blocks."""

    index: int
    total: EccCount | None
    blocks: dict[str, EccCount]


def _count(tree: GpuTree, prefix: str, key: str) -> int | None:
    raw = tree.values.get(f"{prefix}{key}")
    if raw is None or raw == NA:
        return None
    if not re.fullmatch(r"\d{1,19}", raw):
        raise ParseError(f"amd-smi metric --ecc: GPU {tree.index} {prefix}{key} is {raw[:40]!r}, not a count")
    return int(raw)


def _ecc_count(tree: GpuTree, prefix: str, names: tuple[str, str, str]) -> EccCount | None:
    ce, ue, de = (_count(tree, prefix, n) for n in names)
    if ce is None and ue is None:
        return None
    if ce is None or ue is None:
        raise ParseError(
            f"amd-smi metric --ecc: GPU {tree.index} {prefix or 'ECC'} has one count of two: cut"
        )
    return EccCount(ce, ue, de)


@parser
def parse_ecc(text: str) -> list[AmdGpuEcc]:
    """`amd-smi metric --ecc` and/or `--ecc-blocks`: a GPU with neither is refused (not this output)."""
    gpus = []
    for t in _gpu_trees(text, "amd-smi metric --ecc"):
        total = _ecc_count(
            t, "ECC/", ("TOTAL_CORRECTABLE_COUNT", "TOTAL_UNCORRECTABLE_COUNT", "TOTAL_DEFERRED_COUNT")
        )
        names = dict.fromkeys(
            k.split("/")[1] for k in t.values if k.startswith("ECC_BLOCKS/") and k.count("/") == 2
        )
        blocks = {}
        for name in names:
            count = _ecc_count(
                t, f"ECC_BLOCKS/{name}/", ("CORRECTABLE_COUNT", "UNCORRECTABLE_COUNT", "DEFERRED_COUNT")
            )
            if count is None:
                raise ParseError(f"amd-smi metric --ecc: GPU {t.index} block {name} has no counts")
            blocks[name] = count
        if total is None and not blocks:
            raise ParseError(f"amd-smi metric --ecc: GPU {t.index} shows no ECC count")
        gpus.append(AmdGpuEcc(t.index, total, blocks))
    return gpus


@dataclass(frozen=True)
class XgmiLink:
    """A GPU's row of `amd-smi xgmi`'s LINK METRIC TABLE."""

    gpu: int
    bdf: str
    bit_rate_gbps: float | None
    max_bandwidth_gbps: float | None
    link_type: str


_XGMI_ROW = re.compile(
    # Some releases print the BDF without its PCI domain ('05:00.0': AMD's amd-smi blog, 8x MI300X).
    r"^GPU(?P<gpu>\d+)\s+(?P<bdf>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)\s+"
    r"(?P<rate>N/A|\d+(?:\.\d+)? Gb/s)\s+(?P<max>N/A|\d+(?:\.\d+)? Gb/s)\s+(?P<type>\S+)\s*$"
)


def _gbps(raw: str) -> float | None:
    return None if raw == NA else float(raw.split()[0])


@parser
def parse_xgmi(text: str) -> list[XgmiLink]:
    """`amd-smi xgmi`: each GPU's link rate, maximum bandwidth and type, from its table row."""
    lines = split_lines(text)
    if not any(line.startswith("LINK METRIC TABLE") for line in lines):
        raise ParseError("amd-smi xgmi: no 'LINK METRIC TABLE' heading")
    links = []
    for line in lines:
        if line.startswith("GPU"):
            m = _XGMI_ROW.match(line)
            if m is None:
                raise ParseError(f"amd-smi xgmi: a GPU row not in the table's layout: {line[:80]!r}")
            links.append(
                XgmiLink(int(m["gpu"]), m["bdf"].lower(), _gbps(m["rate"]), _gbps(m["max"]), m["type"])
            )
    if not links:
        raise ParseError("amd-smi xgmi: the table has no GPU row")
    return links


@dataclass(frozen=True)
class Topology:
    """`amd-smi topology`: its tables (ACCESS, WEIGHT, HOPS, LINK TYPE, NUMA BW), each GPU pair's cell
    by (row BDF, column BDF), and the GPUs in the order the tables list them."""

    bdfs: tuple[str, ...]
    tables: dict[str, dict[tuple[str, str], str]]

    def cell(self, table: str, a: str, b: str) -> str | None:
        return self.tables.get(table, {}).get((a, b))


_TABLE = re.compile(r"^(?P<name>[A-Z][A-Z0-9 _-]*?)[ _]TABLE:\s*$")  # 'BI-DIRECTIONAL TABLE:' too
_BDF = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


@parser
def parse_topology(text: str) -> Topology:
    """`amd-smi topology` (any of -a -w -o -t -b): each ``NAME TABLE:`` heading, a header row of the
    GPUs' BDFs, then one row per GPU; after the tables, -c/-n/-d/-z print a 'Legend:' (amdsmi's
    CHANGELOG, 'amd-smi topology -cndz'). A table with fewer rows than columns, or a row with fewer
    cells than the header, is an output cut short."""
    tables: dict[str, dict[tuple[str, str], str]] = {}
    order: tuple[str, ...] | None = None
    name: str | None = None
    header: list[str] = []
    rows = 0

    def close() -> None:
        if name is not None and rows < len(header):
            raise ParseError(f"amd-smi topology: {name} TABLE has {rows} row(s) of {len(header)}: cut short")

    for number, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        if m := _TABLE.match(line):
            close()
            name, header, rows = m["name"].replace("_", " "), [], 0
            tables[name] = {}
            continue
        if line.strip() == "Legend:":  # the tables are over
            close()
            name = None
            continue
        if name is None:
            continue
        cells = line.split()
        if not header:
            if not cells or not all(_BDF.match(c) for c in cells):
                raise ParseError(f"amd-smi topology: line {number}: {name} TABLE has no header of GPU BDFs")
            header = [c.lower() for c in cells]
            if order is None:
                order = tuple(header)
            elif tuple(header) != order:
                raise ParseError(f"amd-smi topology: {name} TABLE lists other GPUs than the first table")
            continue
        if not _BDF.match(cells[0]) or len(cells) != len(header) + 1:
            raise ParseError(
                f"amd-smi topology: line {number} is not a row of {name} TABLE: {line.strip()[:80]!r}"
            )
        row = cells[0].lower()
        tables[name].update({(row, col): value for col, value in zip(header, cells[1:], strict=True)})
        rows += 1
    close()
    if order is None:
        raise ParseError("amd-smi topology: no 'NAME TABLE:' with GPUs")
    return Topology(order, tables)
