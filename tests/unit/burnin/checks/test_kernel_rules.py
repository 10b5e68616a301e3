"""Kernel-log judgement rules on hand-made lines (formats from the real samples)."""

from __future__ import annotations

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.parsers.xid_catalog import XID_CATALOG
from burnin.result import Action, Severity
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


def xid_line(xid: int) -> str:
    return f"[ 12.5] NVRM: Xid (PCI:0000:9b:00): {xid}, pid=1, name=python3, Ch 00000001\n"


def test_every_catalogued_xid_is_judged_as_the_catalog_says():
    for xid, info in XID_CATALOG.items():
        result = judged(xid_line(xid))
        assert [(f.severity, f.action) for f in result.findings] == [(info.severity, info.action)], xid
        assert result.verdict.value == ("FAIL" if info.severity is Severity.CRITICAL else "WARN"), xid


def test_an_xid_not_in_the_catalog_is_still_a_finding(monkeypatch):
    result = judged(xid_line(999))
    assert result.verdict.value == "WARN"
    assert [(f.severity, f.action) for f in result.findings] == [(Severity.WARNING, Action.MONITOR)]
    assert "not in NVIDIA's Xid catalog" in result.findings[0].message
    # A catalogued Xid taken out of the catalog falls to the same rule, never to silence.
    monkeypatch.delitem(XID_CATALOG, 79)
    result = judged(xid_line(79))
    assert [(f.severity, f.action) for f in result.findings] == [(Severity.WARNING, Action.MONITOR)]
