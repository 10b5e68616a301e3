"""`burnin watch`, the resident watcher on the node: follow the kernel log as it is written and
judge each new line with the kernel-log check `burnin health` runs; every interval read the error
counters (IB and PCIe AER in sysfs, NVLink through `nvidia-smi nvlink -e`) and judge their rises as
rates (burnin.service.watch_rates). A FAIL drains the node as
`burnin health` does: the same reason, the same circuit breaker, the same last.json and metrics
(burnin.service.health_run.act_and_keep). docs/in-service.md, "The resident watcher".

Bounded by construction: one line at a time, a line cut at MAX_LINE_BYTES, no text kept after
it is judged (the pending bytes of a line never exceed MAX_LINE_BYTES), and one counter reading
kept. What it costs per line and per hour is measured by benchmarks/watch.py.
"""

from __future__ import annotations

import logging
import os
import re
import select
import shlex
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from burnin.checks import REGISTRY
from burnin.checks.base import CommandOutput
from burnin.parsers import ParseError
from burnin.parsers.nvlink_errors import parse_nvlink_errors
from burnin.parsers.sysfs import parse_aer_counters
from burnin.result import Result, Verdict
from burnin.service.health import KERNEL_CHECK, decide
from burnin.service.health_run import HealthOptions, HealthReport, act_and_keep
from burnin.service.watch_rates import (
    AER_KINDS,
    IB_COUNTERS,
    RateLimits,
    judge_rates,
    nvlink_reading,
    rates_result,
)

log = logging.getLogger(__name__)

# `dmesg --follow-new` (util-linux 2.37+) prints only records logged after it started: the log
# before that is `burnin health`'s, through its cursor (docs/in-service.md).
DEFAULT_SOURCE = "dmesg --follow-new --time-format iso"
MAX_LINE_BYTES = 4096  # a kernel record is at most 1024 bytes of text (printk's LOG_LINE_MAX)
READ_BYTES = 65536
HOLD_OFF_S = 300.0  # after acting for a check, the same check acts again only this much later
# Seconds between counter readings: gpud polls its components every 30-60 s
# (https://github.com/leptonai/gpud).
INTERVAL_S = 30.0
RESTART_S = 5.0  # a source that ended is started again this much later
NVLINK_COMMAND = "nvidia-smi nvlink -e"
# A wedged nvidia-smi holds the loop (and the kernel-log lines, buffered in the pipe) this long at
# most per reading; a healthy one answers in well under a second.
NVLINK_TIMEOUT_S = 5.0
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\S+|\[\s*\d+\.\d+\]) ")


class LineSplitter:
    """Bytes as a pipe gives them -> whole lines, never holding more than ``cap`` bytes: a line
    longer than that is given cut at ``cap`` and the rest of it dropped."""

    def __init__(self, cap: int = MAX_LINE_BYTES) -> None:
        self.cap = cap
        self.pending = bytearray()
        self.dropping = False  # inside a line already given cut
        self.cut = 0  # lines cut so far

    def feed(self, data: bytes) -> Iterator[str]:
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end]
            start = len(data) if end < 0 else end + 1
            if self.dropping:
                self.dropping = end < 0
                continue
            room = self.cap - len(self.pending)
            self.pending += piece[:room]
            if len(piece) > room:
                self.cut += 1
                self.dropping = end < 0
                yield self._take()
            elif end >= 0:
                yield self._take()

    def _take(self) -> str:
        line = self.pending.decode("utf-8", "replace")
        self.pending.clear()
        return line


class LineJudge:
    """The kernel-log check (burnin/checks/kernel.py) on one record line at a time. A line
    without a stamp continues the record before it and is judged with that record's stamp."""

    def __init__(self, profile: object) -> None:
        check = REGISTRY.get(KERNEL_CHECK)
        assert check is not None
        self.check = check
        self.profile = profile
        self.stamp = ""

    def judge(self, line: str) -> Result | None:
        """The check's result for this line; None when it is not a kernel-log line at all."""
        if not line.strip():
            return None
        m = _STAMP.match(line)
        if m:
            self.stamp = m.group(0)
        elif self.stamp:
            line = self.stamp + line.strip()
        try:
            return self.check.evaluate(CommandOutput(line + "\n"), self.profile)  # type: ignore[arg-type]
        except ParseError:
            return None


def read_counters(sys_root: Path = Path("/")) -> dict[str, int]:
    """This node's error counters (the keys: burnin.service.watch_rates); a file that cannot be
    read is left out (its counter then shows no rise)."""
    out: dict[str, int] = {}
    for path in sorted((sys_root / "sys/class/infiniband").glob("*/ports/*/counters/*")):
        if path.name in IB_COUNTERS:
            try:
                out[f"ib:{path.parents[3].name}/{path.parents[1].name}:{path.name}"] = int(path.read_text())
            except (OSError, ValueError):
                continue
    for kind in AER_KINDS:
        for path in sorted((sys_root / "sys/bus/pci/devices").glob(f"*/aer_dev_{kind}")):
            try:
                counters = parse_aer_counters(path.read_text())
            except (OSError, ParseError, UnicodeDecodeError):
                continue
            total = next((v for k, v in counters.items() if k.startswith("TOTAL_")), None)
            if total is not None:
                out[f"aer:{path.parent.name}:{kind}"] = total
    return out


class NvlinkReader:
    """The NVLink counters of one `nvidia-smi nvlink -e` run (keys: burnin.service.watch_rates).
    A node where it cannot run, times out, fails or prints no counters (no NVLink, MIG, no
    driver) gives none: said once in the log, never a failure; said again after it came back."""

    def __init__(self, command: str = NVLINK_COMMAND, timeout_s: float = NVLINK_TIMEOUT_S) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.unavailable = ""  # why, once said; "" while it answers

    def read(self) -> dict[str, int]:
        try:
            done = subprocess.run(
                shlex.split(self.command),
                capture_output=True,
                text=True,
                errors="replace",
                timeout=self.timeout_s,
                check=False,
            )
            if done.returncode != 0:
                return self._none(
                    f"exit {done.returncode}: {done.stderr.strip()[:200] or done.stdout.strip()[:200]}"
                )
            reading = nvlink_reading(parse_nvlink_errors(done.stdout))
        except subprocess.TimeoutExpired:
            return self._none(f"no answer in {self.timeout_s:g} s")
        except (OSError, ParseError) as exc:
            return self._none(str(exc)[:200])
        if self.unavailable:
            log.warning("NVLink counters: %r answers again", self.command)
        self.unavailable = ""
        return reading

    def _none(self, why: str) -> dict[str, int]:
        if not self.unavailable:
            log.warning("NVLink counters not read (%r: %s); the other counters still are", self.command, why)
        self.unavailable = why
        return {}


@dataclass(frozen=True)
class WatchOptions:
    health: HealthOptions  # the node, profile, state dir, metrics dir, Slurm and breaker settings
    source: str = DEFAULT_SOURCE
    sys_root: Path = Path("/")
    interval_s: float = INTERVAL_S
    hold_off_s: float = HOLD_OFF_S
    nvlink_command: str = NVLINK_COMMAND  # "" reads no NVLink counter


@dataclass
class WatchStats:
    lines: int = 0
    judged: int = 0
    failed: int = 0
    readings: int = 0
    actions: list[str] = field(default_factory=list)  # "<check>: <slurm action>", the latest last


class Watcher:
    """What `burnin watch` does with each line and each counter reading (no I/O of its own
    but the drain): testable with any stream and any readings."""

    def __init__(self, opts: WatchOptions, now: Callable[[], float] = time.monotonic) -> None:
        self.opts = opts
        self.now = now
        self.judge = LineJudge(opts.health.profile)
        self.limits = RateLimits.of(opts.health.profile.watch)
        self.stats = WatchStats()
        self.last_reading: tuple[float, Mapping[str, int]] | None = None
        self.acted_at: dict[str, float] = {}
        self.last_report: HealthReport | None = None

    def line(self, text: str) -> None:
        self.stats.lines += 1
        result = self.judge.judge(text)
        if result is None:
            return
        self.stats.judged += 1
        if result.verdict is Verdict.FAIL:
            self.stats.failed += 1
            self.act(result)

    def reading(self, counters: Mapping[str, int]) -> Result | None:
        """One counter reading; the result of the interval since the last one (None: the first)."""
        at = self.now()
        self.stats.readings += 1
        before, self.last_reading = self.last_reading, (at, dict(counters))
        if before is None:
            return None
        elapsed = at - before[0]
        result = rates_result(judge_rates(before[1], counters, elapsed, self.limits), len(counters), elapsed)
        if result.verdict is Verdict.FAIL:
            self.act(result)
        return result

    def act(self, result: Result) -> None:
        """Drain through health_run, once per check per hold-off (a flood of Xid lines would
        otherwise ask Slurm once a line)."""
        at = self.now()
        since = self.acted_at.get(result.check)
        if since is not None and at - since < self.opts.hold_off_s:
            return
        h = self.opts.health
        report = HealthReport(h.node or _hostname(), h.profile.name, 0.0, time.time())
        report.results.append((result, 0.0))
        report.decision = decide([result], drain_on_unknown=False)
        act_and_keep(report, h)
        self.last_report = report
        self.stats.actions.append(f"{result.check}: {report.slurm_action}")
        log.warning("%s: %s; Slurm: %s", report.node, report.decision.reason, report.slurm_action)
        if not report.slurm_action.startswith("not drained"):  # a Slurm that did not answer: next time
            self.acted_at[result.check] = at


def _hostname() -> str:
    import socket

    return socket.gethostname().split(".")[0]


def run_watch(opts: WatchOptions, stop: Callable[[], bool] = lambda: False) -> WatchStats:
    """Follow the source and read the counters until ``stop()`` (a signal, in service: never)."""
    watcher = Watcher(opts)
    interval = opts.interval_s
    splitter = LineSplitter()
    gpu = opts.health.profile.gpu  # NVLink counters only where NVIDIA GPUs have NVLinks (not MI300X's XGMI)
    has_nvlink = gpu.vendor == "nvidia" and gpu.nvlink_links_per_gpu > 0
    nvlink = NvlinkReader(opts.nvlink_command) if opts.nvlink_command and has_nvlink else None
    proc: subprocess.Popen[bytes] | None = None
    next_read = time.monotonic()
    restart_at = 0.0
    try:
        while not stop():
            now = time.monotonic()
            if proc is None and now >= restart_at:
                proc = _start(opts.source)
                if proc is None:
                    restart_at = now + RESTART_S
            if now >= next_read:
                counters = read_counters(opts.sys_root)
                if nvlink is not None:
                    counters.update(nvlink.read())
                watcher.reading(counters)
                next_read = now + interval
            wait = max(0.0, min(next_read, restart_at if proc is None else next_read) - time.monotonic())
            if proc is None or proc.stdout is None:
                time.sleep(min(wait, 1.0))
                continue
            ready, _, _ = select.select([proc.stdout], [], [], min(wait, 1.0))
            if not ready:
                continue
            data = os.read(proc.stdout.fileno(), READ_BYTES)
            if not data:  # the source ended: a follower never should; start it again, later
                log.warning(
                    "kernel-log source ended (rc %s): starting it again in %g s", proc.wait(), RESTART_S
                )
                proc, restart_at = None, time.monotonic() + RESTART_S
                continue
            for text in splitter.feed(data):
                watcher.line(text)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
    return watcher.stats


def _start(source: str) -> subprocess.Popen[bytes] | None:
    try:
        return subprocess.Popen(shlex.split(source), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError as exc:
        log.warning("cannot start the kernel-log source %r: %s", source, exc)
        return None
