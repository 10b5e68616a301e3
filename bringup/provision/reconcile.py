"""The node's own report against what its BMC said (pure).

A node that phones home tells us what the OS (or the agent ramdisk) sees: its MACs, its SMBIOS
serial and UUID. Discovery recorded what Redfish said. A disagreement is a finding on the node,
never a silent overwrite of the record: a serial that differs means the box that booted is not
the box the BMC describes (swapped cables, a board swap), a MAC Redfish does not list means a
card the BMC does not know about (or a swapped card).

A match needs evidence: the serial AND at least one MAC must agree with discovery. A report
that lacks either, or that discovery recorded nothing to compare with, is a finding (the node
fails with ``provision-mismatch``), never a pass: anyone on the provisioning network can post
a report, and one that says nothing must not become the node's record.
"""

from __future__ import annotations

import re
import uuid as uuidlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# SMBIOS fields that vendors leave unfilled.
PLACEHOLDER_SERIALS = frozenset(
    {
        "",
        "0",
        "0123456789",
        "default string",
        "to be filled by o.e.m.",
        "not specified",
        "system serial number",
        "chassis serial number",
        "none",
        "n/a",
    }
)


@dataclass(frozen=True)
class Finding:
    # serial-mismatch | serial-missing | serial-unverified | mac-mismatch | macs-missing |
    # provisioning-mac-missing
    kind: str
    message: str
    recorded: Any = None
    reported: Any = None

    def record(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "recorded": self.recorded,
            "reported": self.reported,
        }


@dataclass
class Reconciliation:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # worth saying, not a mismatch
    matched: list[str] = field(default_factory=list)  # what was compared and agreed

    @property
    def ok(self) -> bool:
        return not self.findings


def _mac(value: Any) -> str | None:
    digits = re.sub(r"[^0-9a-fA-F]", "", str(value or "")).lower()
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2)) if len(digits) == 12 else None


def _serial(value: Any) -> str | None:
    text = str(value or "").strip()
    return None if text.lower() in PLACEHOLDER_SERIALS else text


def _uuid_forms(value: Any) -> set[str]:
    """A UUID and its mixed-endian twin (SMBIOS 2.6+ stores the first three fields little-endian)."""
    try:
        u = uuidlib.UUID(str(value))
    except ValueError:
        return set()
    return {str(u), str(uuidlib.UUID(bytes_le=u.bytes))}


def reconcile(
    report: Mapping[str, Any],
    *,
    serials: Iterable[str | None],
    macs: Iterable[str],
    provisioning_mac: str | None,
    uuid: str | None = None,
) -> Reconciliation:
    """Compare a node's report with the recorded serial(s), MACs and UUID (pure).

    ``serials``: what discovery recorded (the node's key, the chassis and the system serial);
    the report matches when any serial it gives equals any of them (case-insensitive).
    """
    out = Reconciliation()
    known = {s.upper() for s in (_serial(v) for v in serials) if s}
    reported = [s for s in (_serial(report.get(k)) for k in ("chassis_serial", "serial")) if s]
    if not reported:
        out.findings.append(
            Finding(
                "serial-missing",
                "the node reported no usable serial: its report cannot be matched to the box the BMC describes",
                sorted(known),
                None,
            )
        )
    elif not known:
        out.findings.append(
            Finding(
                "serial-unverified",
                f"discovery recorded no serial to compare with (the node says {reported[0]}): "
                "re-run discovery, or check the BMC's serial",
                None,
                reported,
            )
        )
    elif not any(r.upper() in known for r in reported):
        out.findings.append(
            Finding(
                "serial-mismatch",
                f"the node reports serial {' / '.join(reported)}, Redfish said {' / '.join(sorted(known))}: "
                "is this the box the BMC describes (cabling, a board swap)?",
                sorted(known),
                reported,
            )
        )
    else:
        out.matched.append(f"serial {next(r for r in reported if r.upper() in known)}")

    recorded_macs = {m for m in (_mac(v) for v in macs) if m}
    node_macs = {m for m in (_mac(v) for v in report.get("macs") or []) if m}
    if not node_macs:
        out.findings.append(
            Finding(
                "macs-missing",
                "the node reported no MACs: its report cannot be matched to the NICs Redfish lists",
                sorted(recorded_macs),
                [],
            )
        )
    else:
        extra = sorted(node_macs - recorded_macs)
        if extra:
            out.findings.append(
                Finding(
                    "mac-mismatch",
                    f"the node reports MAC(s) {', '.join(extra)} that Redfish does not list "
                    f"(Redfish: {', '.join(sorted(recorded_macs)) or 'none'})",
                    sorted(recorded_macs),
                    sorted(node_macs),
                )
            )
        prov = _mac(provisioning_mac)
        if prov and prov not in node_macs:
            out.findings.append(
                Finding(
                    "provisioning-mac-missing",
                    f"the node does not report the provisioning MAC {prov} it should have booted from",
                    prov,
                    sorted(node_macs),
                )
            )
        unseen = sorted(recorded_macs - node_macs)
        if unseen:
            out.notes.append(
                f"MAC(s) {', '.join(unseen)} listed by Redfish are not seen by the node (no driver?)"
            )
        if not extra and (not prov or prov in node_macs):
            out.matched.append(f"{len(node_macs & recorded_macs)} MAC(s)")

    if uuid and report.get("uuid"):
        if _uuid_forms(uuid) & _uuid_forms(report["uuid"]):
            out.matched.append("UUID")
        else:
            out.notes.append(f"SMBIOS UUID {report['uuid']} differs from the BMC's {uuid}")
    return out
