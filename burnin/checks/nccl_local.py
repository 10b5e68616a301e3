"""gpu stage: an all-reduce across every GPU of the node, over NVLink (nccl-tests, one process).

``all_reduce_perf -b 8 -e 8G -f 2 -g N`` sweeps message sizes up to 8 GiB on the node's N GPUs;
the bus bandwidth of the largest sizes is judged against the profile's single-node floor
(``floors.nccl_busbw_single_node_gbps``: 460 GB/s on 8x H100, docs/reference.md, NCCL), ``#wrong``
and out-of-bounds values are data corruption. The judgement is the nccl stage's
(burnin/checks/nccl.py ``judge_iteration``); what is single-node here is the floor, the cause
named, and the culprit: ``nvidia-smi nvlink -s`` is read right after the run, and a GPU with
NVLinks down or slow is named as the one dragging the all-reduce down.

On AMD (gpu.vendor amd) the same program is rccl-tests' (https://github.com/ROCm/rccl-tests: the
nccl-tests format, RCCL underneath) and the GPUs talk over XGMI: there is no NVLink reading, and a
slow all-reduce points at the XGMI links (amd_xgmi_links in the preflight, RVS pbqt in this stage).

A 1-GPU profile runs it too (``-g 1``): an all-reduce of one rank moves nothing between GPUs
(nccl-tests' busbw factor 2(n-1)/n is 0), so only ``#wrong`` and errors are judged, and the
result says so.
"""

from __future__ import annotations

import statistics

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, section_mark, sections
from burnin.checks.nccl import judge_iteration, text_closed
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.nccl_tests import NcclTestRun, parse_nccl_tests
from burnin.parsers.nvidia_smi import parse_nvlink_status
from burnin.result import Action, Finding, Result, Verdict, critical, info

SWEEP = "-b 8 -e 8G -f 2"  # 8 B to 8 GiB, doubling: the largest sizes are bandwidth-bound
SLOW_CAUSE = "a bad NVLink, NVSwitch or GPU in this node"
SLOW_CAUSE_AMD = "a bad XGMI link or GPU in this node (see amd_xgmi_links and RVS pbqt)"
SLOW_LINK_FRACTION = 0.5  # a link under half the node's typical speed is degraded (as the nvlink check)


@register
class NcclLocal(Check):
    name = "nccl_local"
    stages = ("gpu",)
    judges = ("gpu.count", "gpu.nvlink_links_per_gpu", "floors.nccl_busbw_single_node_gbps")
    description = (
        "all_reduce_perf across the node's GPUs (-g N) over NVLink: busbw at the largest sizes, #wrong"
    )
    timeout_s = 900  # the 8 GiB sweep takes about a minute on 8x H100; NCCL init can take more
    judge_any_rc = True  # nccl-tests exits 1 on #wrong or a failure after printing what happened

    def command(self, profile: Profile) -> str:
        lines = [
            section_mark("nccl"),
            f"NCCL_DEBUG=VERSION all_reduce_perf {SWEEP} -g {profile.gpu.count}",
            "rc=$?",
        ]
        if profile.gpu.nvlink_links_per_gpu > 0:
            lines += [section_mark("nvlink"), "nvidia-smi nvlink -s"]
        return "\n".join([*lines, "exit $rc"])

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        parts = sections(output.stdout)
        # A pasted nccl-tests log (burnin evaluate) has no section marks: it is all nccl-tests.
        text = parts.get("nccl", output.stdout)
        run = parse_nccl_tests(text)
        if run.collective and "all_reduce" not in run.collective:
            raise ParseError(f"{run.collective} output, not all_reduce_perf")
        if run.rows and all(r.redop in (None, "none") for r in run.rows):
            raise ParseError(
                "result rows without a reduction op: all_gather or alltoall, not all_reduce_perf"
            )
        if len(run.hosts) > 1:
            return Result.unknown(
                self.name,
                f"a run across {len(run.hosts)} hosts ({', '.join(run.hosts[:4])}): not one node's "
                "all-reduce (the nccl stage and `burnin evaluate` judge multi-node runs)",
            )
        count = profile.gpu.count
        single_gpu = count == 1
        shape = _shape_problems(run, count)
        # One rank: busbw is 0 by definition, so no floor (0 is never under a floor of 0). A run on
        # another number of GPUs is not held to this node's floor: only #wrong and errors count.
        floor = 0.0 if single_gpu or shape else profile.floors.nccl_busbw_single_node_gbps
        result = judge_iteration(run, floor, rc=output.rc, check=self.name, slow_cause=_slow_cause(profile))
        findings = list(result.findings)
        judged_floor = None if single_gpu or shape else floor
        metrics = {**result.metrics, "floor_gbps": judged_floor, "gpus": len(run.ranks)}
        reasons = [result.reason] if result.reason and result.verdict is Verdict.UNKNOWN else []
        if single_gpu:
            findings.append(
                info(
                    "1 GPU: an all-reduce of one rank moves nothing between GPUs (busbw is 0 by "
                    "definition); it ran to prove CUDA and NCCL work on the GPU, and #wrong was judged"
                )
            )
        reasons += shape
        if run.complete and not text_closed(text):
            reasons.append(
                "the output stops after 'Avg bus bandwidth', before nccl-tests' closing '#': cut short"
            )
        busbw = metrics.get("busbw_gbps")
        if judged_floor and isinstance(busbw, (int, float)) and busbw < judged_floor and "nvlink" in parts:
            findings += _culprits(parts["nvlink"], profile.gpu.nvlink_links_per_gpu)
        return Result.judged(self.name, findings, metrics, incomplete="; ".join(reasons))


def _slow_cause(profile: Profile) -> str:
    return SLOW_CAUSE_AMD if profile.gpu.vendor == "amd" else SLOW_CAUSE


def _shape_problems(run: NcclTestRun, count: int) -> list[str]:
    """A run that is not one node's N GPUs is not this check's to pass."""
    problems = []
    if run.ranks and len(run.ranks) != count:
        problems.append(f"the all-reduce ran on {len(run.ranks)} GPU(s), the profile has {count}")
    if not run.ranks:
        problems.append("no '# Using devices' rank lines: which GPUs ran is unknown")
    return problems


def _culprits(nvlink_text: str, want: int) -> list[Finding]:
    """Name the GPUs whose NVLinks are down or slow in ``nvidia-smi nvlink -s``; if none, say that
    the per-GPU view cannot tell which part of the fabric is slow."""
    try:
        status = parse_nvlink_status(nvlink_text)
    except ParseError as exc:
        return [info(f"nvidia-smi nvlink -s after the run could not be read ({exc}): no GPU named")]
    speeds = [link.speed_gbps for g in status.gpus for link in g.links if link.speed_gbps]
    typical = statistics.median(speeds) if speeds else None
    named: list[Finding] = []
    for g in status.gpus:
        up = [link for link in g.links if not link.inactive and link.speed_gbps]
        down = sorted({link.number for link in g.links if link.inactive or not link.speed_gbps})
        slow = [
            link
            for link in up
            if typical and link.speed_gbps and link.speed_gbps < SLOW_LINK_FRACTION * typical
        ]
        if len(up) >= want and not slow and not g.all_inactive:
            continue
        parts = []
        if len(up) < want or g.all_inactive:
            parts.append(
                f"{len(up)} of {want} NVLinks active"
                + (f" (down: {', '.join(map(str, down))})" if down else "")
            )
        if slow:
            parts.append(f"{len(slow)} NVLink(s) below half the typical {typical:g} GB/s")
        subject = f"GPU {g.index}"
        named.append(
            critical(
                f"{subject} drags the all-reduce down: {'; '.join(parts)} (nvidia-smi nvlink -s after the run)",
                Action.RMA,
                "; ".join(f"Link {link.number}: {link.speed_gbps} GB/s" for link in slow[:6])
                or f"{subject}: {g.name}",
                subject,
            )
        )
    if named or not status.gpus:
        return named
    return [
        info(
            "nvidia-smi nvlink -s shows every NVLink of every GPU up at full speed: the per-GPU view "
            "cannot tell which GPU or NVSwitch is slow (nvbandwidth -t device_to_device_memcpy_read_ce "
            "shows the slow pair)"
        )
    ]
