"""``dcgmi diag`` results: DCGM 3.x and 4.x JSON (``-j``) and their text tables.

Drift handled: 3.x JSON top key ``DCGM GPU Diagnostic`` with ``gpu_ids``/``gpu_id`` and
upper/title-case statuses vs 4.x ``DCGM Diagnostic`` with ``entity_group``/``entity_id``,
``test_summary`` and ``metadata``; 3.x text tables (``Fail - All``, ``Pass - GPUs: 0, 1``,
messages wrapped in 45-character slices over continuation rows) vs 4.x tables (lower-case
plugin names and per-GPU ``GPU0: Pass`` sub-rows).

Decision on truncated JSON (e.g. ``dcgmi_diag_r3_j_dcgm3_all_skip_PARTIAL.json``): text that
starts as JSON but does not decode is a ``ParseError``, never a partial pass-looking record.
A text table that is cut off parses, with a ``problems`` entry saying so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any, NamedTuple

from burnin.parsers._common import JSON_DECODER, clean, parser, split_lines
from burnin.parsers.errors import ParseError


class DcgmErrorCode(NamedTuple):
    name: str  # 'PENDING_ROW_REMAP' (DCGM_FR_ prefix dropped)
    severity: str  # 'RESET' (DCGM_ERROR_ prefix dropped): MONITOR, ISOLATE, TRIAGE, CONFIG, RESET, UNKNOWN
    category: str  # 'HARDWARE_MEMORY' (DCGM_FR_EC_ prefix dropped)


# DCGM_ERROR_* severity numbers as they appear in JSON 'error_severity'.
DCGM_SEVERITY_NAMES: dict[int, str] = {
    0: "NONE",
    1: "MONITOR",
    2: "ISOLATE",
    3: "UNKNOWN",
    4: "TRIAGE",
    5: "CONFIG",
    6: "RESET",
}

_ERROR_TABLE = "data/dcgm_error_codes_severity_table.tsv"  # from NVIDIA/DCGM dcgm_errors.h/.c (4.6.0)


def _load_error_codes() -> dict[int, DcgmErrorCode]:
    text = resources.files("burnin.parsers").joinpath(_ERROR_TABLE).read_text(encoding="utf-8")
    codes: dict[int, DcgmErrorCode] = {}
    for line in text.splitlines():
        cols = line.split("\t")
        if line.startswith("#") or len(cols) < 4 or not cols[0].isdigit():
            continue
        codes[int(cols[0])] = DcgmErrorCode(
            cols[1].removeprefix("DCGM_FR_"),
            cols[2].removeprefix("DCGM_ERROR_"),
            cols[3].removeprefix("DCGM_FR_EC_"),
        )
    return codes


DCGM_ERRORS: dict[int, DcgmErrorCode] = _load_error_codes()

# The tests each `dcgmi diag -r N` suite runs, by their DCGM 4.x names, each level adding to the
# one below: DCGM's suite definition (NVIDIA/DCGM nvvs/src/NvidiaValidationSuite.cpp,
# FillTestVectors, identical in 3.3.8 @903d745 and 4.6.0 @72fa3fe) and the run levels of the user
# guide (https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html).
# Level 3 also runs eud, cpu_eud, nvbandwidth and nccl_tests where they are installed and
# supported (eud only as root): conditional, so never required.
LEVEL_TESTS: dict[int, tuple[str, ...]] = {1: ("software",)}
LEVEL_TESTS[2] = (*LEVEL_TESTS[1], "pcie", "memory")
LEVEL_TESTS[3] = (*LEVEL_TESTS[2], "diagnostic", "targeted_stress", "targeted_power", "memory_bandwidth")
LEVEL_TESTS[4] = (*LEVEL_TESTS[3], "memtest", "pulse_test")

# DCGM 3.x prints the software plugin as its checks, one row each (the Deployment category).
_SOFTWARE_CHECKS = {
    "denylist",
    "blacklist",
    "nvml library",
    "cuda main library",
    "cuda toolkit libraries",
    "permissions and os blocks",
    "permissions and os-related blocks",
    "persistence mode",
    "environment variables",
    "environmental variables",
    "page retirement/row remap",
    "graphics processes",
    "inforom",
    "fabric manager",
}
_TEST_ALIASES = {"gpu_memory": "memory", "eud_test": "eud", "pulse": "pulse_test"}
# `-r` takes a level or its name (the dcgmi diag reference: quick/short, medium, long, xlong).
_LEVEL_NAMES = {"1": 1, "quick": 1, "short": 1, "2": 2, "medium": 2, "3": 3, "long": 3, "4": 4, "xlong": 4}
# A command line: a shell prompt at most before it ('$ ', 'sh-5.1# ', 'root@node:~# '), so a
# comment that quotes the command ('# SOURCE: ... dcgmi diag -r 3') is not taken for one.
_COMMAND_LEVEL_RE = re.compile(
    r"^[ \t]*(?:\S*[$#>%][ \t]*)?(?:sudo[ \t]+)?(?:\S*/)?dcgmi[ \t]+diag\b[^\n]*?(?:-r|--run)[ =]+['\"]?(\w+)",
    re.I | re.M,
)
# DCGM_FR_* codes that say the test did not run (dcgm_errors.h): a result carrying one is a skip.
SKIP_ERRORS = ("TEST_SKIPPED", "TEST_DISABLED")


def canonical_test(name: str, category: str | None = None) -> str:
    """The DCGM 4.x name of a test as printed by any version: 'GPU Memory' -> 'memory',
    'Targeted Stress' -> 'targeted_stress', a 3.x Deployment row -> 'software'."""
    low = re.sub(r"\s+", " ", name.strip().lower())
    if (category or "").strip().lower() == "deployment" or low in _SOFTWARE_CHECKS:
        return "software"
    key = re.sub(r"[\s-]+", "_", low)
    return _TEST_ALIASES.get(key, key)


def stated_level(text: str) -> int | None:
    """The level on a `dcgmi diag -r N` command line pasted above the output, if any."""
    m = _COMMAND_LEVEL_RE.search(text)
    return _LEVEL_NAMES.get(m.group(1).lower()) if m else None


_LEVELLED = set(LEVEL_TESTS[4])

STATUSES = ("pass", "fail", "warn", "skip", "not_run", "unknown")
# Order used to summarise several results into one (first = dominates).
_STATUS_RANK = ("fail", "unknown", "warn", "pass", "skip", "not_run")


@dataclass(frozen=True)
class DcgmWarning:
    message: str
    error_id: int | None = None  # DCGM_FR_* number (JSON only)
    severity: int | None = None  # DCGM_ERROR_* number as given in JSON 'error_severity'
    category: int | None = None  # JSON 'error_category'
    gpu_id: int | None = None  # the result's GPU, or the first 'GPU n' named in the message

    @property
    def code(self) -> DcgmErrorCode | None:
        return DCGM_ERRORS.get(self.error_id) if self.error_id is not None else None

    @property
    def severity_name(self) -> str | None:
        """'RESET', 'ISOLATE', ... from the JSON severity, else from the error table."""
        if self.severity is not None and self.severity in DCGM_SEVERITY_NAMES:
            return DCGM_SEVERITY_NAMES[self.severity]
        code = self.code
        return code.severity if code else None


@dataclass(frozen=True)
class DcgmResult:
    gpu_id: int | None  # None: the result covers all GPUs ("Pass - All") or is global
    status: str  # one of STATUSES
    entity_group: str | None = "GPU"  # 4.x JSON may report 'CPU' etc.; None for global results
    entity_id: int | None = None
    warnings: tuple[DcgmWarning, ...] = ()
    info: tuple[str, ...] = ()


@dataclass(frozen=True)
class DcgmTest:
    name: str  # as printed: 'GPU Memory' (3.x), 'memory' (4.x)
    category: str | None  # 'Deployment', 'Hardware', 'Integration', 'Stress', ...
    status: str  # the printed summary (4.x), else the worst of the results
    results: tuple[DcgmResult, ...]
    warnings: tuple[DcgmWarning, ...] = ()  # every warning of the test, result-level ones included
    info: tuple[str, ...] = ()  # every info line of the test


@dataclass(frozen=True)
class DcgmDiag:
    format: str  # 'json3', 'json4', 'text3' or 'text4'
    dcgm_version: str | None
    driver_version: str | None
    gpu_device_ids: tuple[str, ...]
    tests: tuple[DcgmTest, ...]
    runtime_error: str | None = None  # the diagnostic could not run (no tests then)
    problems: tuple[str, ...] = ()  # e.g. a text table cut off before its closing border
    level: int | None = None  # the `-r N` of a dcgmi command line pasted above the output

    def test(self, name: str) -> DcgmTest | None:
        low = name.lower()
        return next((t for t in self.tests if t.name.lower() == low), None)

    def shown_level(self) -> int:
        """The lowest run level whose suite holds every test the output lists (whatever their
        status): what an output that does not state its level shows of it."""
        shown = {canonical_test(t.name, t.category) for t in self.tests} & _LEVELLED
        return next((lv for lv in (1, 2, 3) if shown <= set(LEVEL_TESTS[lv])), 4)


def normalize_status(value: Any) -> str:
    """'PASS', 'Pass', 'Pass - All', 'Not Run', 'SKIP' ... -> pass/fail/warn/skip/not_run/unknown."""
    if not isinstance(value, str):
        return "unknown"
    low = re.sub(r"[\s_]+", " ", value.strip().lower())
    for prefix, status in (("pass", "pass"), ("fail", "fail"), ("warn", "warn"), ("skip", "skip")):
        if low.startswith(prefix):
            return status
    if low.startswith(("not run", "notrun", "not_run")):
        return "not_run"
    return "unknown"


def _worst(statuses: list[str]) -> str:
    for status in _STATUS_RANK:
        if status in statuses:
            return status
    return "not_run"


_GPU_IN_MSG_RE = re.compile(r"\bGPU ?(\d+)(?!\d)")


def _gpu_in(message: str) -> int | None:
    m = _GPU_IN_MSG_RE.search(message)
    return int(m.group(1)) if m else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


# ---------------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------------


def _json_warnings(items: Any, gpu_id: int | None) -> tuple[DcgmWarning, ...]:
    out = []
    for item in _list(items):
        if isinstance(item, str):
            out.append(DcgmWarning(item, gpu_id=gpu_id if gpu_id is not None else _gpu_in(item)))
            continue
        item = _dict(item)
        message = item.get("warning", item.get("error", ""))
        message = message if isinstance(message, str) else json.dumps(message)
        out.append(
            DcgmWarning(
                message=message,
                error_id=_int(item.get("error_id")),
                severity=_int(item.get("error_severity")),
                category=_int(item.get("error_category")),
                gpu_id=gpu_id if gpu_id is not None else _gpu_in(message),
            )
        )
    return tuple(out)


def _json_info(items: Any) -> tuple[str, ...]:
    if isinstance(items, str):
        return (items,)
    return tuple(i if isinstance(i, str) else json.dumps(i) for i in _list(items))


def _gpu_ids(result: dict) -> list[int | None]:
    raw = result.get("gpu_ids", result.get("gpu_id"))
    if isinstance(raw, int) and not isinstance(raw, bool):
        return [raw]
    if isinstance(raw, str):
        ids = [int(p) for p in re.split(r"[,\s]+", raw) if p.isdigit()]
        return ids or [None]
    if isinstance(raw, list):
        ids = [_int(p) for p in raw]
        return [i for i in ids if i is not None] or [None]
    return [None]


def _json_results(test: dict, v4: bool) -> list[DcgmResult]:
    results = []
    for res in _list(test.get("results")):
        res = _dict(res)
        status = normalize_status(res.get("status"))
        info = _json_info(res.get("info"))
        if v4 and ("entity_group" in res or "entity_id" in res or "entity_group_id" in res):
            group = res.get("entity_group") if isinstance(res.get("entity_group"), str) else None
            eid = _int(res.get("entity_id"))
            gpu = eid if (group or "GPU").upper() == "GPU" else None
            results.append(
                DcgmResult(gpu, status, group or "GPU", eid, _json_warnings(res.get("warnings"), gpu), info)
            )
            continue
        for gpu in _gpu_ids(res):
            group = "GPU" if gpu is not None else None
            results.append(
                DcgmResult(gpu, status, group, gpu, _json_warnings(res.get("warnings"), gpu), info)
            )
    return results


def _parse_json(text: str, start: int) -> DcgmDiag:
    try:
        obj, _ = JSON_DECODER.raw_decode(text, start)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ParseError(f"dcgmi -j output is not valid JSON (truncated or elided?): {exc}") from exc
    if not isinstance(obj, dict):
        raise ParseError("dcgmi -j output is not a JSON object")
    if isinstance(obj.get("DCGM Diagnostic"), dict):
        fmt, body = "json4", obj["DCGM Diagnostic"]
    elif isinstance(obj.get("DCGM GPU Diagnostic"), dict):
        fmt, body = "json3", obj["DCGM GPU Diagnostic"]
    else:
        raise ParseError("JSON has neither 'DCGM Diagnostic' (4.x) nor 'DCGM GPU Diagnostic' (3.x)")
    meta = _dict(obj.get("metadata"))
    tests: list[DcgmTest] = []
    for cat in _list(body.get("test_categories")):
        cat = _dict(cat)
        category = cat.get("category") if isinstance(cat.get("category"), str) else None
        for test in _list(cat.get("tests")):
            test = _dict(test)
            name = test.get("name")
            if not isinstance(name, str):
                continue
            results = _json_results(test, fmt == "json4")
            summary = _dict(test.get("test_summary"))
            summary_warnings = _json_warnings(summary.get("warnings"), None)
            summary_info = _json_info(summary.get("info"))
            status = (
                normalize_status(summary["status"])
                if "status" in summary
                else _worst([r.status for r in results])
            )
            warnings = summary_warnings + tuple(
                w for r in results for w in r.warnings if w not in summary_warnings
            )
            info = summary_info + tuple(i for r in results for i in r.info)
            tests.append(DcgmTest(name, category, status, tuple(results), warnings, info))
    device_ids: list[str] = []
    for group in _list(obj.get("entity_groups")):
        group = _dict(group)
        if str(group.get("entity_group", "")).upper() == "GPU":
            device_ids += [
                str(_dict(e).get("device_id"))
                for e in _list(group.get("entities"))
                if _dict(e).get("device_id") is not None
            ]

    def first_str(*values: Any) -> str | None:
        return next((v for v in values if isinstance(v, str) and v.strip()), None)

    runtime_error = first_str(body.get("runtime_error"), obj.get("runtime_error"))
    return DcgmDiag(
        format=fmt,
        dcgm_version=first_str(
            meta.get("version"), meta.get("DCGM Version"), body.get("DCGM Version"), body.get("version")
        ),
        driver_version=first_str(meta.get("Driver Version Detected"), body.get("Driver Version Detected")),
        gpu_device_ids=tuple(device_ids),
        tests=tuple(tests),
        runtime_error=runtime_error,
    )


# ---------------------------------------------------------------------------------------------
# Text tables
# ---------------------------------------------------------------------------------------------

_CATEGORY_RE = re.compile(r"^[|+]-+\s+([A-Za-z][\w ]*)-+\+")
_BORDER_RE = re.compile(r"^\+(-+)\+(-+)\+\s*$")
_S = r"(Pass|Fail|Warn|Skip|Not Run)"
_ALL_RE = re.compile(rf"^{_S}\s*-\s*All$", re.I)
_LIST_RE = re.compile(rf"^{_S}\s*-\s*GPUs?:\s*([\d,\s]+)$", re.I)
_SUBROW_RE = re.compile(rf"^GPU\s*(\d+)\s*:\s*{_S}\b", re.I)
_PLAIN_RE = re.compile(rf"^{_S}$", re.I)
_MESSAGE_NAMES = {"warning", "error", "info"}


@dataclass
class _TestDraft:
    name: str
    category: str | None
    status: str | None = None
    results: list[tuple[int | None, str]] = field(default_factory=list)
    warnings: list[DcgmWarning] = field(default_factory=list)
    info: list[str] = field(default_factory=list)
    last_gpu: int | None = None


def _status_cell(draft: _TestDraft, cell: str, is_header: bool) -> bool:
    """Apply a status cell to the test; False when the cell is not a status."""
    if m := _ALL_RE.match(cell):
        draft.results.append((None, normalize_status(m.group(1))))
        if is_header:
            draft.status = normalize_status(m.group(1))
    elif m := _LIST_RE.match(cell):
        for gpu in re.findall(r"\d+", m.group(2)):
            draft.results.append((int(gpu), normalize_status(m.group(1))))
    elif m := _SUBROW_RE.match(cell):
        draft.results.append((int(m.group(1)), normalize_status(m.group(2))))
        draft.last_gpu = int(m.group(1))
    elif (m := _PLAIN_RE.match(cell)) and is_header:
        draft.status = normalize_status(m.group(1))
    elif re.match(r"^Code:\s*\(", cell):
        draft.info.append(cell)
    else:
        return False
    return True


def _finish(draft: _TestDraft) -> DcgmTest:
    statuses = [s for _, s in draft.results]
    if not draft.results:
        draft.results.append((None, draft.status or "unknown"))
    status = draft.status or _worst(statuses)
    results = []
    for gpu, st in draft.results:
        mine = tuple(w for w in draft.warnings if gpu is None or w.gpu_id == gpu)
        results.append(DcgmResult(gpu, st, "GPU" if gpu is not None else None, gpu, mine))
    # A warning naming a GPU with no result of its own goes to the 'All' result (kept above too).
    return DcgmTest(
        draft.name, draft.category, status, tuple(results), tuple(draft.warnings), tuple(draft.info)
    )


def _columns(lines: list[str]) -> tuple[int, int]:
    """(index of the column separator, characters per wrapped message slice)."""
    for line in lines:
        m = _BORDER_RE.match(line) or re.match(r"^[|+](-[^+|]*)[+|](-+)[+|]\s*$", line)
        if m:
            return len(m.group(1)) + 1, max(len(m.group(2)) - 3, 1)
    return 28, 45  # DCGM's DIAG_DATA stencil: 25-char name, 45-char info slices


def _parse_text(text: str) -> DcgmDiag:
    lines = [ln.rstrip("\n") for ln in split_lines(text)]
    sep, width = _columns(lines)
    meta: dict[str, str] = {}
    tests: list[DcgmTest] = []
    problems: list[str] = []
    category: str | None = None
    draft: _TestDraft | None = None
    message: tuple[str, list[str], bool] | None = None  # (kind, chunks, aligned)
    table_rows = 0
    closed = False
    saw_subrows = False
    saw_header = False  # the '| Diagnostic | Result |' row
    other_lines: list[str] = []

    def flush_message() -> None:
        nonlocal message
        if message is None:
            return
        kind, chunks, aligned = message
        body = ("".join(chunks) if aligned else " ".join(c.strip() for c in chunks)).strip()
        message = None
        if not body:
            return
        if draft is None:
            problems.append(f"{kind} outside any test: {body[:200]}")
        elif kind == "info":
            draft.info.append(body)
        else:
            gpu = _gpu_in(body)
            draft.warnings.append(DcgmWarning(body, gpu_id=gpu if gpu is not None else draft.last_gpu))

    def flush_test() -> None:
        nonlocal draft
        flush_message()
        if draft is not None:
            tests.append(_finish(draft))
        draft = None

    for line in lines:
        if m := _CATEGORY_RE.match(line):
            flush_test()
            category = m.group(1).strip()
            closed = False
            continue
        if _BORDER_RE.match(line) or re.match(r"^\+=+\+=+\+\s*$", line):
            flush_test()
            closed = table_rows > 0
            continue
        if not line.startswith("|"):
            if line.strip():
                other_lines.append(line.strip())
            continue
        table_rows += 1
        closed = False
        if len(line) > sep and line[sep] == "|":
            name, rest, aligned = line[1:sep].strip(), line[sep + 1 :], True
            chunk = rest[1 : 1 + width]
        else:
            parts = line.split("|")
            name, aligned = parts[1].strip(), False
            chunk = parts[2] if len(parts) > 2 else ""
        cell = chunk.strip()
        if name == "Diagnostic" and cell == "Result":
            saw_header = True
            continue
        if (category or "").lower() == "metadata":
            meta[name.lower()] = cell
            continue
        if name.lower() in _MESSAGE_NAMES:
            flush_message()
            message = (name.lower(), [chunk], aligned)
            continue
        if not name:
            if message is not None:
                message[1].append(chunk)
            elif draft is not None:
                if _SUBROW_RE.match(cell):
                    saw_subrows = True
                if not _status_cell(draft, cell, is_header=False) and cell:
                    draft.info.append(cell)
            continue
        flush_test()
        draft = _TestDraft(name, category)
        if not _status_cell(draft, cell, is_header=True):
            draft.status = "unknown"
            problems.append(f"test {name!r}: unrecognised result {cell!r}")
    flush_test()

    if table_rows == 0:
        error = next((ln for ln in other_lines if re.match(r"^Error\b", ln, re.I)), None)
        if error is None:
            raise ParseError("not dcgmi diag output: no result table, no JSON, no 'Error:' line")
        return DcgmDiag("text3", None, None, (), (), runtime_error=error)
    if not saw_header and category is None:
        # Another tool's table (the nvidia-smi one) is made of '|' rows too: a DCGM table has
        # its 'Diagnostic | Result' header or '+-----  Category  ---+' lines.
        raise ParseError(
            "not dcgmi diag output: a table with no 'Diagnostic | Result' header or test category"
        )
    if not closed:
        problems.append("result table not closed by its border line (output truncated?)")
    version = meta.get("dcgm version")
    major = (version or "").split(".")[0]
    fmt = "text4" if saw_subrows or (major.isdigit() and int(major) >= 4) else "text3"
    device_ids = tuple(d.strip() for d in (meta.get("gpu device ids detected") or "").split(",") if d.strip())
    return DcgmDiag(
        format=fmt,
        dcgm_version=clean(version),
        driver_version=clean(meta.get("driver version detected")),
        gpu_device_ids=device_ids,
        tests=tuple(tests),
        problems=tuple(problems),
    )


@parser
def parse_diag(text: str) -> DcgmDiag:
    """``dcgmi diag -r N`` output, JSON (``-j``) or text table, DCGM 3.x or 4.x."""
    m = re.search(r"^[ \t]*\{", text, re.M)
    if m and not re.search(r"^[|+]-", text, re.M):
        diag = _parse_json(text, text.index("{", m.start()))
    else:
        diag = _parse_text(text)
    return replace(diag, level=stated_level(text))
