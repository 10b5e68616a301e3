"""Redfish JSON -> the records bringup keeps (pure functions, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from bringup.redfish import placeholders
from bringup.redfish.messages import health

MAX_EVENTS = 200  # newest critical/warning entries kept per node


def real_serial(value: Any) -> str | None:
    return placeholders.real_serial(value)


@dataclass
class NodeSerial:
    """The node's key and where it came from; ``skipped``: the placeholders passed over on
    the way ({"source", "value", "why"}), for the record and a warning."""

    serial: str | None
    source: str | None
    skipped: list[dict[str, str]] = field(default_factory=list)


def node_serial(chassis: dict[str, Any] | None, system: dict[str, Any]) -> NodeSerial:
    """The server's own chassis serial, else the system's, else its SKU (Dell puts the service
    tag there), else the system's UUID. Placeholders (``placeholders.py``: AMI's
    ``01234567890123456789AB``, ``0123456789``, all zeros...) are skipped and named.
    ``chassis`` is the server's chassis (``server_chassis``), never an enclosure: the nodes of
    a multi-node enclosure share that serial."""
    skipped: list[dict[str, str]] = []
    for doc, key, where in (
        (chassis, "SerialNumber", "chassis"),
        (system, "SerialNumber", "system"),
        (system, "SKU", "system SKU"),
        (system, "UUID", "system UUID"),
    ):
        if not isinstance(doc, dict) or doc.get(key) is None:
            continue
        value = doc.get(key)
        why = placeholders.placeholder_reason(value)
        if why is None:
            return NodeSerial(str(value).strip(), where, skipped)
        if str(value).strip():
            skipped.append({"source": where, "value": str(value), "why": why})
    return NodeSerial(None, None, skipped)


# Chassis types that hold servers rather than being one (DMTF Chassis.ChassisType): an S3260
# or any multi-node box links its system to both the enclosure and the node's own chassis.
ENCLOSURE_TYPES = frozenset({"Enclosure", "StorageEnclosure", "Drawer"})
# Parts of a server, never the server itself: a NIC mezzanine, a riser, a PSU FRU, a GPU tray
# (an HPE Cray EX blade lists its mezzanine cards as chassis; an Intel S2600 its risers and PSUs).
PART_TYPES = frozenset({"Card", "Module", "Component", "Expansion", "Shelf", "Sidecar", "IPBasedDrive"})


def is_enclosure(doc: dict[str, Any] | None) -> bool:
    return isinstance(doc, dict) and doc.get("ChassisType") in ENCLOSURE_TYPES


def is_part(doc: dict[str, Any] | None) -> bool:
    return isinstance(doc, dict) and doc.get("ChassisType") in PART_TYPES


def server_chassis(
    linked: list[dict[str, Any]],
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the server's own chassis, the enclosure holding it) among the chassis a system links,
    in the BMC's order; either may be None. A RackMount, Blade, Sled... before a card, module
    or component (a linked part is taken only when the system links no server chassis: a
    Cisco S3260 node's own chassis)."""
    servers = [d for d in linked if isinstance(d, dict) and not is_enclosure(d)]
    server = next((d for d in servers if not is_part(d)), servers[0] if servers else None)
    enclosure = next((d for d in linked if is_enclosure(d)), None)
    return server, enclosure


def merge_events(*logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Several logs' entries (``event_entries`` records) as one: newest first where every
    entry has a time, at most MAX_EVENTS."""
    out = [e for log in logs for e in log]
    if out and all(e.get("created") for e in out):
        out.sort(key=lambda e: _aware(datetime.fromisoformat(e["created"])), reverse=True)
    return out[:MAX_EVENTS]


def enclosure_summary(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(doc, dict):
        return None
    return {
        "id": doc.get("Id"),
        "serial": real_serial(doc.get("SerialNumber")),
        "manufacturer": doc.get("Manufacturer"),
        "model": doc.get("Model"),
        "chassis_type": doc.get("ChassisType"),
    }


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


# Timestamp forms seen in BMC logs that ``datetime.fromisoformat`` does not take: Cisco CIMC
# writes ``2022-06-13 12:19:21 `` (trailing space, handled by strip), some IPMI-derived logs
# use slashes or a month-first date.
_TIME_FORMATS = ("%Y/%m/%d %H:%M:%S", "%m/%d/%Y %H:%M:%S", "%a %b %d %H:%M:%S %Y")


def parse_time(value: Any) -> datetime | None:
    """A log timestamp as a datetime (naive when the BMC gives no offset), or None."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        pass
    for fmt in _TIME_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def _severity(doc: dict[str, Any]) -> str | None:
    raw = doc.get("Severity") or (doc.get("Oem", {}).get("Hpe", {}) or {}).get("Severity")
    value = str(raw or "").strip().lower()
    if value in ("critical", "fatal"):
        return "Critical"
    if value in ("warning", "caution", "major", "minor"):
        return "Warning"
    return None


def severity_read(doc: dict[str, Any]) -> bool:
    """Whether this log entry states its severity (``OK`` counts): a collection that lists
    its members without it says nothing about them."""
    hpe = (doc.get("Oem") or {}).get("Hpe") if isinstance(doc.get("Oem"), dict) else None
    return bool(doc.get("Severity")) or (isinstance(hpe, dict) and bool(hpe.get("Severity")))


def _resolved(doc: dict[str, Any]) -> bool:
    hpe = (doc.get("Oem") or {}).get("Hpe") or {}
    return doc.get("Resolved") is True or (isinstance(hpe, dict) and hpe.get("Repaired") is True)


def newest_first(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Log entries newest first: by ``Created`` when every entry has a readable one, else by
    numeric ``Id`` (SEL record ids grow), else the collection's order reversed (logs list the
    oldest first)."""
    times = [parse_time(d.get("Created")) for d in docs]
    ids = [str(d.get("Id") or "") for d in docs]
    order = range(len(docs))
    if docs and all(times):
        order = sorted(order, key=lambda i: _aware(times[i]), reverse=True)  # type: ignore[arg-type]
    elif docs and all(i.isdigit() for i in ids):
        order = sorted(order, key=lambda i: int(ids[i]), reverse=True)
    else:
        order = reversed(order)
    return [docs[i] for i in order]


def event_entries(members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Critical and Warning entries of a log (resolved/repaired ones left out), newest first
    when the BMC gives times, at most MAX_EVENTS."""
    out = []
    for doc in members:
        severity = _severity(doc)
        if severity is None or _resolved(doc):
            continue
        when = parse_time(doc.get("Created"))
        out.append(
            {
                "id": str(doc.get("Id")) if doc.get("Id") is not None else None,
                "created": when.isoformat() if when else None,
                "severity": severity,
                "message": doc.get("Message"),
                "message_id": doc.get("MessageId"),
            }
        )
    if out and all(e["created"] for e in out):
        out.sort(key=lambda e: _aware(datetime.fromisoformat(e["created"])), reverse=True)
    return out[:MAX_EVENTS]


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def split_links(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """A resource read with ``$expand=~`` -> (the resource with its ``Links`` back to plain
    references, as a GET without the query answers it; {path: each linked resource the BMC
    expanded}). Anything under ``Links`` that is not an expanded reference is left as it is."""
    found: dict[str, dict[str, Any]] = {}

    def reference(value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("@odata.id"), str) and len(value) > 1:
            found[value["@odata.id"]] = value
            return {"@odata.id": value["@odata.id"]}
        if isinstance(value, list):
            return [reference(v) for v in value]
        return value

    links_doc = doc.get("Links")
    if not isinstance(links_doc, dict):
        return doc, found
    plain = {k: (v if k == "Oem" else reference(v)) for k, v in links_doc.items()}
    return {**doc, "Links": plain}, found
