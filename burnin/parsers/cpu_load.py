"""A sustained CPU load and what the kernel says about it (pure): the cpu_throttle check's parts.

- Thermal throttle counters, as ``grep -H . /sys/devices/system/cpu/cpu*/thermal_throttle/*_throttle_count``
  prints them: ``/sys/devices/system/cpu/cpu12/thermal_throttle/core_throttle_count:3``. The
  kernel (arch/x86/kernel/cpu/mce/therm_throt.c) counts each time a core or its package crossed
  its thermal limit (PROCHOT); the files exist on Intel CPUs with the thermal-throttle feature
  and not in VMs or on AMD CPUs.
- Clock samples: lines ``khz V V ...``, one per sample, the ``scaling_cur_freq`` of every CPU
  (kHz). ``khz`` alone: the CPUs have no cpufreq files (a VM).
- stress-ng ``--metrics-brief``: its ``metrc:`` (0.15+) or ``info:`` table row of the stressor,
  the ``successful run completed`` line, and the exit status the command appends
  (``stress-ng exit status N``).

Samples: tests/fixtures/samples/cpu_throttle_* and stress_ng_* (their rows in index.tsv).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from burnin.parsers._common import number, parser, split_lines
from burnin.parsers.errors import ParseError

_COUNTER = re.compile(r"^/sys/devices/system/cpu/cpu(\d+)/thermal_throttle/(\w+_throttle_count):(\d+)$")
_MAX_COUNT = float(1 << 64)
_MAX_KHZ = 1e8  # 100 GHz: no CPU; above it is not a clock


@parser
def parse_throttle_counts(text: str) -> dict[tuple[int, str], int]:
    """(cpu, counter name) -> count. No lines at all: {} (the counters do not exist)."""
    counts: dict[tuple[int, str], int] = {}
    for line in split_lines(text):
        line = line.strip()
        if not line:
            continue
        match = _COUNTER.match(line)
        if not match:
            raise ParseError(f"not a thermal_throttle counter line: {line[:120]!r}")
        key = (int(match.group(1)), match.group(2))
        if key in counts:
            raise ParseError(f"cpu{key[0]} {key[1]} listed twice")
        counts[key] = int(number(match.group(3), f"cpu{key[0]} {key[1]}", maximum=_MAX_COUNT))
    return counts


@parser
def parse_clock_samples(text: str) -> list[list[float]]:
    """Each sample's CPU clocks in MHz; a sample with no values (no cpufreq files) is []."""
    samples = []
    for line in split_lines(text):
        fields = line.split()
        if not fields:
            continue
        if fields[0] != "khz":
            raise ParseError(f"not a clock sample line: {line[:120]!r}")
        samples.append([number(v, "scaling_cur_freq", maximum=_MAX_KHZ) / 1000 for v in fields[1:]])
    return samples


@dataclass(frozen=True)
class StressNgRun:
    stressor: str  # 'cpu'
    bogo_ops: float | None  # None: the metrics row is missing (no --metrics-brief, or cut)
    real_time_s: float | None
    bogo_ops_per_s: float | None  # real time
    completed: bool  # 'successful run completed'
    exit_status: int | None  # from the line the command appends; None: not there
    failure: str  # the first 'fail:' or 'error:' line, if any


_ROW = re.compile(
    r"^stress-ng: (?:metrc|info):\s+\[\d+\] (\w+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$"
)
_FAIL = re.compile(r"^stress-ng: (?:fail|error):\s+(?:\[\d+\] )?(.+)$")


@parser
def parse_stress_ng_brief(text: str) -> StressNgRun:
    lines = split_lines(text)
    if not any(line.startswith("stress-ng") for line in lines):
        raise ParseError("not stress-ng output: no 'stress-ng:' line")
    row = None
    failure = ""
    exit_status = None
    for line in lines:
        match = _ROW.match(line)
        if match and row is None:
            row = match
        fail = _FAIL.match(line)
        if fail and not failure:
            failure = fail.group(1).strip()[:200]
        status = re.fullmatch(r"stress-ng exit status (\d+)", line.strip())
        if status:
            exit_status = int(status.group(1))
    return StressNgRun(
        stressor=row.group(1) if row else "",
        bogo_ops=number(row.group(2), "stress-ng bogo ops", maximum=1e20) if row else None,
        real_time_s=number(row.group(3), "stress-ng real time", maximum=1e8) if row else None,
        bogo_ops_per_s=number(row.group(6), "stress-ng bogo ops/s", maximum=1e20) if row else None,
        completed=any("successful run completed" in line for line in lines),
        exit_status=exit_status,
        failure=failure,
    )
