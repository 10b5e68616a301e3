"""Kernel-log judgement rules on hand-made lines (formats from the real samples)."""

from __future__ import annotations

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from tests.unit.burnin.checks.test_samples import PROFILE

SXID_FATAL = (
    "[   38.1] nvidia-nvswitch1: SXid (PCI:0000:05:00.0): 12021, Data {0x0, 0x1}\n"
    "[   38.2] nvidia-nvswitch1: SXid (PCI:0000:05:00.0): 12021, Fatal, Link 12 ingress buffer overflow\n"
    "[   38.3] nvidia-nvswitch1: SXid (PCI:0000:05:00.0): 12021, Severity 1 Engine instance 12 Sub-engine instance 00\n"
)


def judged(text: str):
    return judge(ALL_CHECKS["kernel_log"], CommandOutput(stdout=text), PROFILE)


def test_a_fatal_sxid_triplet_is_one_critical_finding() -> None:
    result = judged(SXID_FATAL)
    assert result.verdict.value == "FAIL"
    assert [(f.severity.value, f.action.value) for f in result.findings] == [("critical", "REBOOT")]


def test_repeated_lines_are_one_finding_with_a_count() -> None:
    line = "[ 10.{n}] NVRM: Xid (PCI:0000:9b:00): 94, pid=1, name=python3, Contained: SM (0x1). RST: No, D-RST: No\n"
    result = judged("".join(line.format(n=n) for n in range(5)))
    assert result.verdict.value == "WARN" and len(result.findings) == 1
    assert result.findings[0].message.endswith("(x5)")


def test_site_allowlist_silences_a_known_line() -> None:
    text = "[ 5.0] foo_driver: firmware error 12, retrying\n"
    assert judged(text).verdict.value == "WARN"
    from bringup.profiles.load import apply_overrides

    allowed = apply_overrides(PROFILE, ("host.kernel_log_allowlist=['foo_driver: firmware error']",))
    assert judge(ALL_CHECKS["kernel_log"], CommandOutput(stdout=text), allowed).verdict.value == "PASS"
