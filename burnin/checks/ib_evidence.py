"""InfiniBand tool outputs judged offline (burnin evaluate): one perftest run, one perfquery read.

perftest (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw``; text or ``--out_json``): the bandwidth
of the largest message size against the ib stage's per-port floor, ``floors.ib_write_bw_fraction``
x ``ib.rate_gbps`` per direction (a bidirectional test reports both directions: half of it is
compared, and ``floors.ib_write_bw_bidir_gbps`` holds the sum when set); a run from GPU memory
(``--use_cuda``: its CUDA lines say so) is held to ``floors.ib_gdr_write_fraction`` instead. RDMA read runs below
write on a healthy link (outstanding reads; 329 against 392 Gb/s on the same NDR link, the
perftest rows of tests/fixtures/samples/index.tsv), and the profile has no read floor: a read below the write floor is a warning. One run
cannot say which end is at fault; the ib stage pairs ports across nodes to tell. A ``-a`` sweep
cut before its end never reached the large sizes: UNKNOWN. The ``--out_json`` file does not say
its unit; the message rate does (BW = MsgRate x MsgSize), so the unit is read from it.

perfquery (``-x``, ``-E``): a single read counts errors since the counters were last cleared, not
during a test, so non-zero error counters are warnings (clear with ``perfquery -R``, load, read
again); the ib stage diffs them around its load and fails on a rise.
"""

from __future__ import annotations

import re
from typing import Any

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput
from burnin.checks.ib_load import floor_gbps
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.perfquery import ERROR_COUNTERS, is_saturated, parse_perfquery
from burnin.parsers.perftest import (
    GBITS,
    PerftestReport,
    classify_problem,
    parse_perftest,
    parse_perftest_json,
)
from burnin.result import Action, Finding, Result, critical, info, warning

_KNOWN_COUNTERS = {
    *ERROR_COUNTERS,
    "PortSelect",
    "CounterSelect",
    "PortXmitData",
    "PortRcvData",
    "PortXmitWait",
}
_ROW_RE = re.compile(r"^\s*\d+\s+\d+\s+[\d.]")
_DASHES_RE = re.compile(r"^\s*-{20,}\s*$")


def _json_report(text: str) -> PerftestReport:
    """The --out_json report, its unit told by the message rate (Mpps x bytes)."""
    report = parse_perftest_json(text, unit="MiB/sec")  # the wider bound: the figures as written
    for unit, per_mpps_byte in ((GBITS, 0.008), ("MiB/sec", 1e6 / 1048576)):
        rows = [r for r in report.complete_rows if r.msg_rate_mpps]
        if rows and all(
            abs((r.bw_average or 0) - r.msg_rate_mpps * r.size * per_mpps_byte) <= 0.1 * (r.bw_average or 1)
            for r in rows
            if r.msg_rate_mpps is not None
        ):
            return parse_perftest_json(text, unit=unit)
    raise ParseError(
        "perftest --out_json: the bandwidth unit cannot be told (BW_average does not match MsgRate)"
    )


def _table_cut(text: str) -> bool:
    """The last result table has rows but no closing dashes after them: the capture was cut."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    last_row = max((i for i, ln in enumerate(lines) if _ROW_RE.match(ln)), default=None)
    if last_row is None:
        return False
    return not any(_DASHES_RE.match(ln) for ln in lines[last_row + 1 :])


def _judge_report(report: PerftestReport, floor: float, bidir_floor: float | None) -> list[Finding]:
    total = report.average_gbps()
    test = report.test or "perftest"
    if total is None:
        return []
    largest = max(r.size for r in report.complete_rows)
    per_dir = round(total / 2, 3) if report.bidirectional else total
    where = f"{report.device or 'the HCA'} ({test}, {largest} B messages)"
    evidence = f"{test}: BW average {total:g} Gb/s at {largest} B" + (
        " (both directions)" if report.bidirectional else ""
    )
    findings: list[Finding] = []
    if per_dir < floor:
        message = f"{where}: {per_dir:g} Gb/s per direction, below the floor of {floor:g} Gb/s"
        if "read" in test.lower():
            findings.append(
                warning(
                    message + " (the floor is RDMA write's; reads run lower on a healthy link)",
                    Action.MONITOR,
                    evidence,
                    report.device or "",
                )
            )
        else:
            findings.append(
                critical(
                    message + ": this port, its cable or the far end (pair it across nodes to tell)",
                    Action.REPLACE_CABLE,
                    evidence,
                    report.device or "",
                )
            )
    if report.bidirectional and bidir_floor and total < bidir_floor:
        findings.append(
            critical(
                f"{where}: {total:g} Gb/s both directions, below the bidirectional floor of {bidir_floor:g} Gb/s",
                Action.REPLACE_CABLE,
                evidence,
                report.device or "",
            )
        )
    if report.link_type and report.link_type.lower().startswith("ether"):
        findings.append(info(f"{where}: a RoCE (Ethernet) link, judged against the InfiniBand floor"))
    return findings


@register
class PerftestBandwidth(Check):
    name = "perftest_bw"
    stages = ()  # no stage: judged offline only (burnin evaluate); the ib stage pairs ports itself
    reads = ("ib_write_bw / ib_read_bw (perftest)",)
    judges = (
        "ib.rate_gbps",
        "floors.ib_write_bw_fraction",
        "floors.ib_write_bw_bidir_gbps",
        "floors.ib_gdr_write_fraction",
    )
    description = "ib_write_bw / ib_read_bw / ib_send_bw output: bandwidth at the largest size against the per-port floor"
    judge_any_rc = True

    def command(self, profile: Profile) -> str:
        return "ib_write_bw -d mlx5_0 --report_gbits -s 8388608 <server>"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        text = output.stdout
        floor = floor_gbps(profile.floors.ib_write_bw_fraction, profile.ib.rate_gbps)
        bidir_floor = profile.floors.ib_write_bw_bidir_gbps
        gpu: dict[str, Any] = {}
        if text.lstrip().startswith("{"):
            reports, problems = [_json_report(text)], ()
        else:
            parsed = parse_perftest(text)
            reports, problems = list(parsed.reports), parsed.problems
            if parsed.cuda_device is not None:  # --use_cuda: GPU memory, held to its own floor
                gpu = {"cuda_device": parsed.cuda_device, "dmabuf": parsed.cuda_dmabuf}
                floor = floor_gbps(profile.floors.ib_gdr_write_fraction, profile.ib.rate_gbps)
        metrics: dict[str, Any] = {
            "floor_gbps": floor,
            "reports": [
                {"test": r.test, "device": r.device, "role": r.role, "gbps": r.average_gbps()}
                for r in reports
            ],
        }
        findings: list[Finding] = []
        if gpu:
            metrics["gpu_memory"] = gpu
            how = " through DMA-BUF" if gpu["dmabuf"] else ""
            findings.append(
                info(
                    f"loaded from GPU {gpu['cuda_device']}'s memory{how} (GPUDirect RDMA, --use_cuda): "
                    f"judged against floors.ib_gdr_write_fraction ({floor:g} Gb/s)"
                )
            )
        for line in dict.fromkeys(p for p in problems if classify_problem(p) == "link"):
            findings.append(critical(f"perftest: {line}", Action.REPLACE_CABLE, line))
        cut = not text.lstrip().startswith("{") and _table_cut(text)
        for report in reports if not cut else ():  # a cut sweep never reached its large sizes
            findings += _judge_report(report, floor, bidir_floor)
        measured = [r for r in reports if r.average_gbps() is not None]
        incomplete = ""
        if cut:
            incomplete = "the result table ends without its closing line: the output was cut short"
        elif not measured:
            run = [p for p in problems if classify_problem(p) == "run"]
            incomplete = f"nothing measured: {run[0]}" if run else "nothing measured: no complete result row"
        return Result.judged(self.name, findings, metrics, incomplete=incomplete)


@register
class PerfqueryCounters(Check):
    name = "perfquery_counters"
    stages = ()  # no stage: judged offline only (burnin evaluate); the ib stage diffs counters around its load
    reads = ("perfquery",)
    description = "perfquery -x / -E: error counters of each port (a single read: warnings, not a rise)"
    whole_at_line_ends = True  # a list with no count and no end (burnin.checks.base.judge)

    def command(self, profile: Profile) -> str:
        return "perfquery -x"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        ports = parse_perfquery(output.stdout)
        # 'Name: value' lines of other tools (ibstat's 'Rate: 400') read as counters: perfquery's
        # blocks hold the IBA counters by their names.
        if not any(_KNOWN_COUNTERS & set(p.counters) for p in ports):
            raise ParseError(
                "not perfquery output: no port counter it prints (PortSelect, PortXmitData, ...)"
            )
        findings: list[Finding] = []
        for port in ports:
            subject = f"LID {port.lid} port {port.port}"
            for name, value in port.counters.items():
                if not (name in ERROR_COUNTERS or name.endswith(("Errors", "Discards", "Dropped"))):
                    continue
                evidence = f"{name}: {value}"
                if is_saturated(name, value):
                    findings.append(
                        warning(
                            f"{subject}: {name} is at its maximum ({value}): clear it (perfquery -R) and re-test",
                            Action.MONITOR,
                            evidence,
                            subject,
                        )
                    )
                elif value > 0:
                    findings.append(
                        warning(
                            f"{subject}: {name} = {value} since the counters were last cleared: clear them "
                            "(perfquery -R), load the link, and read again (the ib stage does)",
                            Action.MONITOR,
                            evidence,
                            subject,
                        )
                    )
        metrics = {"ports": [{"lid": p.lid, "port": p.port, "counters": len(p.counters)} for p in ports]}
        return Result.judged(self.name, findings, metrics)
