"""AMD's older `rocm-smi` outputs (pure): `rocm-smi --showproductname --showbus` (inventory) and
`rocm-smi --showrasinfo` (ECC counts per RAS block) and `rocm-smi --showtopo` (the link type
between each two GPUs), the text form of ROCm before amd-smi.

rocm-smi prints one log (ROCm/rocm_smi_lib, python_smi_tools/rocm_smi.py): a header spacer
``=== ROCm System Management Interface ===``, then each section the options ask for, opened by a
titled spacer (``=== Product Info ===``, ``=== PCI Bus ID ===``, ``=== RAS Info ===``) and closed
by a plain one, then the end spacer ``=== End of ROCm SMI Log ===``. Key lines are
``GPU[N]<tabs>: Key: value`` (printLog); the RAS section is one table per GPU (printTableLog).
The end line is what tells a whole output from a cut one: a log without it may stop anywhere,
even between two whole GPUs, and is refused. Older releases spell the keys in lower case ('Card
series') and print the header without the spaces around its title.

The JSON form (``--json``) is not read: it has no end line, and ``--showrasinfo`` prints nothing
in it ("WARNING: No JSON data to report", https://github.com/ROCm/legacy-rocm-build/issues/4374).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from burnin.parsers._common import parser, split_lines
from burnin.parsers.errors import ParseError

NA = "N/A"
_HEADER = re.compile(r"^=+\s*ROCm System Management Interface\s*=+\s*$")
_END = re.compile(r"^=+\s*End of ROCm SMI Log\s*=+\s*$")
_TITLED = re.compile(r"^=+\s*(?P<title>[^=\s][^=]*?)\s*=+\s*$")
_PLAIN = re.compile(r"^=+\s*$")
_KEY = re.compile(r"^GPU\[(?P<index>\d{1,4})\]\s*:\s*(?P<key>[A-Za-z][^:]*?)\s*:\s*(?P<value>.*?)\s*$")
# What rocm-smi's logging prints beside its log when stderr is pasted with it.
_LOGGING = re.compile(r"^(?:WARNING|ERROR|INFO|DEBUG):")


def _log(text: str, tool: str) -> dict[str, list[tuple[int, str]]]:
    """The sections of one whole rocm-smi log, each its lines by title (with their numbers).
    Nothing but blank lines may come before its header or after its end line (another tool's
    text, or two logs run together, is not one output); a log without its end line was cut."""
    sections: dict[str, list[tuple[int, str]]] = {}
    header = whole = False
    current: str | None = None
    for number, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        if whole:
            raise ParseError(f"{tool}: line {number} follows rocm-smi's end line: not one output")
        if _HEADER.match(line):
            if header:
                raise ParseError(f"{tool}: a second rocm-smi header at line {number}: outputs run together")
            header = True
            continue
        if not header:
            raise ParseError(
                f"{tool}: line {number} comes before the 'ROCm System Management Interface' header"
            )
        if _END.match(line):
            whole = True
            current = None
            continue
        if m := _TITLED.match(line):
            current = m["title"]
            if current in sections:
                raise ParseError(f"{tool}: section {current!r} twice: outputs run together")
            sections[current] = []
            continue
        if _PLAIN.match(line):
            current = None
            continue
        if _LOGGING.match(line):
            continue
        if current is None:
            raise ParseError(f"{tool}: line {number} is in no section: {line.strip()[:80]!r}")
        sections[current].append((number, line))
    if not header:
        raise ParseError(f"{tool}: no 'ROCm System Management Interface' header: not rocm-smi's output")
    if not whole:
        raise ParseError(f"{tool}: no 'End of ROCm SMI Log' line: the output was cut")
    return sections


def is_rocm_smi(text: str) -> bool:
    """Whether a text is rocm-smi's (its header or end line), not amd-smi's: a check reading
    either tool tells a handed-in output by it."""
    return any(_HEADER.match(line) or _END.match(line) for line in split_lines(text))


@dataclass(frozen=True)
class RocmGpu:
    """What `rocm-smi --showproductname` (and --showbus, --showserial) says of one GPU."""

    index: int
    series: str | None  # 'Card Series' ('Card series' before ROCm 6): the device's name, or its id
    model: str | None  # 'Card Model': the device or subsystem id (0x74a1)
    sku: str | None  # 'Card SKU' (from the VBIOS part number)
    bus: str | None  # 'PCI Bus' of --showbus
    serial: str | None  # 'Serial Number' of --showserial

    @property
    def names(self) -> tuple[str, ...]:
        """The product names the series gives: pci.ids's bracketed name ('Aqua Vanjaram [Instinct
        MI300A]' -> 'Instinct MI300A'), each of the products one device id is shared by
        ('[Instinct MI250X/MI250]' -> 'Instinct MI250X', 'MI250'), or the whole series ('AMD
        Instinct MI300X'). None for a bare id ('0x738c'): the library knew no name for it
        (https://github.com/ROCm/legacy-rocm-build/issues/1351)."""
        if self.series is None or re.fullmatch(r"0x[0-9A-Fa-f]+", self.series):
            return ()
        m = re.search(r"\[([^\[\]]+)\]\s*$", self.series)
        return tuple(n.strip() for n in m[1].split("/") if n.strip()) if m else (self.series,)


_PRODUCT_KEYS = {
    "card series": "series",
    "card model": "model",
    "card sku": "sku",
    "pci bus": "bus",
    "serial number": "serial",
}


def _keys(
    log: dict[str, list[tuple[int, str]]], titles: tuple[str, ...], tool: str
) -> dict[int, dict[str, str]]:
    """The ``GPU[N] : Key: value`` lines of the titled sections, by GPU then key (lower case)."""
    gpus: dict[int, dict[str, str]] = {}
    for title in titles:
        for number, line in log.get(title, []):
            m = _KEY.match(line)
            if m is None:
                raise ParseError(f"{tool}: line {number} of {title} is not a 'GPU[N] : Key: value' line")
            gpus.setdefault(int(m["index"]), {}).setdefault(m["key"].lower(), m["value"])
    return gpus


@parser
def parse_product(text: str) -> list[RocmGpu]:
    """`rocm-smi --showproductname` (any of --showbus, --showserial beside it): each GPU, in index
    order; a whole log lists every GPU rocm-smi sees. A log without a Product Info section is
    refused (not this output)."""
    tool = "rocm-smi --showproductname"
    log = _log(text, tool)
    if "Product Info" not in log:
        raise ParseError(f"{tool}: no 'Product Info' section: run rocm-smi with --showproductname")
    values = _keys(log, ("Product Info", "PCI Bus ID", "Serial Number"), tool)
    if not values:
        raise ParseError(f"{tool}: the Product Info section lists no GPU")
    gpus = []
    for index in sorted(values):
        fields = {field: values[index].get(key) for key, field in _PRODUCT_KEYS.items()}
        gpus.append(RocmGpu(index, **{k: None if v in (None, "", NA) else v for k, v in fields.items()}))
    return gpus


@dataclass(frozen=True)
class RasBlock:
    """One row of a GPU's RAS INFO table: the block, its ECC state, and its counts when read."""

    name: str  # UMC, SDMA, GFX, MMHUB, ..., XGMI_WAFL
    status: str  # ENABLED or DISABLED
    correctable: int | None
    uncorrectable: int | None


@dataclass(frozen=True)
class GpuRas:
    index: int
    blocks: tuple[RasBlock, ...]


_TABLE = re.compile(r"^GPU\[(?P<index>\d{1,4})\]:\s+RAS INFO\s*$")
# The column heads: 'Correctable Error  Uncorrectable Error' since ROCm 5.5; before it
# 'uncorrectable err  correctable err', over the same cells, correctable first: the heads were
# wrong, not the cells (https://github.com/ROCm/rocm_smi_lib/commit/248c6f79f4011bfecbd2a64c7276c92d1f8af0b8).
_HEADS = re.compile(
    r"^\s*Block\s+Status\s+(?:Correctable Error\s+Uncorrectable Error|uncorrectable err\s+correctable err)\s*$"
)
# A row: the block and its state, then both counts where the library read them (ATHUB, DF and
# others print no count). The states rocm-smi can print are its rsmi_ras_err_stale_machine's,
# upper case; the library returns ENABLED or DISABLED (rsmi_dev_ecc_status_get).
_ROW = re.compile(
    r"^\s*(?P<block>[A-Z][A-Z0-9_]*)\s+(?P<status>[A-Z]+(?: ERROR)?)"
    r"(?:\s+(?P<ce>\d{1,19})\s+(?P<ue>\d{1,19}))?\s*$"
)
_RULE = re.compile(r"^_+\s*$")


@parser
def parse_ras(text: str) -> list[GpuRas]:
    """`rocm-smi --showrasinfo` (all blocks): each GPU's table, in printed order. A table must
    be closed by its rule line before the next starts or the log ends."""
    tool = "rocm-smi --showrasinfo"
    log = _log(text, tool)
    if "RAS Info" not in log:
        raise ParseError(f"{tool}: no 'RAS Info' section: run rocm-smi with --showrasinfo")
    gpus: list[GpuRas] = []
    index: int | None = None
    heads = False
    rows: list[RasBlock] = []

    def close() -> None:
        nonlocal index
        if index is not None:
            gpus.append(GpuRas(index, tuple(rows)))
        index = None

    for number, line in log["RAS Info"]:
        if m := _TABLE.match(line):
            if index is not None:
                raise ParseError(
                    f"{tool}: GPU[{m['index']}]'s table at line {number} before GPU[{index}]'s closed"
                )
            index, heads, rows = int(m["index"]), False, []
            continue
        if index is None:
            raise ParseError(f"{tool}: line {number} is outside a GPU's RAS INFO table")
        if _RULE.match(line):
            close()
            continue
        if _HEADS.match(line):
            heads = True
            continue
        m = _ROW.match(line)
        if m is None or not heads:
            raise ParseError(
                f"{tool}: line {number} is not a row of GPU[{index}]'s table: {line.strip()[:80]!r}"
            )
        count = (int(m["ce"]), int(m["ue"])) if m["ce"] is not None else (None, None)
        rows.append(RasBlock(m["block"], m["status"], *count))
    if index is not None:
        raise ParseError(f"{tool}: GPU[{index}]'s table has no closing rule")
    if not gpus:
        raise ParseError(f"{tool}: the RAS Info section has no GPU table")
    indexes = [g.index for g in gpus]
    if len(set(indexes)) != len(indexes):
        raise ParseError(f"{tool}: a GPU's table appears twice: outputs run together")
    return gpus


# `rocm-smi --showtopo` prints, after the header, one matrix per titled section ('Weight between
# two GPUs', 'Hops between two GPUs', 'Link Type between two GPUs'; --showtopoaccess adds 'Link
# accessibility between two GPUs'), then 'Numa Nodes' key lines (showHwTopology of
# python_smi_tools/rocm_smi.py). A matrix is a row of GPU names, then one row per GPU: its name and
# a cell per GPU ('0' on the diagonal). A link type cell is XGMI or PCIE, XXXX where the library
# could not read it; a weight or hop count may be N/A (ROCm/rocm_smi_lib commit 03fab6b2b63a).
_MATRIX = re.compile(r"^(?P<name>.+?) between two GPUs$")
_GPU_NAME = re.compile(r"^GPU(\d{1,4})$")
LINK_TYPE = "Link Type"
UNREAD = frozenset({"XXXX", NA})  # a cell rocm-smi could not read


@dataclass(frozen=True)
class RocmTopology:
    """`rocm-smi --showtopo`: the GPUs as its matrices list them, and each matrix's cells by
    (row GPU, column GPU), under its name ('Weight', 'Hops', 'Link Type', 'Link accessibility')."""

    gpus: tuple[int, ...]
    tables: dict[str, dict[tuple[int, int], str]]

    def cell(self, table: str, a: int, b: int) -> str | None:
        return self.tables.get(table, {}).get((a, b))


def _matrix(name: str, lines: list[tuple[int, str]], tool: str) -> tuple[tuple[int, ...], dict]:
    """One matrix: its header of GPU names, then a row per GPU with a cell per column, rows in the
    header's order; a matrix with a row missing or short was not printed whole."""
    if not lines:
        raise ParseError(f"{tool}: the {name!r} table is empty")
    number, header = lines[0]
    names = header.split()
    if not names or not all(_GPU_NAME.match(n) for n in names):
        raise ParseError(f"{tool}: line {number}: the {name!r} table has no header of GPU names")
    gpus = tuple(int(n[3:]) for n in names)
    if len(set(gpus)) != len(gpus):
        raise ParseError(f"{tool}: line {number}: a GPU twice in the {name!r} header")
    cells: dict[tuple[int, int], str] = {}
    rows = lines[1:]
    for (number, line), gpu in zip(rows, gpus, strict=False):
        row = line.split()
        if len(row) != len(gpus) + 1 or row[0] != f"GPU{gpu}":
            raise ParseError(
                f"{tool}: line {number} is not GPU{gpu}'s row of {name!r}: {line.strip()[:80]!r}"
            )
        cells.update({(gpu, col): value for col, value in zip(gpus, row[1:], strict=True)})
    if len(rows) != len(gpus):
        raise ParseError(f"{tool}: the {name!r} table has {len(rows)} row(s) for {len(gpus)} GPUs")
    return gpus, cells


@parser
def parse_showtopo(text: str) -> RocmTopology:
    """`rocm-smi --showtopo` (or --showtopotype, any other --showtopo* beside it): every matrix
    it printed, whole. A log without the Link Type table is refused (not this output), and so is
    one whose matrices list other GPUs than each other."""
    tool = "rocm-smi --showtopo"
    log = _log(text, tool)
    tables: dict[str, dict[tuple[int, int], str]] = {}
    order: tuple[int, ...] | None = None
    for title, lines in log.items():
        m = _MATRIX.match(title)
        if m is None:
            continue  # 'Numa Nodes', or another option's section: not read here
        gpus, cells = _matrix(title, lines, tool)
        if order is not None and gpus != order:
            raise ParseError(f"{tool}: the {title!r} table lists other GPUs than the first table")
        order = gpus
        tables[m["name"]] = cells
    if LINK_TYPE not in tables or order is None:
        raise ParseError(f"{tool}: no 'Link Type between two GPUs' table: run rocm-smi with --showtopo")
    return RocmTopology(order, tables)
