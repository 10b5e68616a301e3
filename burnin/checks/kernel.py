"""The kernel log scan (preflight): Xid and SXid lines with what to do about each, AER errors,
GPUs fallen off the bus, IB link flaps and cable events, host hardware errors (their catalog:
burnin/checks/host_error_catalog.py), and unknown error lines.

What each Xid means and needs comes from NVIDIA's whole Xid catalog, each resolution mapped to a
severity and an action by one rule (burnin/parsers/xid_catalog.py). "limited by ... link"
lines belong to the PCIe stage, which judges them against the live link.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, Service
from burnin.checks.host_error_catalog import host_error_findings
from burnin.checks.registry import register
from burnin.parsers.kernel_log import (
    AerEvent,
    FallenOffBusEvent,
    HostErrorEvent,
    LinkFlapEvent,
    ModuleEvent,
    SuspiciousEvent,
    SxidEvent,
    XidEvent,
    read_kernel_log,
)
from burnin.parsers.xid_catalog import CATALOG_VERSION, XID_CATALOG, judged
from burnin.result import Action, Finding, Result, Severity, critical, info, warning


@dataclass(frozen=True)
class XidRule:
    severity: Severity
    action: Action
    advice: str


# NVSwitch SXids known harmless on a healthy fabric (one operator's whitelist).
BENIGN_SXIDS = frozenset({22013})
# Kernel lines that say "error" on healthy nodes.
BUILTIN_ALLOWLIST = (
    r"ACPI (BIOS )?Error",
    r"ACPI Error: .*AE_NOT_FOUND",
    r"ERST: Failed to get Error Log Address Range",
    r"Error parsing PCC subspaces",
    r"module verification failed: signature and/or required key missing",
    r"RAS: Correctable Errors collector initialized",
    r"mce: CPU\d* ?supports \d+ MCE banks",  # the machine-check driver's boot lines
    r"mce: CPU\d+: Thermal monitoring enabled",
    r"EDAC .*: ECC is disabled",
    r"failed to load regulatory\.db",
    r"Direct firmware load for .* failed",
)
FLAP_LIMIT = 5  # lost-carrier events that make a port "flapping" in 24 h (docs/reference.md, InfiniBand)


def xid_rule(xid: int, fatal: bool | None = None, may_be_cut: bool = False) -> XidRule:
    """What NVIDIA's catalog, mapped by burnin/parsers/xid_catalog.py, says about an Xid whose
    message printed ``fatal`` ('Fatal'/'Nonfatal', None: neither) on a line that ``may_be_cut`` (the
    log's last, without a newline); one it does not list is still a finding."""
    if (info := judged(xid, fatal, may_be_cut)) is not None:
        return XidRule(info.severity, info.action, info.advice)
    return XidRule(
        Severity.WARNING, Action.MONITOR, f"not in NVIDIA's Xid catalog of {CATALOG_VERSION[:10]}: look it up"
    )


@register
class KernelLog(Check):
    name = "kernel_log"
    stages = ("preflight",)
    service = Service.ALWAYS
    reads = ("dmesg / journalctl -k",)
    judges = ("host.kernel_log_allowlist",)
    description = (
        "kernel log: Xid/SXid, AER, GPUs off the bus, IB link flaps, host hardware errors (EDAC, MCE, "
        "APEI, NVMe, mlx5 health), unknown error lines"
    )
    timeout_s = 30
    whole_at_line_ends = True  # no end of its own (burnin.checks.base.judge)

    def command(self, profile: Profile) -> str:
        return "dmesg --time-format iso"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        allowed = _allowlist(profile.host.kernel_log_allowlist)
        # Text that is not a kernel log is not a clean log. An empty output never
        # gets here (judge: "printed nothing", UNKNOWN), and that is right: dmesg on a healthy
        # node always prints its boot lines, so nothing means a cleared ring buffer
        # (dmesg -C) or a dmesg that could not read it, and a log nobody can see is not clean.
        _, events = read_kernel_log(output.stdout)  # require_kernel_log, then parse_kernel_log
        # One finding per (what, where): a GPU that logged Xid 94 nine times is one finding, "x9".
        grouped: dict[tuple, tuple[Finding, int]] = {}
        xids: Counter[int] = Counter()
        flaps: Counter[str] = Counter()
        host: list[HostErrorEvent] = []
        shapes: dict[str, str | None] = {}
        xid79 = {e.bdf for e in events if isinstance(e, XidEvent) and e.xid == 79}
        classified = {(e.sxid, e.switch) for e in events if isinstance(e, SxidEvent) and e.fatal is not None}
        # The last line without a newline may be cut short (burnin.checks.base judge).
        partial = "" if output.stdout.endswith("\n") else output.stdout.rpartition("\n")[2]

        def add(key: tuple, finding: Callable[[], Finding]) -> None:
            # The finding is made once per key: a log repeats the same error thousands of times.
            first, count = grouped[key] if key in grouped else (finding(), 0)
            grouped[key] = (first, count + 1)

        for e in events:
            if isinstance(e, XidEvent):
                xids[e.xid] += 1
                # A fatal NVLink5 Xid after a non-fatal one on the same GPU is a finding of its own.
                cut = bool(partial) and e.raw.endswith(partial)
                add(("xid", e.xid, e.bdf, e.fatal, cut), lambda e=e, cut=cut: _xid_finding(e, cut))
            elif isinstance(e, SxidEvent) and (e.fatal is not None or (e.sxid, e.switch) not in classified):
                # An SXid prints three lines; only the Fatal/Non-fatal one says which it is.
                add(("sxid", e.sxid, e.switch), lambda e=e: _sxid_finding(e))
            elif isinstance(e, AerEvent) and e.severity is not None:  # None: a recovery line
                add(("aer", e.severity, e.bdf), lambda e=e: _aer_finding(e))
            elif isinstance(e, FallenOffBusEvent) and e.bdf not in xid79:  # Xid 79 already says it
                subject = f"GPU {e.bdf or ''}".strip()
                add(
                    ("off-bus", e.bdf),
                    lambda e=e, subject=subject: critical(
                        f"{subject} has fallen off the bus: reboot; reseat if it recurs",
                        Action.REBOOT,
                        e.raw,
                        subject,
                    ),
                )
            elif isinstance(e, HostErrorEvent):
                host.append(e)
            elif isinstance(e, LinkFlapEvent) and e.state == "down":
                flaps[e.interface] += 1
            elif isinstance(e, ModuleEvent) and e.error:
                where = f"module {e.module}" + (f" ({e.bdf})" if e.bdf else "")
                detail = f"{e.status}" + (f", {e.detail}" if e.detail else "")
                add(
                    ("module", e.bdf, e.module),
                    lambda e=e, where=where, detail=detail: critical(
                        f"transceiver/cable problem on {where}: {detail}", Action.REPLACE_CABLE, e.raw, where
                    ),
                )
            elif isinstance(e, SuspiciousEvent):
                if e.message not in shapes:  # once per message: a log repeats its lines
                    # the same line with other numbers is one finding; an allowed line none
                    shapes[e.message] = None if allowed(e.message) else _NUMBERS.sub("#", e.message.lower())
                if (shape := shapes[e.message]) is not None:
                    add(
                        ("line", shape),
                        lambda e=e: warning(f"kernel: {e.message.strip()[:160]}", Action.MONITOR, e.raw),
                    )
        findings = [_counted(f, n) for f, n in grouped.values()] + host_error_findings(host)
        for iface, count in sorted(flaps.items()):
            if count >= FLAP_LIMIT:
                findings.append(
                    critical(
                        f"{iface} lost carrier {count} times: a flapping link",
                        Action.REPLACE_CABLE,
                        f"{count} x lost carrier on {iface}",
                        iface,
                    )
                )
            else:
                findings.append(warning(f"{iface} lost carrier {count} time(s)", Action.MONITOR, "", iface))
        metrics = {"xids": {str(k): v for k, v in sorted(xids.items())}, "events": len(events)}
        return Result.judged(self.name, findings, metrics)


_NUMBERS = re.compile(r"[0-9a-fx]+")
# The built-in allowlist as one pattern: a line allowed by any of them is allowed by it.
_BUILTIN_ALLOWED = re.compile("|".join(f"(?:{p})" for p in BUILTIN_ALLOWLIST))


def _allowlist(extra: Sequence[str]) -> Callable[[str], bool]:
    """Whether a kernel message is allowed: the built-in patterns, then the profile's (each on its
    own: a profile's pattern may carry its own flags)."""
    own = [re.compile(p) for p in extra]

    def allowed(message: str) -> bool:
        return _BUILTIN_ALLOWED.search(message) is not None or any(p.search(message) for p in own)

    return allowed


def _aer_finding(e: AerEvent) -> Finding:
    where = e.bdf or "a PCIe device"
    if e.severity in ("fatal", "non_fatal"):
        return critical(f"uncorrected ({e.severity}) PCIe AER error at {where}", Action.RESEAT, e.raw, where)
    return warning(f"corrected PCIe AER error at {where}", Action.MONITOR, e.raw, where)


def _counted(finding: Finding, count: int) -> Finding:
    return finding if count == 1 else replace(finding, message=f"{finding.message} (x{count})")


def _xid_finding(e: XidEvent, may_be_cut: bool = False) -> Finding:
    rule = xid_rule(e.xid, e.fatal, may_be_cut)
    name = XID_CATALOG[e.xid].mnemonic if e.xid in XID_CATALOG else "Xid"
    if e.nvlink_unit is not None:
        name += f" ({e.nvlink_unit}, {'fatal' if e.fatal else 'non-fatal'})"
    cause = f" (caused by Xid {e.caused_by_xid})" if e.caused_by_xid else ""
    subject = f"GPU {e.bdf}" if e.bdf else "GPU"
    return Finding(
        f"Xid {e.xid} {name} on {subject}{cause}: {rule.advice}",
        rule.severity,
        rule.action,
        e.raw.strip(),
        subject,
    )


def _sxid_finding(e: SxidEvent) -> Finding:
    if e.fatal:
        return critical(
            f"fatal NVSwitch SXid {e.sxid} on {e.switch}: reboot the node", Action.REBOOT, e.raw, e.switch
        )
    if e.sxid in BENIGN_SXIDS:
        return info(f"SXid {e.sxid} on {e.switch} (known benign)", e.raw, e.switch)
    return warning(f"non-fatal NVSwitch SXid {e.sxid} on {e.switch}", Action.MONITOR, e.raw, e.switch)
