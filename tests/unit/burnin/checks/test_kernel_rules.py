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


# NVLink5 Xids (144-150) print whether the error is fatal; NVIDIA's Xid 144-150 decode gives the
# non-fatal ones no reset (IGNORE, or an Xid 154 evaluation) and the fatal ones RESET_GPU.
NVLINK5_NONFATAL = (
    "NVRM: Xid (PCI:0018:01:00): 145, pid=876767, name=ray::WorkerDict, RLW_RXPIPE Nonfatal XC0 i0 Link 13 "
    "(0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)\n"
)
NVLINK5_FATAL = (
    "NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 08 "
    "(0x004505c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n"
)


def test_a_nonfatal_nvlink5_xid_is_a_warning_to_watch() -> None:
    result = judged(NVLINK5_NONFATAL * 3)
    assert result.verdict.value == "WARN"
    assert [(f.severity, f.action) for f in result.findings] == [(Severity.WARNING, Action.MONITOR)]
    assert "non-fatal" in result.findings[0].message and result.findings[0].message.endswith("(x3)")


def test_a_fatal_nvlink5_xid_needs_the_gpu_reset() -> None:
    result = judged(NVLINK5_FATAL)
    assert result.verdict.value == "FAIL"
    assert [(f.severity, f.action) for f in result.findings] == [(Severity.CRITICAL, Action.RESET_GPU)]


def test_a_fatal_nvlink5_xid_after_a_nonfatal_one_on_the_same_gpu_is_not_hidden() -> None:
    result = judged(NVLINK5_NONFATAL.replace(": 145,", ": 149,") + NVLINK5_FATAL)
    assert result.verdict.value == "FAIL"
    assert sorted((f.severity.value, f.action.value) for f in result.findings) == [
        ("critical", "RESET_GPU"),
        ("warning", "MONITOR"),
    ]


def test_an_nvlink5_xid_that_prints_no_severity_keeps_the_catalog_verdict() -> None:
    result = judged(xid_line(149))
    info = XID_CATALOG[149]
    assert [(f.severity, f.action) for f in result.findings] == [(info.severity, info.action)]


def test_the_printed_word_counts_only_for_the_nvlink5_xids() -> None:
    line = "NVRM: Xid (PCI:0000:9b:00): 79, pid=1, name=x, Nonfatal GPU has fallen off the bus.\n"
    assert [(f.severity, f.action) for f in judged(line).findings] == [(Severity.CRITICAL, Action.REBOOT)]


def test_an_nvlink5_line_cut_before_its_severity_word_is_no_failure() -> None:
    # The last line without a newline may be cut (docs/burnin.md, "A cut output"): cut before
    # 'Nonfatal' it cannot fail, as the whole line would not.
    boot = "[    0.000000] Linux version 6.8.0-138-generic\n"
    whole = NVLINK5_NONFATAL.rstrip("\n")
    for cut in (whole[: whole.index("Nonfatal") + 3], whole[: whole.index("RLW_RXPIPE") + 4]):
        result = judged(boot + cut)
        assert result.verdict.value == "WARN", (cut, result.to_dict())
    # A whole line that prints no severity keeps the catalog's verdict: a GPU reset.
    assert judged(boot + whole[: whole.index(" Nonfatal")] + "\n").verdict.value == "FAIL"
    # Cut after 'F' of 'Fatal' it shows the failure.
    fatal = NVLINK5_FATAL.rstrip("\n")
    assert judged(boot + fatal[: fatal.index("Fatal") + 2]).verdict.value == "FAIL"
