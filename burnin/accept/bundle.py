"""The RMA bundle of a rejected node: one .tar.gz a vendor's RMA desk can work from.

    <node>-<chassis serial>-rma/
      summary.txt          chassis serial, each failing part (slot, serial), finding, action, dates
      evidence/NN-*.txt    the raw tool output behind each finding (from the evidence store)
      order/*.json         for findings against the order: what the BMC reported at discovery
      bmc-event-log.json   the BMC's event log entries as discovery read them
      firmware.json        the firmware inventory (BMC, BIOS, devices)
      manifest.json        every file above with its sha256 and size
      SHA256SUMS           the same checksums, for `sha256sum -c`

The content is built by a pure function (``bundle_files``); ``write_bundle`` only packs it.
Nothing from the inventory goes in (no BMC credentials, no keys): only what the store holds
about the node and its results.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from burnin.accept.decide import NodeDecision, Reason
from burnin.accept.outcome import AcceptanceResult, NodeFacts

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
# What the firmware file carries from the node's discovery record.
_FIRMWARE_KEYS = ("firmware", "bmc", "system")


def _safe(text: str) -> str:
    return _SAFE.sub("_", text).strip("_") or "x"


def _when(value: datetime | str | None) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value)


def _json(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode()


def bundle_name(node: NodeFacts) -> str:
    return bundle_name_of(node.name, node.serial)


def bundle_name_of(node: str, serial: str | None) -> str:
    """<node>-<chassis serial>-rma, as the folder and the archive are named."""
    return f"{_safe(node)}-{_safe(serial or 'no-serial')}-rma"


def _evidence_files(reasons: tuple[Reason, ...], evidence: Mapping[int, str]) -> dict[int, str]:
    """Result id -> its file name in the bundle, numbered in the order the reasons name them."""
    names: dict[int, str] = {}
    for reason in reasons:
        if reason.result_id is None or reason.result_id in names or reason.result_id not in evidence:
            continue
        names[reason.result_id] = (
            f"evidence/{len(names) + 1:02d}-{_safe(reason.stage or 'stage')}-{_safe(reason.check or reason.part)}.txt"
        )
    return names


def _order_files(reasons: tuple[Reason, ...]) -> dict[str, str]:
    """Part -> the file with what discovery reported for it (findings against the order), and
    the whole discovery record under ``_record``."""
    out: dict[str, str] = {}
    for reason in reasons:
        if reason.source == "order" and reason.part not in out:
            out[reason.part] = f"order/{_safe(reason.part)}.json"
    out["_record"] = "order/discovery-record.json"
    return out


def _summary(
    result: AcceptanceResult,
    decision: NodeDecision,
    node: NodeFacts,
    evidence_names: Mapping[int, str],
    order_names: Mapping[str, str],
) -> str:
    system = node.hardware.get("system") if isinstance(node.hardware.get("system"), dict) else {}
    bmc = node.hardware.get("bmc") if isinstance(node.hardware.get("bmc"), dict) else {}
    lines = [
        "RMA REQUEST: hardware that failed delivery acceptance",
        "",
        f"Chassis serial:   {node.serial or 'unknown (not discovered)'}",
        f"Node:             {node.name} (rack {result.rack}, profile {node.profile})",
        f"System:           {system.get('manufacturer') or '-'} {system.get('model') or ''}".rstrip(),
        f"BMC firmware:     {bmc.get('firmware_version') or '-'}",
        f"Delivery:         {result.delivery}" + (f" ({result.description})" if result.description else ""),
        f"Acceptance:       #{result.acceptance_id}, started {_when(result.started_at)}, "
        f"decided {_when(result.finished_at)}",
        f"Discovered:       {_when(node.discovered_at)}",
        "Decision:         REJECTED",
        "",
        f"FAILING PARTS ({len(decision.reasons)})",
    ]
    for n, r in enumerate(decision.reasons, 1):
        lines += [
            "",
            f"{n}. Part:     {r.part}",
            f"   Slot:     {r.slot or '-'}",
            f"   Serial:   {r.serial or '-'}",
            f"   Finding:  {r.finding}",
            f"   Action:   {r.action or 'investigate (the check could not judge it)'}",
            f"   Seen:     {_when(r.seen_at or node.discovered_at)}"
            + (f" (soak iteration {r.iteration})" if r.iteration else ""),
        ]
        if r.ordered or r.found:
            lines.append(f"   Ordered:  {r.ordered or '-'}    Found: {r.found or '-'}")
        if r.source == "order":
            lines.append(
                f"   Evidence: {order_names.get(r.part, '-')} (what discovery and the checks reported)"
            )
        if r.result_id in evidence_names:
            lines.append(f"   Evidence: {evidence_names[r.result_id]} ({r.stage} stage, check {r.check})")
        elif r.source != "order":
            lines.append("   Evidence: none stored (pruned, or the check produced no output)")
    lines += [
        "",
        "FILES",
        "  bmc-event-log.json  the BMC's event log entries",
        "  firmware.json       the firmware inventory",
        "  manifest.json       every file with its sha256 (also SHA256SUMS, for sha256sum -c)",
        "",
    ]
    return "\n".join(lines)


def bundle_files(result: AcceptanceResult, decision: NodeDecision) -> dict[str, bytes]:
    """The bundle's files (path inside the bundle -> content), manifest and checksums included."""
    node = result.nodes[decision.node]
    hardware = node.hardware
    evidence_names = _evidence_files(decision.reasons, result.evidence)
    order_names = _order_files(decision.reasons)
    files: dict[str, bytes] = {
        "summary.txt": _summary(result, decision, node, evidence_names, order_names).encode(),
    }
    for result_id, name in evidence_names.items():
        files[name] = result.evidence[result_id].encode()
    inventory = hardware.get("inventory") if isinstance(hardware.get("inventory"), dict) else {}
    for part, name in order_names.items():
        if part == "_record":
            record = {k: v for k, v in hardware.items() if k not in ("event_log",)}
            files[name] = _json(record)
            continue
        reasons = [r.as_dict() for r in decision.reasons if r.source == "order" and r.part == part]
        files[name] = _json(
            {"part": part, "findings": reasons, "reported": _reported(part, inventory, hardware)}
        )
    files["bmc-event-log.json"] = _json(
        {
            "read_at": hardware.get("event_log_read_at"),
            "unread": hardware.get("event_log_unread"),
            "entries": hardware.get("event_log") or [],
        }
    )
    firmware = {k: hardware.get(k) for k in _FIRMWARE_KEYS if k in hardware}
    if isinstance(inventory, dict) and "bios" in inventory:
        firmware["bios"] = inventory.get("bios")
    files["firmware.json"] = _json(firmware)
    manifest = [
        {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
        for path, data in sorted(files.items())
    ]
    files["manifest.json"] = _json({"node": node.name, "chassis_serial": node.serial, "files": manifest})
    files["SHA256SUMS"] = "".join(f"{m['sha256']}  {m['path']}\n" for m in manifest).encode()
    return files


def _reported(part: str, inventory: Mapping[str, Any], hardware: Mapping[str, Any]) -> Any:
    """What discovery recorded for a part ('memory' -> the inventory's memory section...)."""
    for source in (inventory, hardware):
        for key in (part, f"{part}s", part.rstrip("s")):
            if key in source:
                return source[key]
    return None


def write_bundle(result: AcceptanceResult, decision: NodeDecision, out_dir: Path) -> Path:
    """Pack the bundle as ``out_dir/<node>-<serial>-rma.tar.gz``; returns its path."""
    name = bundle_name(result.nodes[decision.node])
    path = out_dir / f"{name}.tar.gz"
    mtime = result.finished_at.timestamp()
    with tarfile.open(path, "w:gz") as tar:
        for inner, data in bundle_files(result, decision).items():
            info = tarfile.TarInfo(f"{name}/{inner}")
            info.size, info.mtime, info.mode = len(data), int(mtime), 0o644
            tar.addfile(info, io.BytesIO(data))
    return path
