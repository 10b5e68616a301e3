"""nccl-tests output (``all_reduce_perf``, ``all_gather_perf``, ``alltoall_perf``, ...): text and ``-J`` JSON.

Drift handled: the old table (``error`` column = max deviation, no ``redop``/``root`` columns,
blank ``redop`` cells in alltoall) and the new one (``redop root ... #wrong`` twice, optional
per-iteration ``i_min i_max i_p99 i_cv%`` columns and a trailing timestamp); footers with or
without the leading ``#``; ``NCCL INFO``/``NCCL WARN`` debug lines interleaved with table rows;
the ``-J`` JSON file (format version 2, written by nccl-tests' util.cu).

An output without the ``Avg bus bandwidth`` footer is returned with ``complete=False``: the test
died, was killed by a watchdog, or is still running. The parser never decides which: the
runner knows (exit status, timeout) and the judge (burnin.checks.nccl) combines both.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from burnin.parsers._common import MAX_BUS_GBYTES, load_json, number, parser, split_lines
from burnin.parsers.errors import ParseError


@dataclass(frozen=True)
class NcclRank:
    """One ``#  Rank  3 Group  0 Pid 1234 on node07 device  3 [0000:5d:00] NVIDIA H100 80GB HBM3`` line."""

    rank: int
    host: str
    device: int
    pid: int | None = None
    group: int | None = None  # absent from old versions
    bus_id: str | None = None  # as printed: '0000:5d:00' (new) or '0x5d' (old)
    device_name: str = ""


@dataclass(frozen=True)
class NcclSide:
    """The out-of-place or the in-place half of a table row."""

    time_us: float
    algbw_gbps: float  # GB/s (1e9 bytes per second), as nccl-tests prints
    busbw_gbps: float
    wrong: int | None = None  # '#wrong' column (new format); None when validation is off ('N/A')
    error: float | None = None  # old 'error' column: max deviation, not a count


@dataclass(frozen=True)
class NcclRow:
    size: int  # bytes
    count: int  # elements
    type: str  # 'float', 'half', 'bfloat16', ...
    redop: str | None  # 'sum', 'none'...; None when the column is absent or blank
    root: int | None  # -1 for rootless collectives; None when absent
    out_of_place: NcclSide | None
    in_place: NcclSide | None

    @property
    def sides(self) -> tuple[NcclSide, ...]:
        return tuple(s for s in (self.out_of_place, self.in_place) if s is not None)

    @property
    def busbw_gbps(self) -> float | None:
        """Mean bus bandwidth of the row's halves (out-of-place and in-place)."""
        sides = self.sides
        return sum(s.busbw_gbps for s in sides) / len(sides) if sides else None

    @property
    def wrong(self) -> int | None:
        """Wrong elements in the row (both halves); None when validation is off."""
        counts = [s.wrong for s in self.sides if s.wrong is not None]
        return sum(counts) if counts else None


@dataclass(frozen=True)
class NcclWarn:
    """``host:pid:tid [dev] file.cc:123 NCCL WARN message``."""

    host: str
    message: str
    pid: int | None = None
    device: str | None = None
    source: str | None = None  # 'graph/search.cc:1135'
    line: str = ""


# NcclError.kind values
ERROR_KINDS = ("cuda", "nccl", "timeout", "trace", "usage", "launcher", "other")


@dataclass(frozen=True)
class NcclError:
    """A failure line: ``host: Test NCCL failure common.cu:392 '...'``, a timeout, an MPI/srun error."""

    kind: str  # one of ERROR_KINDS; 'trace' = the ' .. host pid N: Test failure file:line' stack
    message: str
    host: str | None = None
    where: str | None = None  # 'common.cu:392'
    line: str = ""


# Bytes per element of nccl-tests' type names (its -d option).
_TYPE_BYTES = {
    "int8": 1,
    "char": 1,
    "uint8": 1,
    "int32": 4,
    "int": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "f8e4m3": 1,
    "f8e5m2": 1,
}


@dataclass(frozen=True)
class NcclTestRun:
    format: str  # 'text' or 'json'
    collective: str | None = None  # 'all_reduce_perf' when the output says (new versions, JSON args)
    tests_version: str | None = None  # nccl-tests version ('2.19.6'); 'rccl-tests develop:448c4c7' on AMD
    nccl_version: str | None = None  # '2.26.2+cuda12.8'; 'RCCL 2.22.3-develop:f5b15f2' on AMD
    n_threads: int | None = None
    n_gpus: int | None = None  # GPUs per process
    min_bytes: int | None = None
    max_bytes: int | None = None
    warmup_iters: int | None = None
    iters: int | None = None
    agg_iters: int | None = None
    validation: bool | None = None  # None when the header is missing and the rows do not tell
    ranks: tuple[NcclRank, ...] = ()
    rows: tuple[NcclRow, ...] = ()
    out_of_bounds: int | None = None  # '# Out of bounds values : N OK|FAILED'
    out_of_bounds_failed: bool | None = None
    avg_busbw_gbps: float | None = None  # mean over ALL sizes: never gate on it
    avg_busbw_verdict: str | None = None  # 'OK'/'FAILED' when NCCL_TESTS_MIN_BW was set
    warns: tuple[NcclWarn, ...] = ()
    errors: tuple[NcclError, ...] = ()
    complete: bool = False  # the 'Avg bus bandwidth' footer was printed: the test ran to its end

    @property
    def is_all_reduce(self) -> bool | None:
        """Whether this is an all_reduce run (what the profile's busbw floors are measured with):
        from the collective the output names, else from its rows. all_reduce has a reduction
        ('sum') and prints the whole buffer's element count (size = count x type size); all_gather
        and alltoall print one rank's share (size = count x type size x ranks) or no reduction
        ('none'). None when neither tells (https://github.com/NVIDIA/nccl-tests, doc/PERFORMANCE.md)."""
        if self.collective:
            return self.collective.rsplit("/", 1)[-1].startswith("all_reduce")
        rows = [r for r in self.rows if r.size > 0 and r.count > 0]
        if any(r.redop == "none" for r in rows):
            return False
        width = _TYPE_BYTES.get(rows[-1].type) if rows else None
        ranks = len(self.ranks)
        if width is None:
            return None
        if all(r.size == r.count * width for r in rows):
            return True
        if ranks > 1 and all(r.size == r.count * width * ranks for r in rows):
            return False
        return None

    @property
    def hosts(self) -> tuple[str, ...]:
        """Hosts of the ranks, in rank order, each once."""
        return tuple(dict.fromkeys(r.host for r in sorted(self.ranks, key=lambda r: r.rank)))

    def ranks_on(self, host: str) -> tuple[int, ...]:
        return tuple(sorted(r.rank for r in self.ranks if r.host == host))

    @property
    def wrong(self) -> int | None:
        """Wrong elements over every row; None when no row reports a count."""
        counts = [r.wrong for r in self.rows if r.wrong is not None]
        return sum(counts) if counts else None

    def cycles(self) -> tuple[tuple[NcclRow, ...], ...]:
        """The rows split into sweeps (``-N`` repeats the size sweep: a new one starts when the size drops)."""
        out: list[list[NcclRow]] = []
        for row in self.rows:
            if not out or row.size < out[-1][-1].size:
                out.append([])
            out[-1].append(row)
        return tuple(tuple(c) for c in out)

    def largest_rows(self, n: int = 2, rows: tuple[NcclRow, ...] | None = None) -> tuple[NcclRow, ...]:
        """The rows of the ``n`` largest distinct message sizes (of ``rows``, default all rows)."""
        rows = self.rows if rows is None else rows
        sizes = sorted({r.size for r in rows}, reverse=True)[: max(n, 1)]
        return tuple(r for r in rows if r.size in sizes)


# --- text -----------------------------------------------------------------------------------

_HEADER_RE = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)")
_HEADER_KV_RE = re.compile(r"(warmup iters|agg iters|iters|validation):\s*(\d+)")
_RANK_RE = re.compile(
    r"^#?\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+(?P<group>\d+)\s+)?Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)"
    r"\s+device\s+(?P<dev>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*?)\s*$"
)
_TESTS_VERSION_RE = re.compile(r"^#\s*nccl-tests version\s+(\S+)")
_NCCL_VERSION_RE = re.compile(r"\bNCCL version\s+(\d+\.\d+\.\d+\S*)")
_RCCL_RE = re.compile(r"^(?P<what>rccl-tests: Version|RCCL version\s*:)\s*(?P<v>\S+)")
_STARTING_RE = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_OOB_RE = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?", re.IGNORECASE)
_AVG_RE = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?", re.IGNORECASE)
_WARN_RE = re.compile(
    r"^(?P<host>[^\s:]+):(?P<pid>\d+):\d+\s+\[(?P<dev>[^\]]*)\]\s+(?:(?P<src>\S+:\d+)\s+)?NCCL WARN\s?(?P<msg>.*)$"
)
_HOST = r"(?P<host>[A-Za-z0-9][A-Za-z0-9._-]*)"
_FAILURE_RE = re.compile(
    r"^" + _HOST + r": Test (?P<kind>CUDA|NCCL) failure (?P<where>\S+) '(?P<msg>.*)'?\s*$"
)
_TIMEOUT_RE = re.compile(r"^" + _HOST + r": Test timeout \((?P<secs>\d+)s\)\s*(?P<where>\S+)?")
_TRACE_RE = re.compile(r"^\s*\.\.\s+" + _HOST + r" pid (?P<pid>\d+): Test failure (?P<where>\S+)")
_HASH_ERROR_RE = re.compile(r"^#\s*error:\s*(?P<msg>.+)$")
_LAUNCHER_RES = (
    re.compile(
        r"mpirun noticed that process rank (?P<rank>\d+) with PID \d+ on node (?P<host>\S+) (?P<msg>.*)"
    ),
    re.compile(r"^srun: error: (?P<host>[^\s:]+): tasks? [\d,\-]+: (?P<msg>.+)$"),
    re.compile(r"^ssh: connect to host (?P<host>\S+) port \d+: (?P<msg>.+)$"),
    re.compile(r"^(?P<msg>ORTE was unable to reliably start.*|.*process returned\s*a non-zero exit code.*)$"),
)
_PROGRAM_RE = re.compile(
    r"(?:^|[/\s])((?:all_reduce|all_gather|alltoallv?|broadcast|reduce_scatter|reduce|sendrecv|scatter|gather"
    r"|hypercube)_perf)\b"
)
_TIMESTAMP = (re.compile(r"^\d{4}-\d{2}-\d{2}$"), re.compile(r"^\d{2}:\d{2}:\d{2}$"))
_TYPE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_INT_RE = re.compile(r"^-?\d+$")


@dataclass
class _Columns:
    per_side: int = 4  # time algbw busbw wrong (+ i_min i_max i_p99 i_cv% with per-iteration timing)
    wrong_is_count: bool | None = None  # '#wrong' (True) or 'error' (False); None: no header seen


def _table_header(body: str) -> _Columns | None:
    words = body.split()
    if len(words) < 4 or words[0] != "size" or "busbw" not in words:
        return None
    return _Columns(per_side=8 if "i_min" in words else 4, wrong_is_count="#wrong" in words)


def _num(token: str, what: str = "nccl-tests figure", maximum: float | None = None) -> float | None:
    """None for a token that is no number (the line is not a result row); a number that is
    not finite, negative or absurd (over ``maximum``) is a ParseError."""
    try:
        float(token)
    except ValueError:
        return None
    return number(token, what, maximum=maximum)


def _side(tokens: list[str], cols: _Columns) -> NcclSide | None:
    time_us = _num(tokens[0], "nccl-tests time")
    algbw = _num(tokens[1], "nccl-tests algbw", MAX_BUS_GBYTES)
    busbw = _num(tokens[2], "nccl-tests busbw", MAX_BUS_GBYTES)
    if time_us is None or algbw is None or busbw is None:
        return None
    last = tokens[3]
    if last.upper() == "N/A":
        return NcclSide(time_us, algbw, busbw)
    value = _num(last)
    if value is None:
        return None
    count_column = cols.wrong_is_count if cols.wrong_is_count is not None else bool(_INT_RE.match(last))
    if count_column:  # '%6g' of a count: '0', '12', '1.23457e+06'
        return NcclSide(time_us, algbw, busbw, wrong=int(round(value)))
    return NcclSide(time_us, algbw, busbw, error=value)


def _row(line: str, cols: _Columns) -> NcclRow | None:
    tokens = line.split()
    if len(tokens) < 3 or not _INT_RE.match(tokens[0]) or not _INT_RE.match(tokens[1]):
        return None
    if not _TYPE_RE.match(tokens[2]):
        return None
    rest = tokens[3:]
    if len(rest) >= 2 and _TIMESTAMP[0].match(rest[-2]) and _TIMESTAMP[1].match(rest[-1]):
        rest = rest[:-2]
    width = 2 * cols.per_side
    if len(rest) < width or len(rest) > width + 2:
        return None
    prefix, metrics = rest[: len(rest) - width], rest[len(rest) - width :]
    redop: str | None = None
    root: int | None = None
    if len(prefix) == 2:
        if not _INT_RE.match(prefix[1]) or _INT_RE.match(prefix[0]):
            return None
        redop, root = prefix[0], int(prefix[1])
    elif len(prefix) == 1:
        if _INT_RE.match(prefix[0]):
            root = int(prefix[0])
        else:
            redop = prefix[0]
    oop = _side(metrics[:4], cols)
    inp = _side(metrics[cols.per_side : cols.per_side + 4], cols)
    if oop is None or inp is None:
        return None
    return NcclRow(int(tokens[0]), int(tokens[1]), tokens[2], redop, root, oop, inp)


def is_result_row(line: str) -> bool:
    """Whether ``line`` is a result row of nccl-tests' text table (with or without the
    per-iteration timing columns)."""
    return any(_row(line, _Columns(per_side=width)) is not None for width in (4, 8))


def _launcher_error(line: str) -> NcclError | None:
    for regex in _LAUNCHER_RES:
        m = regex.search(line)
        if m:
            host = m.groupdict().get("host")
            return NcclError("launcher", line.strip(), host=host, line=line.strip())
    return None


def _parse_text(text: str) -> NcclTestRun:
    fields: dict[str, Any] = {}
    cols = _Columns()
    ranks: list[NcclRank] = []
    rows: list[NcclRow] = []
    warns: list[NcclWarn] = []
    errors: list[NcclError] = []
    seen_marker = False  # anything at all that only nccl-tests prints
    for raw in split_lines(text):
        line = raw.rstrip()
        if not line.strip():
            continue
        if m := _HEADER_RE.match(line):
            if "n_threads" in fields:
                raise ParseError("nccl-tests: two runs in one output (two '# nThread' headers)")
            fields.update(
                n_threads=int(m.group(1)),
                n_gpus=int(m.group(2)),
                min_bytes=int(m.group(3)),
                max_bytes=int(m.group(4)),
            )
            for key, value in _HEADER_KV_RE.findall(line[m.end() :]):
                fields[key.replace(" ", "_")] = int(value)
            seen_marker = True
            continue
        if m := _RANK_RE.match(line):
            ranks.append(
                NcclRank(
                    rank=int(m["rank"]),
                    host=m["host"],
                    device=int(m["dev"]),
                    pid=int(m["pid"]),
                    group=int(m["group"]) if m["group"] is not None else None,
                    bus_id=m["bus"].strip() or None,
                    device_name=m["name"],
                )
            )
            seen_marker = True
            continue
        if m := _WARN_RE.match(line.strip()):
            warns.append(
                NcclWarn(m["host"], m["msg"].strip(), int(m["pid"]), m["dev"], m["src"], line.strip())
            )
            continue
        if m := _RCCL_RE.match(line):  # github.com/ROCm/rccl-tests: 'rccl-tests develop:X', 'RCCL 2.22.3'
            key = "tests_version" if m["what"].startswith("rccl") else "nccl_version"
            fields[key], seen_marker = f"{m['what'].split()[0].rstrip(':')} {m['v']}", True
            continue
        if m := _NCCL_VERSION_RE.search(line):
            fields.setdefault("nccl_version", m.group(1))
            continue
        if m := _TESTS_VERSION_RE.match(line):
            fields["tests_version"] = m.group(1)
            seen_marker = True
            continue
        if m := _STARTING_RE.match(line):
            fields["collective"] = m.group(1)
            seen_marker = True
            continue
        if m := _OOB_RE.match(line):
            fields["out_of_bounds"] = int(m.group(1))
            fields["out_of_bounds_failed"] = (m.group(2) or "").upper() == "FAILED" or int(m.group(1)) > 0
            seen_marker = True
            continue
        if m := _AVG_RE.match(line):
            fields["avg_busbw_gbps"] = _num(m.group(1), "nccl-tests average busbw", MAX_BUS_GBYTES)
            fields["avg_busbw_verdict"] = m.group(2).upper() if m.group(2) else None
            fields["complete"] = True
            seen_marker = True
            continue
        if m := _FAILURE_RE.match(line.strip()):
            kind = m["kind"].lower()
            message = m["msg"].rstrip("'").strip().removesuffix("/").strip()  # '<error> / <last error>'
            errors.append(NcclError(kind, message, m["host"], m["where"], line.strip()))
            seen_marker = True
            continue
        if m := _TIMEOUT_RE.match(line.strip()):
            msg = f"test timeout ({m['secs']} s)"
            errors.append(NcclError("timeout", msg, m["host"], m["where"], line.strip()))
            seen_marker = True
            continue
        if m := _TRACE_RE.match(line):
            errors.append(NcclError("trace", "test failure", m["host"], m["where"], line.strip()))
            seen_marker = True
            continue
        if m := _HASH_ERROR_RE.match(line):
            errors.append(NcclError("nccl", m["msg"].strip(), line=line.strip()))
            continue
        if line.startswith("Invalid number of GPUs"):
            errors.append(NcclError("usage", line.strip(), line=line.strip()))
            continue
        body = line.lstrip("#").strip()
        header = _table_header(body)
        if header is not None:
            cols = header
            seen_marker = True
            continue
        if not line.lstrip().startswith("#") and (row := _row(line, cols)) is not None:
            rows.append(row)
            seen_marker = True
            continue
        if err := _launcher_error(line):
            errors.append(err)
            continue
        if not line.startswith("#") and (m := _PROGRAM_RE.search(line)):
            fields.setdefault("program", m.group(1))  # the echoed command line: a weak hint
    if not seen_marker and not errors:
        raise ParseError("not nccl-tests output: no header, device, table or footer line")
    program = fields.pop("program", None)
    if "collective" not in fields and program:
        fields["collective"] = program
    validation: bool | None = None
    if "validation" in fields:
        validation = bool(fields.pop("validation"))
    elif rows:
        validation = any(s.wrong is not None or s.error is not None for r in rows for s in r.sides)
    return NcclTestRun(
        format="text",
        validation=validation,
        ranks=tuple(ranks),
        rows=tuple(rows),
        warns=tuple(warns),
        errors=tuple(errors),
        **{k: v for k, v in fields.items() if k in _RUN_FIELDS},
    )


_RUN_FIELDS = {
    "collective",
    "tests_version",
    "nccl_version",
    "n_threads",
    "n_gpus",
    "min_bytes",
    "max_bytes",
    "warmup_iters",
    "iters",
    "agg_iters",
    "out_of_bounds",
    "out_of_bounds_failed",
    "avg_busbw_gbps",
    "avg_busbw_verdict",
    "complete",
}


# --- JSON (-J file.json, format version 2) --------------------------------------------------


def _json_num(value: Any, what: str = "nccl-tests JSON figure", maximum: float | None = None) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    return _num(str(value), what, maximum)


def _json_int(value: Any) -> int | None:
    figure = _json_num(value)
    return int(figure) if figure is not None else None


def _json_bool(value: Any) -> bool | None:
    """nccl-tests writes booleans as the strings "true"/"false" (and "unchecked")."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _json_side(value: Any, validation: bool | None) -> NcclSide | None:
    if not isinstance(value, dict):
        return None
    time_us = _json_num(value.get("time", value.get("cpu_time")))
    algbw = _json_num(value.get("alg_bw"), "nccl-tests JSON alg_bw", MAX_BUS_GBYTES)
    busbw = _json_num(value.get("bus_bw"), "nccl-tests JSON bus_bw", MAX_BUS_GBYTES)
    if time_us is None or algbw is None or busbw is None:
        raise ParseError(f"nccl-tests JSON: a result half lacks time/alg_bw/bus_bw: {value!r}"[:200])
    wrong = _json_int(value.get("nwrong"))
    return NcclSide(time_us, algbw, busbw, wrong=wrong if validation is not False else None)


def _nccl_version(code: Any) -> str | None:
    if isinstance(code, bool) or not isinstance(code, int) or code <= 0:
        return None
    if code >= 10000:  # NCCL >= 2.9: major*10000 + minor*100 + patch
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _parse_json(text: str) -> NcclTestRun:
    try:
        doc = load_json(text)
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"nccl-tests JSON does not decode (cut short? the run may not have ended): {exc}"
        ) from exc
    if not isinstance(doc, dict) or "results" not in doc and "config" not in doc:
        raise ParseError("not nccl-tests JSON: no 'config' or 'results' key")
    config = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    validation_raw = config.get("validation")
    validation = bool(validation_raw) if isinstance(validation_raw, int) else None
    ranks = []
    for dev in config.get("devices") or []:
        if not isinstance(dev, dict) or _json_int(dev.get("rank")) is None:
            raise ParseError("nccl-tests JSON: a device entry without a rank")
        ranks.append(
            NcclRank(
                rank=_json_int(dev.get("rank")) or 0,
                host=str(dev.get("hostname", "")),
                device=_json_int(dev.get("device")) or 0,
                pid=_json_int(dev.get("pid")),
                group=_json_int(dev.get("group")),
                bus_id=str(dev["device_hex"]) if dev.get("device_hex") else None,
                device_name=str(dev.get("device_info", "")),
            )
        )
    rows = []
    results = doc.get("results") or []
    if not isinstance(results, list):
        raise ParseError("nccl-tests JSON: 'results' is not a list")
    for res in results:
        if not isinstance(res, dict) or _json_int(res.get("size")) is None:
            raise ParseError("nccl-tests JSON: a result without a size")
        root = str(res.get("root", "")).strip()
        rows.append(
            NcclRow(
                size=_json_int(res.get("size")) or 0,
                count=_json_int(res.get("count")) or 0,
                type=str(res.get("type", "")),
                redop=str(res["redop"]).strip() or None if res.get("redop") is not None else None,
                root=int(root) if _INT_RE.match(root) else None,
                out_of_place=_json_side(res.get("out_of_place"), validation),
                in_place=_json_side(res.get("in_place"), validation),
            )
        )
    oob = doc.get("out_of_bounds") if isinstance(doc.get("out_of_bounds"), dict) else None
    avg = doc.get("average_bus_bandwidth") if isinstance(doc.get("average_bus_bandwidth"), dict) else None
    args = doc.get("args") if isinstance(doc.get("args"), list) else []
    collective = str(args[0]).rsplit("/", 1)[-1] if args else None
    errors = tuple(NcclError("nccl", str(e), line=str(e)) for e in doc.get("errors") or [] if str(e).strip())
    avg_ok = _json_bool(avg.get("okay")) if avg else None
    return NcclTestRun(
        format="json",
        collective=collective,
        nccl_version=_nccl_version(doc.get("nccl_version")),
        n_threads=_json_int(config.get("nthreads")),
        n_gpus=_json_int(config.get("ngpus")),
        min_bytes=_json_int(config.get("minimum_bytes")),
        max_bytes=_json_int(config.get("maximum_bytes")),
        warmup_iters=_json_int(config.get("warmup_iters")),
        iters=_json_int(config.get("iterations")),
        agg_iters=_json_int(config.get("aggregated_iterations")),
        validation=validation,
        ranks=tuple(ranks),
        rows=tuple(rows),
        out_of_bounds=_json_int(oob.get("count")) if oob else None,
        out_of_bounds_failed=(_json_bool(oob.get("okay")) is False) if oob else None,
        avg_busbw_gbps=_json_num(avg.get("bandwidth"), "nccl-tests JSON bandwidth", MAX_BUS_GBYTES)
        if avg
        else None,
        avg_busbw_verdict=None if avg_ok is None else ("OK" if avg_ok else "FAILED"),
        errors=errors,
        complete=avg is not None,
    )


@parser
def parse_nccl_tests(text: str) -> NcclTestRun:
    """One nccl-tests run: its text output (stdout, stderr merged or not) or its ``-J`` JSON file."""
    if text.lstrip().startswith("{"):
        return _parse_json(text)
    return _parse_text(text)
