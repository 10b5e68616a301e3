"""NVIDIA's Xid catalog (Ampere and newer GPUs), every row, with what this project does about each.

The data is ``burnin/parsers/data/xid_catalog.tsv``, generated, never edited, from a saved copy of
the upstream table::

    python -m burnin.parsers.xid_catalog --regenerate \\
        burnin/parsers/data/upstream/gpud_xid_catalog_generated.go.txt > burnin/parsers/data/xid_catalog.tsv

The saved copy is leptonai/gpud's machine-read mirror (Apache-2.0) of NVIDIA's catalog,
https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html. Of NVIDIA's text the table
keeps the facts only: the number, the mnemonic, the short description and the two resolution
buckets, with the date the catalog was read (``CATALOG_VERSION``). A unit test fails while the
shipped table is not what the saved copy makes. NVIDIA revises the catalog per driver branch: to
take a newer one, save the newer upstream table and regenerate.

One rule, ``RULES``, turns NVIDIA's immediate resolution bucket into a severity and an action:

- the GPU or the node must be recovered (RESET_GPU, RESTART_BM, RESTART_VM, the Xid 48 and NVLink
  workflows) or NVIDIA must be asked (CONTACT_SUPPORT): CRITICAL, with that recovery, RMA for
  CONTACT_SUPPORT. A workflow the product does not run gets its most severe outcome (NVLink5:
  the decode of the error status says IGNORE or RESET_GPU; a GPU reset is the worst);
- a part to fix (CHECK_MECHANICALS: power cable or seating) or software to update (UPDATE_SWFW):
  CRITICAL, RESEAT or UPDATE_FIRMWARE;
- the application restarts, no action, or an Xid that only reports another (RESTART_APP, IGNORE,
  WORKFLOW_XID_45, XID_154), CHECK_UVM (a driver setting), and no resolution in the catalog yet:
  WARNING. A node under test should log none, so every Xid is at least a warning, never INFO.

``app_error`` (the application's fault, not the node's) holds when NVIDIA's investigatory action
points at the application (CHECK_APP/CUDA, WORKFLOW_XID_13, WORKFLOW_XID_31) or the Xid is the
clean-up after an abort (WORKFLOW_XID_45). ``OVERRIDES`` corrects the rule for a few Xids, each
with its reason and source; the table's ``rule`` column names them. ``ADVICE`` words a few
findings more precisely without changing their verdict. An Xid not in the catalog is still a
finding (burnin/checks/kernel.py).

Some Xids say in their message whether the error is fatal: the NVLink5 Xids 144-150 print
'Nonfatal' or 'Fatal' after the unit. ``PRINTED_SEVERITY`` judges such a message by that word, per
resolution bucket, with its source; ``judged`` applies it. A message without the word keeps its
row's verdict (for NVLink5 the worst outcome, a GPU reset).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import NamedTuple

from burnin.result import Action, Severity

_TABLE = "data/xid_catalog.tsv"
COLUMNS = (
    "xid",
    "mnemonic",
    "description",
    "immediate",
    "investigatory",
    "severity",
    "action",
    "app_error",
    "advice",
    "rule",
)


class XidInfo(NamedTuple):
    mnemonic: str
    bucket: str  # NVIDIA's immediate resolution ('' when the catalog gives none)
    description: str
    investigatory: str  # NVIDIA's investigatory resolution ('' when none)
    severity: Severity
    action: Action
    app_error: bool  # the application's fault, not the node's
    advice: str  # what the finding tells the operator
    rule: str  # 'bucket', or 'override: <why and source>'


@dataclass(frozen=True)
class Rule:
    severity: Severity
    action: Action
    advice: str


_W, _C = Severity.WARNING, Severity.CRITICAL
RULES: dict[str, Rule] = {
    "RESTART_APP": Rule(_W, Action.MONITOR, "NVIDIA: restart the application; watch for repeats"),
    "IGNORE": Rule(_W, Action.MONITOR, "NVIDIA: no immediate action; watch for repeats"),
    "WORKFLOW_XID_45": Rule(
        _W, Action.MONITOR, "clean-up after an abort or another Xid; that Xid says what to do"
    ),
    "XID_154": Rule(
        _W, Action.MONITOR, "the GPU's recovery action changed; the Xid it reports says what to do"
    ),
    "CHECK_UVM": Rule(_W, Action.RECONFIGURE, "NVIDIA: check the UVM driver (nvidia-uvm) and its settings"),
    "": Rule(_W, Action.MONITOR, "NVIDIA's catalog gives no resolution; watch for repeats"),
    "RESET_GPU": Rule(_C, Action.RESET_GPU, "NVIDIA: reset the GPU"),
    "RESTART_BM": Rule(_C, Action.REBOOT, "NVIDIA: reboot the node; if it recurs, reseat the GPU/riser"),
    "RESTART_VM": Rule(_C, Action.REBOOT, "NVIDIA: restart the VM (on bare metal, reboot the node)"),
    "WORKFLOW_XID_48": Rule(
        _C, Action.RESET_GPU, "double-bit ECC error: reset the GPU, then check row remapping"
    ),
    "WORKFLOW_NVLINK_ERR": Rule(
        _C, Action.RESET_GPU, "NVLink error: reset the GPU; reseat or RMA if it recurs"
    ),
    "WORKFLOW_NVLINK5_ERR": Rule(_C, Action.RESET_GPU, "NVLink5 error: reset the GPU; repeats go to NVIDIA"),
    "CHECK_MECHANICALS": Rule(
        _C, Action.RESEAT, "NVIDIA: check the mechanics (auxiliary power cable, seating)"
    ),
    "UPDATE_SWFW": Rule(_C, Action.UPDATE_FIRMWARE, "NVIDIA: update the driver/firmware"),
    "CONTACT_SUPPORT": Rule(_C, Action.RMA, "NVIDIA: contact support (a vendor case)"),
}
# The floor for a node under test: an Xid whose immediate resolution only restarts the application
# but whose investigation NVIDIA hands to support (the hardware is suspect: video engine, NVJPG,
# OFA, memory and GSP errors) fails the node, as a hardware Xid does; reboot and re-test, a repeat
# is the vendor's. Without it, 50 such Xids would only warn during burn-in.
SUPPORT_FLOOR = Rule(
    _C,
    Action.REBOOT,
    "NVIDIA hands its investigation to support: reboot and re-test; a repeat is an RMA case",
)
_APP_INVESTIGATIONS = frozenset({"CHECK_APP/CUDA", "WORKFLOW_XID_13", "WORKFLOW_XID_31"})


@dataclass(frozen=True)
class Override:
    why: str  # the reason, with its public source
    severity: Severity | None = None
    action: Action | None = None
    app_error: bool | None = None
    advice: str | None = None


# Wording only, for Xids whose finding says more than their bucket's advice; the verdict stays the rule's.
ADVICE: dict[int, str] = {
    63: "a row was marked for remapping; the memory check says if a reset is due",
    79: "GPU fell off the bus: reboot (NVIDIA: RESTART_BM); if it recurs, reseat the GPU/riser",
    92: "high single-bit ECC rate (NVIDIA: no immediate action); watch for repeats",
    94: "contained ECC error: the application was stopped, the GPU is fine; reset it when convenient",
    95: "uncontained ECC error: reset the GPU",
    119: "GSP RPC timeout: reset the GPU",
    120: "GSP error: reset the GPU",
}
_XID48_DETAIL = Override(
    "NVIDIA: reported with Xid 48 to say whether DRAM or SRAM failed, so it is judged as 48 "
    "(https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/user-visible-statistics.html)",
    _C,
    Action.RESET_GPU,
    advice="uncorrectable ECC error (detail of Xid 48): reset the GPU, then check row remapping",
)
OVERRIDES: dict[int, Override] = {
    32: Override(
        "NVIDIA's trigger conditions: PCIe quality issues, generally not caused by the application "
        "(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)",
        app_error=False,
    ),
    43: Override(
        "NVIDIA's trigger conditions: a user application's software-induced fault; the GPU stays healthy "
        "(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)",
        app_error=True,
    ),
    64: Override(
        "a failed row remapping is judged by NVIDIA's RMA policy, not cleared by a reset, as the gpu_memory "
        "check judges it (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/row-remapping.html)",
        action=Action.RMA,
        advice="row remapping failed: an RMA criterion",
    ),
    168: Override(
        "NVIDIA's trigger conditions: seen only with ECC disabled; enable ECC (row remapping) "
        "(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)",
        _C,
        Action.RECONFIGURE,
        advice="errors in the write-protected region with ECC off: enable ECC and reboot",
    ),
    171: _XID48_DETAIL,
    172: _XID48_DETAIL,
}


@dataclass(frozen=True)
class PrintedSeverity:
    why: str  # the reason, with its public source
    fatal: Rule
    nonfatal: Rule
    # A log's last line, which may be cut (docs/burnin.md, "A cut output"), ending before the word:
    # it cannot fail where the whole line might not.
    unseen: Rule


# NVIDIA's spreadsheet on https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html has a
# sheet "XID 144-150 Decode" (read as leptonai/gpud@4a8de33a3f02e207f39e9023d67125592d599731's
# components/accelerator/nvidia/xid/catalog_generated.go, nvlinkRules): per unit and error status,
# a severity and an immediate resolution. Of its 94 rows, the 51 "Non-fatal" ones resolve IGNORE
# (3 with a GPU reset as a second action) or XID_154_EVAL, never RESET_GPU at once; 40 of the 43
# "Fatal"/"Link Fatal" ones resolve RESET_GPU. The driver prints that severity in the message.
PRINTED_SEVERITY: dict[str, PrintedSeverity] = {
    "WORKFLOW_NVLINK5_ERR": PrintedSeverity(
        "NVIDIA's Xid 144-150 decode: non-fatal NVLink5 errors resolve IGNORE or by the Xid 154 they "
        "raise, fatal ones RESET_GPU (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)",
        fatal=Rule(
            _C,
            Action.RESET_GPU,
            "fatal NVLink5 error: reset the GPU (NVIDIA: RESET_GPU); repeats go to NVIDIA",
        ),
        nonfatal=Rule(
            _W,
            Action.MONITOR,
            "non-fatal NVLink5 error (NVIDIA: no immediate action, or the Xid 154 it raises); repeats go to NVIDIA",
        ),
        unseen=Rule(
            _W,
            Action.MONITOR,
            "NVLink5 error whose line ends before 'Fatal'/'Nonfatal' (cut?): read the whole line in the log",
        ),
    ),
}


# -- the upstream table -> the shipped table -------------------------------------------------------

_GO_STRING = r'"(?:[^"\\]|\\.)*"'
_ENTRY = re.compile(
    rf"\{{Code: (\d+), Mnemonic: ({_GO_STRING}), Description: ({_GO_STRING}), "
    rf"ImmediateResolution: ({_GO_STRING}), InvestigatoryResolution: ({_GO_STRING})\}},"
)
_STAMP = re.compile(r"^// Generated at (\S+)\. Source: (\S+)$", re.M)
_UPSTREAM = re.compile(r"^// SOURCE: (.+)$", re.M)
_LICENCE = re.compile(r"^// LICENCE: (.+)$", re.M)


def _text(go_string: str) -> str:
    """A Go string literal's text on one line (its escapes are JSON's)."""
    return " ".join(json.loads(go_string).split())


def _entry(xid: int, mnemonic: str, description: str, immediate: str, investigatory: str) -> XidInfo:
    if immediate not in RULES:
        raise ValueError(f"Xid {xid}: resolution {immediate!r} has no rule in RULES: add one")
    rule = RULES[immediate]
    app_error = investigatory in _APP_INVESTIGATIONS or immediate == "WORKFLOW_XID_45"
    how = "bucket"
    override = OVERRIDES.get(xid)
    if override is not None and override.app_error is not None:
        app_error = override.app_error  # (the floor spares what NVIDIA calls an application's fault)
    if rule.severity is _W and investigatory == "CONTACT_SUPPORT" and not app_error:
        rule, how = SUPPORT_FLOOR, "floor"
    advice = ADVICE.get(xid, rule.advice)
    info = XidInfo(
        mnemonic,
        immediate,
        description,
        investigatory,
        rule.severity,
        rule.action,
        app_error,
        advice,
        how,
    )
    if (o := OVERRIDES.get(xid)) is not None:
        info = info._replace(
            severity=o.severity or info.severity,
            action=o.action or info.action,
            app_error=info.app_error if o.app_error is None else o.app_error,
            advice=o.advice or info.advice,
            rule=f"override: {o.why}",
        )
    if info.app_error and not info.advice.startswith("an application fault"):
        info = info._replace(advice=f"an application fault; {info.advice}")
    return info


def _one(pattern: re.Pattern[str], text: str, what: str) -> re.Match[str]:
    if (m := pattern.search(text)) is None:
        raise ValueError(f"the upstream copy lacks its {what} line ({pattern.pattern!r})")
    return m


def regenerate(upstream: str) -> str:
    """The shipped table's text, made from the saved upstream table (gpud's catalog_generated.go)."""
    version, source = _one(_STAMP, upstream, "'Generated at'").groups()
    origin = _one(_UPSTREAM, upstream, "SOURCE").group(1)
    licence = _one(_LICENCE, upstream, "LICENCE").group(1)
    rows = _ENTRY.findall(upstream)
    if len(rows) != upstream.count("{Code: "):
        raise ValueError("the upstream copy has rows this reader cannot read: check its format")
    entries: dict[int, XidInfo] = {}
    for code, *fields in rows:
        if int(code) in entries:
            raise ValueError(f"the upstream copy lists Xid {code} twice")
        entries[int(code)] = _entry(int(code), *(_text(f) for f in fields))
    if stray := sorted(set(OVERRIDES) - set(entries)):
        raise ValueError(f"OVERRIDES name Xids the catalog does not list: {stray}")
    lines = [
        "# NVIDIA's Xid catalog (Ampere and newer GPUs): every Xid, NVIDIA's resolution, this project's verdict.",
        "# GENERATED by `python -m burnin.parsers.xid_catalog --regenerate "
        "burnin/parsers/data/upstream/gpud_xid_catalog_generated.go.txt > burnin/parsers/data/xid_catalog.tsv`:",
        "#   do not edit; change RULES or OVERRIDES in burnin/parsers/xid_catalog.py, or the saved upstream copy.",
        f"# SOURCE: {source}",
        f"# VERSION: {version} (the date NVIDIA's spreadsheet was read; Xids {min(entries)}-{max(entries)})",
        f"# UPSTREAM: {origin}",
        f"# LICENCE: {licence} NVIDIA's text kept: numbers, mnemonics, short descriptions, resolution buckets.",
        "# RULE: severity and action from the immediate resolution (RULES); app_error from the investigatory "
        "one; the rule column names each override and its source.",
        "\t".join(COLUMNS),
    ]
    for xid, e in sorted(entries.items()):
        row = (xid, e.mnemonic, e.description, e.bucket, e.investigatory, e.severity.value, e.action.value)
        lines.append("\t".join(map(str, (*row, "yes" if e.app_error else "no", e.advice, e.rule))))
    return "\n".join(lines) + "\n"


# -- the shipped table ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Catalog:
    entries: dict[int, XidInfo]
    version: str
    source: str


def load(text: str) -> Catalog:
    """The shipped table: its rows by Xid, and the version and source its header states."""
    header = dict(re.findall(r"^# (SOURCE|VERSION): (\S+)", text, re.M))
    if set(header) != {"SOURCE", "VERSION"}:
        raise ValueError("the Xid table's header lacks its SOURCE or VERSION line")
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    if not rows or tuple(rows[0]) != COLUMNS:
        raise ValueError(f"the Xid table's columns are not {COLUMNS}")
    entries: dict[int, XidInfo] = {}
    for fields in rows[1:]:
        if len(fields) != len(COLUMNS):
            raise ValueError(f"Xid table row {fields[:1]}: {len(fields)} fields, not {len(COLUMNS)}")
        xid, mnemonic, description, bucket, investigatory, severity, action, app, advice, rule = fields
        try:
            judged = Severity(severity), Action(action)
        except ValueError as exc:
            raise ValueError(f"Xid {xid}: {exc}") from None
        entries[int(xid)] = XidInfo(
            mnemonic, bucket, description, investigatory, *judged, app == "yes", advice, rule
        )
    return Catalog(entries, header["VERSION"], header["SOURCE"])


_SHIPPED = load(resources.files("burnin.parsers").joinpath(_TABLE).read_text(encoding="utf-8"))
XID_CATALOG: dict[int, XidInfo] = _SHIPPED.entries
CATALOG_VERSION: str = _SHIPPED.version
CATALOG_SOURCE: str = _SHIPPED.source


def judged(xid: int, fatal: bool | None = None, may_be_cut: bool = False) -> XidInfo | None:
    """The catalog's row for an Xid, judged by the severity its message printed (``fatal``: True for
    'Fatal', False for 'Nonfatal', None when it printed none; ``may_be_cut``: its line is a log's
    last, without a newline) where ``PRINTED_SEVERITY`` covers its bucket; None for an Xid the
    catalog does not list."""
    info = XID_CATALOG.get(xid)
    if info is None or (printed := PRINTED_SEVERITY.get(info.bucket)) is None:
        return info
    if fatal is None:
        if not may_be_cut:
            return info
        rule = printed.unseen
    else:
        rule = printed.fatal if fatal else printed.nonfatal
    return info._replace(
        severity=rule.severity, action=rule.action, advice=rule.advice, rule=f"printed: {printed.why}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "--regenerate":
        print(
            "usage: python -m burnin.parsers.xid_catalog --regenerate UPSTREAM > burnin/parsers/data/xid_catalog.tsv",
            file=sys.stderr,
        )
        return 2
    with open(args[1], encoding="utf-8") as f:
        sys.stdout.write(regenerate(f.read()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
