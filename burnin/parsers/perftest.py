"""perftest bandwidth tests (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw``): the text report and
the ``--out_json`` file.

Text layout (linux-rdma/perftest): an optional server banner (``* Waiting for client to connect...
*``), a title line (``RDMA_Write BW Test``, ``RDMA_Write Bidirectional BW Test``), header pairs
``key : value`` (two per line, tab-separated), ``local address:`` / ``remote address:`` lines, then
a result table whose header names the unit (``BW average[Gb/sec]`` with ``--report_gbits``, else
``[MiB/sec]``, or ``[MB/sec]`` on older releases; both are 2^20 bytes per second). Noise such as
``Conflicting CPU frequency values detected`` sits inside the table; an interleaved server+client
log holds two reports. Error lines (``Couldn't connect to host:port``, ``Completion with error``,
`` Port number 1 state is Down``) are collected in ``problems``; ``classify_problem`` says which
of them are the link's fault and which only mean the test could not run.

The ``--out_json`` file holds ``test_info`` and ``results`` (``MsgSize``, ``n_iterations``,
``BW_peak``, ``BW_average``, ``MsgRate``) without a unit: the caller knows whether it asked for
``--report_gbits``. Older perftest releases wrote it with unquoted values and trailing commas;
those are read too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from burnin.parsers._common import MAX_LINK_GBPS, clean, load_json, number, parser, split_lines, to_int
from burnin.parsers.errors import ParseError

GBITS = "Gb/sec"
# perftest's MB/sec and MiB/sec are both 0x100000 bytes per second (format_factor in perftest).
_UNIT_TO_GBPS = {GBITS: 1.0, "MiB/sec": 1048576 * 8 / 1e9, "MB/sec": 1048576 * 8 / 1e9}


@dataclass(frozen=True)
class BwRow:
    size: int  # bytes per message
    iterations: int
    bw_peak: float | None  # in the report's unit; 0.0 in duration mode (-D) where peak is not measured
    bw_average: float | None  # None: the row was cut short (a partial capture)
    msg_rate_mpps: float | None


@dataclass(frozen=True)
class PerftestReport:
    test: str | None  # 'RDMA_Write BW Test', 'RDMA_Write Bidirectional BW Test' (JSON: underscores)
    role: str | None  # 'server' (it printed the wait banner), else None (client, or not told)
    settings: dict[str, str] = field(default_factory=dict)  # header pairs as printed: 'Device' -> 'mlx5_0'
    unit: str | None = None  # 'Gb/sec' | 'MiB/sec' | 'MB/sec'
    rows: tuple[BwRow, ...] = ()
    peak_measured: bool = True  # False after "WARNING: BW peak won't be measured in this run."
    local_lid: int | None = None
    remote_lid: int | None = None

    @property
    def device(self) -> str | None:
        return self.settings.get("Device")

    @property
    def link_type(self) -> str | None:
        return self.settings.get("Link type") or self.settings.get("Link_type")

    @property
    def bidirectional(self) -> bool:
        return bool(self.test) and "bidirectional" in (self.test or "").lower()

    @property
    def complete_rows(self) -> tuple[BwRow, ...]:
        return tuple(r for r in self.rows if r.bw_average is not None)

    def average_gbps(self) -> float | None:
        """BW average of the largest message size, in Gb/s (a bidirectional test reports the sum
        of both directions); None when no complete row or an unknown unit."""
        rows = self.complete_rows
        factor = _UNIT_TO_GBPS.get(self.unit or "")
        if not rows or factor is None:
            return None
        best = max(rows, key=lambda r: r.size)
        return round(float(best.bw_average) * factor, 4)  # type: ignore[arg-type]


@dataclass(frozen=True)
class PerftestOutput:
    reports: tuple[PerftestReport, ...]
    problems: tuple[str, ...] = ()  # error lines, stripped, in order
    # With --use_cuda (GPUDirect RDMA): the GPU whose memory perftest loaded ('Picking device No. 0',
    # '[pid = N, dev = 0] device name = [...]'), and whether it went through DMA-BUF
    # (--use_cuda_dmabuf: 'using DMA-BUF for GPU buffer address at ...'). None/False: host memory.
    cuda_device: int | None = None
    cuda_dmabuf: bool = False

    def report(self) -> PerftestReport | None:
        """The report with a result, else the first one (None when there is none)."""
        with_rows = [r for r in self.reports if r.complete_rows]
        return with_rows[0] if with_rows else (self.reports[0] if self.reports else None)


# Error lines of perftest (perftest_message_formats_from_source.txt) and what they mean.
# "link": the port or the fabric between the two ends failed the test (a finding against them);
# "run": the test could not run (no server, no resources, wrong device): nothing is measured.
_PROBLEMS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^Port number \d+ state is .*"), "link"),
    (re.compile(r"^Completion with error"), "link"),
    (re.compile(r"^Failed status\b.*"), "link"),
    (re.compile(r"^Couldn't connect to \S+"), "run"),
    (re.compile(r"^Couldn't listen to port"), "run"),
    (re.compile(r"^Failed to exchange data between server and clients"), "run"),
    (re.compile(r"^(Unable|Failed) to create QP"), "run"),
    (re.compile(r"^Couldn't (create IB resources|get context for the device|allocate MR)"), "run"),
    (re.compile(r"^Couldn't post send"), "link"),
    (re.compile(r"^Failed to modify QP"), "run"),
    (re.compile(r"^IB device \S+ not found"), "run"),
    (re.compile(r"^Unable to find the Infiniband/RoCE device"), "run"),
    (re.compile(r"^ethernet_read_keys: Couldn't read remote address"), "run"),
)


def classify_problem(line: str) -> str:
    """'link' (the port/fabric failed the test), 'run' (the test could not run) or '' (not an
    error line perftest prints)."""
    text = line.strip()
    for pattern, kind in _PROBLEMS:
        if pattern.match(text):
            return kind
    return ""


_TITLE_RE = re.compile(r"^\s{2,}(\S(?:.*\S)?\s+(?:BW|Latency) Test)\s*$")
_ADDR_RE = re.compile(r"^\s*(local|remote) address:\s*LID\s+(\S+)")
_HEADER_RE = re.compile(r"#bytes\s+.*BW average\[([^\]]+)\]")
_ROW_RE = re.compile(r"^\s*(\d+)\s+(\d+)((?:\s+[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)*)\s*$")
_DASHES_RE = re.compile(r"^-{20,}\s*$")
_CUDA_DEVICE_RE = re.compile(r"^(?:Picking device No\.\s*(\d+)|\[pid = \d+, dev = (\d+)\] device name)")


class _Block:
    def __init__(self, title: str, role: str | None, peak: bool) -> None:
        self.title, self.role, self.peak = title, role, peak
        self.settings: dict[str, str] = {}
        self.unit: str | None = None
        self.rows: list[BwRow] = []
        self.in_table = False
        self.lids: dict[str, int | None] = {}

    def report(self) -> PerftestReport:
        return PerftestReport(
            test=self.title,
            role=self.role,
            settings=dict(self.settings),
            unit=self.unit,
            rows=tuple(self.rows),
            peak_measured=self.peak,
            local_lid=self.lids.get("local"),
            remote_lid=self.lids.get("remote"),
        )


def _pairs(line: str) -> list[tuple[str, str]]:
    """' Dual-port       : OFF\t\tDevice         : mlx5_0' -> [('Dual-port', 'OFF'), ('Device', 'mlx5_0')].

    Pairs are separated by tabs in current releases and by runs of spaces in older ones; a
    value never holds two spaces in a row, so the text between two colons splits into the
    value of one pair and the key of the next at its first run of 2+ spaces (or tab)."""
    parts = line.split(":")
    if len(parts) < 2:
        return []
    pairs = []
    key = parts[0].strip()
    for i, part in enumerate(parts[1:], start=1):
        if i == len(parts) - 1:
            value, next_key = part.strip(), ""
        else:
            chunks = re.split(r"\t+|\s{2,}", part.strip(), maxsplit=1)
            value, next_key = chunks[0].strip(), (chunks[1].strip() if len(chunks) > 1 else "")
        if key and re.fullmatch(r"[A-Za-z][\w .*/\-]*", key) and clean(value) is not None:
            pairs.append((key, value))
        key = next_key
    return pairs


def _row(match: re.Match[str], unit: str | None) -> BwRow:
    # peak and average in the table's unit, then the message rate (Mpps); columns past those ignored
    tops = (_bw_max(unit), _bw_max(unit), None)
    figures = match.group(3).split()[:3]
    numbers = [number(x, "perftest result row", maximum=tops[i]) for i, x in enumerate(figures)]
    numbers += [None] * (3 - len(numbers))  # type: ignore[list-item]
    peak, average, rate = numbers[:3]
    return BwRow(int(match.group(1)), int(match.group(2)), peak, average, rate)


@parser
def parse_perftest(text: str) -> PerftestOutput:
    """The text a perftest bandwidth test printed (stdout, stderr, or both interleaved)."""
    reports: list[PerftestReport] = []
    problems: list[str] = []
    block: _Block | None = None
    pending_role: str | None = None
    pending_peak = True
    cuda_device: int | None = None
    dmabuf = False

    def close() -> None:
        nonlocal block
        if block is not None and "BW" in block.title.split():
            reports.append(block.report())
        block = None

    for line in split_lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if classify_problem(stripped):
            problems.append(stripped)
            continue
        if m := _CUDA_DEVICE_RE.match(stripped):
            cuda_device = int(m.group(1) or m.group(2))
            continue
        if stripped.startswith("using DMA-BUF for GPU buffer"):
            dmabuf = True
            continue
        if "Waiting for client to connect" in stripped:
            close()
            pending_role = "server"
            continue
        if stripped.startswith("WARNING: BW peak won't be measured"):
            close()
            pending_peak = False
            continue
        if m := _TITLE_RE.match(line):
            close()
            block = _Block(m.group(1).strip(), pending_role, pending_peak)
            pending_role, pending_peak = None, True
            continue
        if block is None or stripped.startswith("Conflicting CPU frequency"):
            continue
        if m := _HEADER_RE.search(line):
            block.unit, block.in_table = m.group(1).strip(), True
            continue
        if _DASHES_RE.match(stripped):
            if block.in_table:
                block.in_table = False
            continue
        if m := _ADDR_RE.match(line):
            block.lids[m.group(1)] = to_int(m.group(2))
            continue
        if block.in_table:
            if m := _ROW_RE.match(line):
                block.rows.append(_row(m, block.unit))
            continue
        if not block.rows and block.unit is None and not stripped.startswith("GID:"):
            for key, value in _pairs(line):
                block.settings.setdefault(key, value)
    close()
    if not reports and not problems:
        raise ParseError("not perftest bandwidth output: no '... BW Test' report and no perftest error line")
    return PerftestOutput(tuple(reports), tuple(problems), cuda_device, dmabuf)


def _loose_json(text: str) -> Any:
    """Older perftest --out_json files: bare string values and trailing commas."""
    parts = re.split(r'("(?:[^"\\]|\\.)*")', text)
    fixed = []
    for i, part in enumerate(parts):
        if i % 2:  # a string literal: as is
            fixed.append(part)
            continue
        part = re.sub(
            r"(?<![\w.])([A-Za-z_][\w./*\[\]-]*)",
            lambda m: m.group(1) if m.group(1) in ("true", "false", "null") else f'"{m.group(1)}"',
            part,
        )
        fixed.append(re.sub(r",(\s*[}\]])", r"\1", part))
    return load_json("".join(fixed))


def _bw_max(unit: str | None) -> float:
    """The absurd bound of a bandwidth in ``unit`` (MAX_LINK_GBPS; Gb/s when the unit is unknown)."""
    return MAX_LINK_GBPS / _UNIT_TO_GBPS.get(unit or "", 1.0)


def _field(item: dict, key: str, maximum: float | None = None) -> float | None:
    """A number of a --out_json result: None when absent, a ParseError when not a real figure."""
    value = item.get(key)
    return None if value is None else number(value, f"perftest --out_json {key}", maximum=maximum)


@parser
def parse_perftest_json(text: str, unit: str = GBITS) -> PerftestReport:
    """A perftest ``--out_json`` file. ``unit`` is what the run was asked for: ``Gb/sec`` with
    ``--report_gbits`` (the file itself does not say), else ``MiB/sec``."""
    if unit not in _UNIT_TO_GBPS:
        raise ParseError(f"unknown perftest unit {unit!r}")
    body = text.strip()
    if not body.startswith("{"):
        raise ParseError("not a perftest --out_json document: it does not start with '{'")
    try:
        doc = load_json(body)
    except ParseError as exc:  # NaN, Infinity, 1e999
        raise ParseError(f"perftest --out_json: {exc}") from exc
    except ValueError:
        try:
            doc = _loose_json(body)
        except ValueError as exc:
            raise ParseError(f"perftest --out_json: not JSON even leniently read: {exc}") from exc
    if not isinstance(doc, dict):
        raise ParseError("perftest --out_json: the document is not an object")
    info = doc.get("test_info")
    results = doc.get("results")
    if isinstance(results, dict):
        results = [results]
    if not isinstance(info, dict) or not isinstance(results, list) or not results:
        raise ParseError("perftest --out_json: no 'test_info' object or no 'results'")
    rows = []
    for item in results:
        if not isinstance(item, dict):
            raise ParseError("perftest --out_json: a 'results' entry is not an object")
        size, iters = _field(item, "MsgSize"), _field(item, "n_iterations")
        if size is None or iters is None:
            raise ParseError("perftest --out_json: a result without MsgSize or n_iterations")
        rows.append(
            BwRow(
                int(size),
                int(iters),
                _field(item, "BW_peak", _bw_max(unit)),
                _field(item, "BW_average", _bw_max(unit)),
                _field(item, "MsgRate"),
            )
        )
    settings = {str(k): str(v) for k, v in info.items() if not isinstance(v, (dict, list))}
    test = settings.get("test")
    return PerftestReport(
        test=test,
        role=None,
        settings=settings,
        unit=unit,
        rows=tuple(rows),
        peak_measured=True,
    )
