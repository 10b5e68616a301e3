"""Host<->device copy bandwidth per GPU, from the three programs that measure it.

- ``nvbandwidth`` (NVIDIA/nvbandwidth) plain text: ``nvbandwidth Version: v0.8`` header, one
  ``Device N: NAME (dddddddd:bb:dd)`` line per GPU, then per testcase ``Running KEY.``, a
  description (``memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)``), a matrix (a header row
  of column indices, one row per source: ``0     55.12     55.10 ...``, ``N/A`` where not
  measured), a blank line and ``SUM KEY TOTAL``. Versions from 0.7 end with the two ``NOTE: The
  reported results may not reflect ...`` lines (printed after the last testcase, so they mark a
  whole output); older ones print a different NOTE before the devices. Layout from the
  project's source (output.cpp, inline_common.h ``operator<<(PeerValueMatrix)``, nvbandwidth.cpp
  ``main``) and real runs quoted in its issues (samples ``nvbandwidth_*`` in tests/fixtures).
  The ``-j`` JSON form is not read.
- CUDA samples' ``bandwidthTest``: ``[CUDA Bandwidth Test] - Starting...``, `` Device N: NAME``,
  per direction `` Host to Device Bandwidth, K Device(s)`` + memory mode + a size/bandwidth
  table, ``Result = PASS``; ``--csv`` prints ``bandwidthTest-H2D-Pinned, Bandwidth = 25.1 GB/s,
  ... NumDevsUsed = 1`` lines. With ``--device=all`` (K > 1) a figure is the SUM over the K
  devices (bandwidthTest.cu ``testBandwidthRange``), not one GPU's: kept as ``cumulative``.
  Several runs one after the other (one per ``--device=N``) give one GPU each.
- ``burnin-stress --copy-bandwidth`` (burnin/onnode/stress.py): this project's JSON report.

Units: GB/s = 1e9 bytes per second in all three.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from burnin.parsers._common import MAX_BUS_GBYTES, load_json, number, parser, split_lines
from burnin.parsers.errors import ParseError

H2D, D2H = "h2d", "d2h"
# nvbandwidth testcases that measure one GPU at a time against the host, by direction. CE (copy
# engine, cuMemcpyAsync) is what a DMA over PCIe does; SM (a copy kernel) is read when CE is absent.
NVB_TESTCASES = {
    "host_to_device_memcpy_ce": H2D,
    "device_to_host_memcpy_ce": D2H,
    "host_to_device_memcpy_sm": H2D,
    "device_to_host_memcpy_sm": D2H,
}
_NVB_HEADER = re.compile(r"^nvbandwidth Version: (\S+)")
_NVB_DEVICE = re.compile(
    r"^Device (\d+): (.+?)(?: \(([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\))?\s*$"
)
_NVB_RUNNING = re.compile(r"^Running (\S+)\.$")
_NVB_SUM = re.compile(r"^SUM (\S+) (\S+)$")
_NVB_COLUMNS = re.compile(r"^\s*\d+(\s+\d+)*\s*$")
_NVB_ROW = re.compile(r"^\s*(\d+)((?:\s+(?:N/A|[-+]?\d+(?:\.\d+)?))+)\s*$")
_NVB_END_NOTE = "NOTE: The reported results may not reflect the full capabilities of the platform."
_NVB_END_LAST = "Performance can vary with software drivers, hardware clocks, and system topology."
_NVB_OLD_NOTE = "NOTE: This tool reports current measured bandwidth on your system."  # < 0.7, at the top
_NVB_ERRORS = re.compile(r"^(?:ERROR: |\[CUDA_ERROR_\w+\]|NVML_ERROR: |ASSERT in expression |WAIVED: )")

_BWT_START = "[CUDA Bandwidth Test] - Starting..."
_BWT_DEVICE = re.compile(r"^\s*Device (\d+): (.+?)\s*$")
_BWT_DIRECTION = re.compile(
    r"^\s*(Host to Device|Device to Host|Device to Device) Bandwidth, (\d+) Device\(s\)\s*$"
)
_BWT_ROW = re.compile(r"^\s+(\d+)\s+(\d+(?:\.\d+)?)\s*$")
_BWT_CSV = re.compile(
    r"^bandwidthTest-(H2D|D2H|D2D)[-\w]*, Bandwidth = (\S+) GB/s, Time = \S+ s, Size = (\d+) bytes, "
    r"NumDevsUsed = (\d+)\s*$"
)
_BWT_RESULT = re.compile(r"^Result = (PASS|FAIL)\s*$")
_BWT_KIND = {"Host to Device": H2D, "Device to Host": D2H, "H2D": H2D, "D2H": D2H}


@dataclass(frozen=True)
class CopyGpu:
    index: int
    name: str = ""
    bus_id: str | None = None  # as printed ('00000000:53:00'), None when the tool does not say
    h2d_gbps: float | None = None
    d2h_gbps: float | None = None
    error: str = ""  # this GPU's copy could not run (burnin-stress), why


@dataclass(frozen=True)
class CopyBandwidth:
    tool: str  # 'nvbandwidth', 'bandwidthTest' or 'burnin-stress'
    version: str | None = None
    gpus: tuple[CopyGpu, ...] = ()
    method: str = ""  # 'CE' / 'SM' (nvbandwidth), 'PINNED' / 'PAGEABLE' (bandwidthTest), backend
    complete: bool = False  # the tool's end marker was seen
    errors: tuple[str, ...] = ()  # the tool's own error lines
    problems: tuple[str, ...] = ()  # what the parser could not make sense of (cut short...)
    # bandwidthTest --device=all: direction -> (devices summed, total GB/s); no per-GPU figure.
    cumulative: dict[str, tuple[int, float]] = field(default_factory=dict)

    def gpu(self, index: int) -> CopyGpu | None:
        return next((g for g in self.gpus if g.index == index), None)


def _gbps(token: str, what: str) -> float:
    return number(token, what, maximum=MAX_BUS_GBYTES)


@parser
def parse_copy_bandwidth(text: str) -> CopyBandwidth:
    """Whichever of the three outputs ``text`` is; ParseError when it is none of them."""
    lines = split_lines(text)
    first = next((line.strip() for line in lines if line.strip()), "")
    if first.startswith("{"):
        return _parse_stress_json(text)
    if _NVB_HEADER.match(first):
        return _parse_nvbandwidth(lines)
    if any(line.strip() == _BWT_START for line in lines[:5]) or _BWT_CSV.match(first):
        return _parse_bandwidth_test(lines)
    raise ParseError(
        f"not nvbandwidth, bandwidthTest or burnin-stress --copy-bandwidth output (starts {first[:60]!r})"
    )


# -- nvbandwidth ---------------------------------------------------------------------------------


def _parse_nvbandwidth(lines: list[str]) -> CopyBandwidth:
    version = None
    devices: dict[int, tuple[str, str | None]] = {}
    figures: dict[str, dict[int, float]] = {H2D: {}, D2H: {}}
    methods: dict[str, str] = {}
    errors: list[str] = []
    problems: list[str] = []
    complete = old_layout = end_note = False
    current: str | None = None  # the testcase whose block is being read
    matrix: dict[int, list[float | None]] = {}
    columns: list[int] = []

    def close(summed: str | None) -> None:
        nonlocal current, matrix, columns
        if current is None:
            return
        if summed is None:
            problems.append(f"testcase {current} has no SUM line: the output was cut short")
        elif current in NVB_TESTCASES:
            direction = NVB_TESTCASES[current]
            method = current.rsplit("_", 1)[1].upper()
            row = matrix.get(0)
            if row is None or len(row) != len(columns):
                problems.append(f"testcase {current}: no whole CPU row in its matrix")
            elif direction not in methods or (methods[direction] == "SM" and method == "CE"):
                methods[direction] = method
                figures[direction] = {col: v for col, v in zip(columns, row, strict=True) if v is not None}
        current, matrix, columns = None, {}, []

    for raw in lines:
        line = raw.rstrip()
        if m := _NVB_HEADER.match(line):
            if version is not None:
                problems.append("two nvbandwidth headers: more than one output run together")
            version = m.group(1)
            continue
        if m := _NVB_DEVICE.match(line):
            devices[int(m.group(1))] = (m.group(2), m.group(3))
            continue
        if m := _NVB_RUNNING.match(line):
            close(None)
            current = m.group(1)
            continue
        if m := _NVB_SUM.match(line):
            if current is None or m.group(1) != current:
                problems.append(f"SUM line for {m.group(1)} outside its testcase")
            else:
                _gbps(m.group(2), f"nvbandwidth SUM {current}")
                close(m.group(1))
            continue
        if _NVB_ERRORS.match(line.strip()):
            errors.append(f"{current}: {line.strip()}" if current else line.strip())
            if current is not None:
                current, matrix, columns = None, {}, []  # the testcase ended with this error
            continue
        if line == _NVB_END_NOTE:
            close(None)
            end_note = True
            continue
        if line == _NVB_END_LAST and end_note:
            complete = True  # the last line nvbandwidth prints
            continue
        if line == _NVB_OLD_NOTE:
            old_layout = True
            continue
        if current is None:
            continue
        if not columns and _NVB_COLUMNS.match(line):
            columns = [int(t) for t in line.split()]
            continue
        if columns and (m := _NVB_ROW.match(line)):
            cells = m.group(2).split()
            matrix[int(m.group(1))] = [
                None if c == "N/A" else _gbps(c, f"nvbandwidth {current} row {m.group(1)}") for c in cells
            ]
    close(None)
    if version is None:
        raise ParseError("no 'nvbandwidth Version:' line")
    # Before 0.7 nothing follows the last testcase: whole when every block ended with its SUM.
    complete = complete or (old_layout and not problems)
    indices = sorted(set(devices) | set(figures[H2D]) | set(figures[D2H]))
    gpus = tuple(
        CopyGpu(
            index=i,
            name=devices.get(i, ("", None))[0],
            bus_id=devices.get(i, ("", None))[1],
            h2d_gbps=figures[H2D].get(i),
            d2h_gbps=figures[D2H].get(i),
        )
        for i in indices
    )
    method = "/".join(sorted(set(methods.values())))
    return CopyBandwidth("nvbandwidth", version, gpus, method, complete, tuple(errors), tuple(problems))


# -- CUDA samples bandwidthTest ----------------------------------------------------------------


def _parse_bandwidth_test(lines: list[str]) -> CopyBandwidth:
    gpus: dict[int, dict] = {}
    cumulative: dict[str, tuple[int, float]] = {}
    problems: list[str] = []
    errors: list[str] = []
    runs = ends = 0
    run_devices: list[int] = []
    direction: str | None = None
    count = 0
    best: tuple[int, float] | None = None  # (size, GB/s) of the largest transfer in the table
    method = ""

    def record() -> None:
        nonlocal best
        if direction is None or best is None:
            return
        if count > 1 or len(run_devices) != 1:
            cumulative[direction] = (count, best[1])
        else:
            gpus.setdefault(run_devices[0], {})[direction] = best[1]
        best = None

    for raw in lines:
        line = raw.rstrip()
        stripped = line.strip()
        if stripped == _BWT_START:
            record()
            runs += 1
            run_devices, direction = [], None
            continue
        if m := _BWT_CSV.match(stripped):
            kind = _BWT_KIND.get(m.group(1))
            value = _gbps(m.group(2), "bandwidthTest CSV bandwidth")
            if kind:
                if int(m.group(4)) > 1 or len(run_devices) != 1:
                    cumulative[kind] = (int(m.group(4)), value)
                else:
                    gpus.setdefault(run_devices[0], {})[kind] = value
            continue
        if m := _BWT_DIRECTION.match(line):
            record()
            direction, count = _BWT_KIND.get(m.group(1)), int(m.group(2))
            continue
        if m := _BWT_DEVICE.match(line):
            index = int(m.group(1))
            run_devices.append(index)
            gpus.setdefault(index, {})["name"] = m.group(2)
            continue
        if stripped in ("PINNED Memory Transfers", "PAGEABLE Memory Transfers"):
            method = stripped.split()[0]
            continue
        if direction and (m := _BWT_ROW.match(line)):
            size, value = int(m.group(1)), _gbps(m.group(2), "bandwidthTest bandwidth")
            if best is None or size >= best[0]:
                best = (size, value)
            continue
        if m := _BWT_RESULT.match(stripped):
            record()
            direction = None
            ends += 1
            if m.group(1) == "FAIL":
                errors.append("bandwidthTest: Result = FAIL")
            continue
        if stripped.startswith(("CUDA error at", "cudaGetDeviceProperties returned", "!!!!!No devices")):
            errors.append(stripped)
    record()
    if runs and ends < runs:
        problems.append(f"{runs - ends} bandwidthTest run(s) without 'Result =': cut short")
    out = tuple(
        CopyGpu(index=i, name=v.get("name", ""), h2d_gbps=v.get(H2D), d2h_gbps=v.get(D2H))
        for i, v in sorted(gpus.items())
    )
    complete = (runs == 0 and bool(out or cumulative)) or (runs > 0 and ends == runs)
    return CopyBandwidth(
        "bandwidthTest", None, out, method, complete, tuple(errors), tuple(problems), cumulative
    )


# -- burnin-stress --copy-bandwidth --------------------------------------------------------------


def _parse_stress_json(text: str) -> CopyBandwidth:
    try:
        report = load_json(text.strip())
    except json.JSONDecodeError as exc:
        raise ParseError(f"unreadable burnin-stress report: {exc.msg}") from None
    if not isinstance(report, dict) or report.get("tool") != "burnin-stress":
        raise ParseError("not a burnin-stress report")
    if report.get("mode") != "copy-bandwidth":
        raise ParseError("a burnin-stress report, but not of --copy-bandwidth")
    gpus = report.get("gpus")
    if not isinstance(gpus, list):
        raise ParseError("the copy-bandwidth report has no 'gpus' list")
    out = []
    for g in gpus:
        if not isinstance(g, dict) or isinstance(g.get("index"), bool) or not isinstance(g.get("index"), int):
            raise ParseError("a GPU entry of the copy-bandwidth report has no integer 'index'")
        figures = {
            key: None if g.get(key) is None else _gbps(g[key], f"burnin-stress GPU {g['index']} {key}")
            for key in ("h2d_gbps", "d2h_gbps")
        }
        out.append(
            CopyGpu(
                index=g["index"],
                name=str(g.get("name") or ""),
                bus_id=g.get("pci_bus_id") if isinstance(g.get("pci_bus_id"), str) else None,
                error=str(g.get("error") or ""),
                **figures,
            )
        )
    error = report.get("error")
    return CopyBandwidth(
        "burnin-stress",
        str(report.get("version")),
        tuple(out),
        str(report.get("backend") or ""),
        complete=True,
        errors=(str(error),) if error else (),
    )
