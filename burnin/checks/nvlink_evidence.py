"""``nvidia-smi nvlink -e`` judged offline (burnin evaluate): one reading of each link's replay,
recovery and CRC error counters.

A single reading counts errors since the driver loaded or the counters were last reset
(``nvidia-smi nvlink -r``), not over a known interval, so it cannot give the rate DCGM's health
watch judges: a non-zero count is a warning, never a failure. nvidia-smi's error-only answers (a
GPU lost, no driver) fail as for every check reading nvidia-smi (burnin/checks/gpu_smi_failure.py). `burnin watch` reads the counters
every interval and fails on their rise (docs/in-service.md, "The resident watcher").
"""

from __future__ import annotations

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput
from burnin.checks.gpu_smi_failure import smi_failure_result
from burnin.checks.registry import register
from burnin.parsers.nvlink_errors import counter_kind, parse_nvlink_errors
from burnin.result import Action, Finding, Result, warning


@register
class NvlinkCounters(Check):
    name = "nvlink_counters"
    stages = ()  # no stage: judged offline only; burnin watch judges the rise in service
    reads = ("nvidia-smi nvlink -e",)
    description = "nvidia-smi nvlink -e: replay, recovery and CRC errors of each link (one read: warnings)"
    whole_at_line_ends = True  # GPU blocks with no count and no end (burnin.checks.base.judge)

    def command(self, profile: Profile) -> str:
        return "nvidia-smi nvlink -e"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        if failed := smi_failure_result(self.name, output):
            return failed
        errors = parse_nvlink_errors(output.stdout)
        findings: list[Finding] = []
        judged = 0
        for gpu in errors.gpus:
            for (link, name), value in sorted(gpu.counters.items()):
                if counter_kind(name) is None:
                    continue
                judged += 1
                if value > 0:
                    subject = f"NVLink GPU {gpu.gpu} link {link}"
                    findings.append(
                        warning(
                            f"{subject}: {name} = {value} since the driver loaded or the counters were "
                            "reset: one reading is no rate (burnin watch judges the rise)",
                            Action.MONITOR,
                            f"Link {link}: {name}: {value}",
                            subject,
                        )
                    )
        incomplete = (
            "" if judged else "no replay, recovery or CRC counter to judge (other counters are not judged)"
        )
        return Result.judged(
            self.name, findings, {"gpus": len(errors.gpus), "counters": judged}, incomplete=incomplete
        )
