"""sysbench 1.0's `memory` test output (pure): the memory bandwidth the host stage judges.

sysbench prints its options, then ``Total operations: N (R per second)`` and
``X MiB transferred (Y MiB/sec)``, then general statistics (``total time``). Only a run that
got as far as the transfer line has a figure; a ``FATAL:`` line (a bad option, an allocation
that failed) or an output cut before it is a ParseError, so the check is UNKNOWN.

Samples: tests/fixtures/samples/sysbench_memory_* (their rows in index.tsv).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from burnin.parsers._common import number, parser
from burnin.parsers.errors import ParseError

MIB = 1 << 20
_MAX_MIB_S = 1e9  # a petabyte per second: no host's memory; anything above is not a measurement

_BANNER = re.compile(r"^sysbench (\S+)", re.MULTILINE)
_FATAL = re.compile(r"^FATAL: (.+)$", re.MULTILINE)
_TEST = re.compile(r"^Running memory speed test", re.MULTILINE)
_THREADS = re.compile(r"^Number of threads: (\d+)\s*$", re.MULTILINE)
_OPTION = re.compile(r"^\s+(block size|total size|operation|scope): (\S+)\s*$", re.MULTILINE)
_TRANSFERRED = re.compile(r"^([\d.]+) MiB transferred \(([\d.]+) MiB/sec\)\s*$", re.MULTILINE)
_TOTAL_TIME = re.compile(r"^\s+total time:\s+([\d.]+)s\s*$", re.MULTILINE)
_EVENTS = re.compile(r"^\s+total number of events:\s+(\d+)\s*$", re.MULTILINE)
# The report's last line, whole: sysbench 1.0 prints it "%.4f/%.2f" (every capture here), so a
# line cut short, even by one digit, is seen: without it the output was cut and must not pass.
_LAST = re.compile(r"^\s+execution time \(avg/stddev\):\s+\d+\.\d{4}/\d+\.\d{2}\s*$", re.MULTILINE)


@dataclass(frozen=True)
class SysbenchMemory:
    version: str  # '1.0.20'
    threads: int
    block_kib: int  # each thread's buffer with scope local, the one shared buffer with global
    operation: str  # 'read', 'write' or 'none'
    scope: str  # 'local' or 'global'
    mib_transferred: float
    mib_per_s: float
    total_time_s: float
    events: int

    @property
    def gb_per_s(self) -> float:
        """The bandwidth in GB/s (10^9 bytes), the unit of the profile's floor."""
        return self.mib_per_s * MIB / 1e9


@parser
def parse_sysbench_memory(text: str) -> SysbenchMemory:
    banner = _BANNER.search(text)
    if not banner:
        raise ParseError("not sysbench output: no 'sysbench VERSION' banner")
    fatal = _FATAL.search(text)
    if fatal:
        raise ParseError(f"sysbench failed: {fatal.group(1).strip()[:160]}")
    if not _TEST.search(text):
        raise ParseError("sysbench output, but not of the memory test")
    options = {name: value for name, value in _OPTION.findall(text)}
    missing = [k for k in ("block size", "operation", "scope") if k not in options]
    if missing:
        raise ParseError(f"sysbench memory: no {', '.join(missing)} line")
    block = re.fullmatch(r"(\d+)KiB", options["block size"])
    if not block:
        raise ParseError(f"sysbench memory: block size {options['block size']!r} is not N KiB")
    threads = _THREADS.search(text)
    if not threads:
        raise ParseError("sysbench memory: no 'Number of threads' line")
    moved = _TRANSFERRED.findall(text)
    if len(moved) != 1:
        raise ParseError(
            "sysbench memory: no 'MiB transferred' line: the run did not finish"
            if not moved
            else "sysbench memory: more than one 'MiB transferred' line"
        )
    total_time = _TOTAL_TIME.search(text)
    events = _EVENTS.search(text)
    if not total_time or not events or not _LAST.search(text):
        raise ParseError(
            "sysbench memory: its statistics end early (no 'execution time'): the output is cut short"
        )
    return SysbenchMemory(
        version=banner.group(1),
        threads=int(number(threads.group(1), "sysbench threads", minimum=1, maximum=1 << 20)),
        block_kib=int(number(block.group(1), "sysbench block size", minimum=1, maximum=1 << 40)),
        operation=options["operation"],
        scope=options["scope"],
        mib_transferred=number(moved[0][0], "sysbench MiB transferred", maximum=1e15),
        mib_per_s=number(moved[0][1], "sysbench MiB/sec", maximum=_MAX_MIB_S),
        total_time_s=number(total_time.group(1), "sysbench total time", maximum=1e9),
        events=int(number(events.group(1), "sysbench events", maximum=1e18)),
    )
