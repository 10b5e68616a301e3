"""One nccl-tests output (text or ``-J`` JSON) judged offline (burnin evaluate), as the nccl stage
judges one iteration (burnin.checks.nccl.judge_iteration): bus bandwidth at the largest sizes
against the profile's floor, ``#wrong``, out-of-bounds values, test failures, and a run cut
before its footer or its closing '#'.

The floor is the single-node one (NVLink) when every rank is on one host and the multi-node one
(network) otherwise, told from the ``# Rank N ... on <host>`` lines. Output without rank lines
cannot say which: its bandwidth is not judged (UNKNOWN unless something else fails it).
"""

from __future__ import annotations

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput
from burnin.checks.nccl import busbw_floor, judge_iteration, text_closed
from burnin.checks.registry import register
from burnin.parsers.nccl_tests import parse_nccl_tests
from burnin.result import Result, Verdict


@register
class NcclTestsOutput(Check):
    name = "nccl_tests"
    stages = ()  # no stage: judged offline only (burnin evaluate); the nccl stage launches its own runs
    reads = ("nccl-tests",)
    judges = ("floors.nccl_busbw_single_node_gbps", "floors.nccl_busbw_multi_node_gbps")
    description = (
        "nccl-tests output: busbw of the largest sizes against the single- or multi-node floor, #wrong"
    )
    judge_any_rc = True

    def command(self, profile: Profile) -> str:
        return "all_reduce_perf -b 8 -e 8G -f 2 -g 8"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        run = parse_nccl_tests(output.stdout)
        hosts = run.hosts
        # The floors are all_reduce_perf figures (bringup/profiles/model.py): another collective
        # (all_gather, alltoall) is judged for errors and wrong elements, not held to them.
        other = run.is_all_reduce is False
        floor = busbw_floor(profile, len(hosts)) if hosts and not other else None
        result = judge_iteration(run, floor, rc=output.rc, check=self.name)
        metrics = {**result.metrics, "nodes": len(hosts) or None, "floor": _floor_name(len(hosts))}
        if run.format == "text" and run.complete and not text_closed(output.stdout):
            return Result.judged(
                self.name,
                result.findings,
                metrics,
                incomplete="the output ends before nccl-tests' closing '#' line: it was cut short",
            )
        if other:
            metrics["floor"] = None
            if result.verdict in (Verdict.PASS, Verdict.WARN):
                return Result.judged(self.name, result.findings, metrics, not_covered=self.judges)
        if floor is None and result.verdict in (Verdict.PASS, Verdict.WARN) and run.rows:
            return Result.judged(
                self.name,
                result.findings,
                metrics,
                incomplete="no '# Rank N ... on <host>' lines: single- or multi-node cannot be told, so the "
                "bandwidth has no floor",
            )
        return Result(self.name, result.verdict, metrics, result.findings, result.reason)


def _floor_name(nodes: int) -> str | None:
    if not nodes:
        return None
    return "single-node (NVLink)" if nodes == 1 else f"multi-node ({nodes} nodes)"
