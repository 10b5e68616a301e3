"""What a check concludes: a verdict, metrics, and findings that say what to do (docs/design.md, idea 4).

Pure data. A finding's severity decides the verdict; its action tells the operator (or the
repair workflow) what fixes it. UNKNOWN means the check could not run, timed out or could not
be parsed: it is never a pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Verdict(str, Enum):
    PASS = "PASS"
    WARN = "WARN"
    UNKNOWN = "UNKNOWN"
    FAIL = "FAIL"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        """Worse is higher: FAIL > UNKNOWN > WARN > PASS (UNKNOWN is worse than a warning)."""
        return _RANK[self]


_RANK = {Verdict.PASS: 0, Verdict.WARN: 1, Verdict.UNKNOWN: 2, Verdict.FAIL: 3}


def verdict_of(text: str) -> Verdict:
    """A stored verdict string as a Verdict; anything unexpected is UNKNOWN (never a pass)."""
    try:
        return Verdict(text)
    except ValueError:
        return Verdict.UNKNOWN


# The metric in which a result lists the profile's expectations (dotted fields a check judges:
# "gpu.model") that the output it read does not show, so did not cover (docs/burnin.md, "A PASS
# covers what the output shows").
NOT_COVERED = "not_covered"

# The verdicts a node may pass with: a warning is usable (watch it); UNKNOWN never passes.
PASSING: frozenset[Verdict] = frozenset({Verdict.PASS, Verdict.WARN})


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    """The worst of some verdicts; no verdicts at all is UNKNOWN (nothing was judged)."""
    return max(verdicts, key=lambda v: v.rank, default=Verdict.UNKNOWN)


class Severity(str, Enum):
    INFO = "info"  # recorded, does not change the verdict
    WARNING = "warning"  # WARN: usable, watch it
    CRITICAL = "critical"  # FAIL: keep the node out of the golden set

    def __str__(self) -> str:
        return self.value


class Action(str, Enum):
    """What fixes a finding, roughly in order of cost."""

    MONITOR = "MONITOR"  # nothing to do now; watch the trend
    RECONFIGURE = "RECONFIGURE"  # software or setting (driver pin, service, ECC mode): re-run configure
    UPDATE_FIRMWARE = "UPDATE_FIRMWARE"  # flash a part (BMC, BIOS, VBIOS, HCA) to the version required
    RESET_GPU = "RESET_GPU"  # nvidia-smi -r / GPU reset
    REBOOT = "REBOOT"
    RESEAT = "RESEAT"  # reseat a card, riser or internal cable
    REPLACE_CABLE = "REPLACE_CABLE"
    RMA = "RMA"  # return the part to the vendor

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Finding:
    message: str  # one line a person reads: what is wrong, on what
    severity: Severity
    action: Action
    evidence: str = ""  # the tool output line(s) that show it
    subject: str = ""  # the part: "GPU 3 (0000:9b:00.0)", "mlx5_4 port 1", "/"

    def to_dict(self) -> dict[str, str]:
        return {
            "message": self.message,
            "severity": self.severity.value,
            "action": self.action.value,
            "evidence": self.evidence,
            "subject": self.subject,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        return cls(
            message=str(data.get("message", "")),
            severity=Severity(data.get("severity", "info")),
            action=Action(data.get("action", "MONITOR")),
            evidence=str(data.get("evidence", "")),
            subject=str(data.get("subject", "")),
        )


@dataclass(frozen=True)
class Result:
    check: str
    verdict: Verdict
    metrics: dict[str, Any] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    reason: str = ""  # why it is UNKNOWN (or a one-line summary otherwise)

    @classmethod
    def unknown(cls, check: str, reason: str, metrics: dict[str, Any] | None = None) -> Result:
        return cls(check, Verdict.UNKNOWN, dict(metrics or {}), (), reason)

    @classmethod
    def judged(
        cls,
        check: str,
        findings: Iterable[Finding] = (),
        metrics: dict[str, Any] | None = None,
        *,
        incomplete: str = "",
        not_covered: Iterable[str] = (),
    ) -> Result:
        """The verdict the findings imply; ``incomplete`` (some of it could not be judged) makes
        a result that would otherwise pass or warn UNKNOWN, but never hides a failure.
        ``not_covered``: the profile fields the output did not show (kept in the metrics)."""
        findings = tuple(findings)
        metrics = dict(metrics or {})
        if not_covered := sorted(set(not_covered)):
            metrics[NOT_COVERED] = not_covered
        verdict = Verdict.PASS
        if any(f.severity is Severity.CRITICAL for f in findings):
            verdict = Verdict.FAIL
        elif incomplete:
            verdict = Verdict.UNKNOWN
        elif any(f.severity is Severity.WARNING for f in findings):
            verdict = Verdict.WARN
        return cls(check, verdict, metrics, findings, incomplete)

    @property
    def not_covered(self) -> tuple[str, ...]:
        """The profile's expectations this result did not judge: its output did not show them."""
        return tuple(self.metrics.get(NOT_COVERED) or ())

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "metrics": self.metrics,
            "findings": [f.to_dict() for f in self.findings],
        }


def critical(message: str, action: Action, evidence: str = "", subject: str = "") -> Finding:
    return Finding(message, Severity.CRITICAL, action, evidence.strip(), subject)


def warning(message: str, action: Action = Action.MONITOR, evidence: str = "", subject: str = "") -> Finding:
    return Finding(message, Severity.WARNING, action, evidence.strip(), subject)


def info(message: str, evidence: str = "", subject: str = "") -> Finding:
    return Finding(message, Severity.INFO, Action.MONITOR, evidence.strip(), subject)
