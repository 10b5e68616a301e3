"""A result judged on an output whose middle was cut (bringup/local/capture.py): what it may claim.

Pure judging (layer 1, docs/architecture.md): the runner, `burnin rejudge` and the nccl
stage's record replay (burnin.checks.nccl_replay) all apply it.
"""

from __future__ import annotations

from burnin.result import Action, Finding, Result, Severity, Verdict


def told_of_cut(result: Result, cut: str) -> Result:
    """A result judged on an output whose middle was not kept: a failure the kept part shows
    stands; anything else is UNKNOWN (the part not kept may hold what the check looks for)."""
    finding = Finding(f"{cut}; the part not kept was not judged", Severity.WARNING, Action.MONITOR)
    findings = (*result.findings, finding)
    if result.verdict is Verdict.FAIL:
        return Result(result.check, result.verdict, result.metrics, findings, result.reason)
    why = f"{cut}: the part not kept may hold what the check looks for"
    reason = f"{why}; {result.reason}" if result.reason else why
    return Result(result.check, Verdict.UNKNOWN, result.metrics, findings, reason)
