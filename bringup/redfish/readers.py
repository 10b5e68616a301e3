"""Redfish JSON -> the records bringup keeps (pure functions, no I/O)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from bringup.redfish.messages import health

# Values vendors leave in serial fields of boards nobody filled in.
PLACEHOLDER_SERIALS = frozenset(
    {
        "",
        "0",
        "none",
        "n/a",
        "na",
        "not specified",
        "not available",
        "default string",
        "to be filled by o.e.m.",
        "0123456789",
        "1234567890",
        "system serial number",
        "chassis serial number",
    }
)
MAX_EVENTS = 200  # newest critical/warning entries kept per node


def real_serial(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return None if value.lower() in PLACEHOLDER_SERIALS or set(value) <= {"0", " ", "."} else value


def node_serial(chassis: dict[str, Any] | None, system: dict[str, Any]) -> tuple[str | None, str | None]:
    """(serial, where it came from): the chassis serial, else the system's, else its SKU
    (Dell puts the service tag there). Placeholders such as ``0123456789`` do not count."""
    for doc, key, where in (
        (chassis, "SerialNumber", "chassis"),
        (system, "SerialNumber", "system"),
        (system, "SKU", "system SKU"),
    ):
        if isinstance(doc, dict) and (serial := real_serial(doc.get(key))):
            return serial, where
    return None, None


def system_summary(doc: dict[str, Any]) -> dict[str, Any]:
    h, rollup = health(doc)
    return {
        "id": doc.get("Id"),
        "manufacturer": doc.get("Manufacturer"),
        "model": doc.get("Model"),
        "serial": doc.get("SerialNumber"),
        "sku": doc.get("SKU"),
        "uuid": (doc.get("UUID") or "").lower() or None,
        "bios_version": doc.get("BiosVersion"),
        "power_state": doc.get("PowerState"),
        "health": h,
        "health_rollup": rollup or h,
        "hostname": doc.get("HostName") or None,
    }


def memory_summary(doc: dict[str, Any]) -> dict[str, Any] | None:
    mem = doc.get("MemorySummary")
    if not isinstance(mem, dict):
        return None
    h, rollup = health(mem)
    total = mem.get("TotalSystemMemoryGiB")
    out = {"total_gib": total if isinstance(total, (int, float)) else None, "health": rollup or h}
    return out if any(v is not None for v in out.values()) else None


def cpu_summary(doc: dict[str, Any]) -> dict[str, Any] | None:
    cpu = doc.get("ProcessorSummary")
    if not isinstance(cpu, dict):
        return None
    h, rollup = health(cpu)
    out = {
        "count": cpu.get("Count"),
        "logical_count": cpu.get("LogicalProcessorCount"),
        "model": cpu.get("Model"),
        "health": rollup or h,
    }
    return out if any(v is not None for v in out.values()) else None


def chassis_summary(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(doc, dict):
        return None
    h, rollup = health(doc)
    return {
        "id": doc.get("Id"),
        "serial": doc.get("SerialNumber"),
        "manufacturer": doc.get("Manufacturer"),
        "model": doc.get("Model"),
        "sku": doc.get("SKU"),
        "part_number": doc.get("PartNumber"),
        "chassis_type": doc.get("ChassisType"),
        "health_rollup": rollup or h,
    }


def _stripped(value: Any) -> Any:
    """Text without the surrounding whitespace some BMCs keep (a version ending in a newline)."""
    return value.strip() if isinstance(value, str) else value


def firmware_entry(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": doc.get("Id"),
        "name": _stripped(doc.get("Name")),
        "version": _stripped(doc.get("Version")),
        "updateable": doc.get("Updateable"),
    }


def _iso(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value


def _severity(doc: dict[str, Any]) -> str | None:
    raw = doc.get("Severity") or (doc.get("Oem", {}).get("Hpe", {}) or {}).get("Severity")
    value = str(raw or "").strip().lower()
    if value in ("critical", "fatal"):
        return "Critical"
    if value in ("warning", "caution", "major", "minor"):
        return "Warning"
    return None


def _resolved(doc: dict[str, Any]) -> bool:
    hpe = (doc.get("Oem") or {}).get("Hpe") or {}
    return doc.get("Resolved") is True or (isinstance(hpe, dict) and hpe.get("Repaired") is True)


def event_entries(members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Critical and Warning entries of a log (resolved/repaired ones left out), newest first
    when the BMC gives times, at most MAX_EVENTS."""
    out = []
    for doc in members:
        severity = _severity(doc)
        if severity is None or _resolved(doc):
            continue
        out.append(
            {
                "id": str(doc.get("Id")) if doc.get("Id") is not None else None,
                "created": _iso(doc.get("Created")),
                "severity": severity,
                "message": doc.get("Message"),
                "message_id": doc.get("MessageId"),
            }
        )
    if out and all(e["created"] for e in out):
        out.sort(key=lambda e: _when(e["created"]), reverse=True)
    return out[:MAX_EVENTS]


def _when(value: str) -> datetime:
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)
