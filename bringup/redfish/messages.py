"""Pure helpers for the bits of Redfish JSON every module needs: links, ids, error messages."""

from __future__ import annotations

from typing import Any


def link(doc: dict[str, Any] | None, *keys: str) -> str | None:
    """``doc[k1][k2]...["@odata.id"]``, or None when any step is missing."""
    node: Any = doc
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    if isinstance(node, list):
        node = node[0] if node else None
    if isinstance(node, dict):
        value = node.get("@odata.id")
        return value if isinstance(value, str) else None
    return None


def links(doc: dict[str, Any] | None, *keys: str) -> list[str]:
    """Every ``@odata.id`` of a list of references at ``doc[k1][k2]...``."""
    node: Any = doc
    for key in keys:
        if not isinstance(node, dict):
            return []
        node = node.get(key)
    if isinstance(node, dict):
        node = [node]
    if not isinstance(node, list):
        return []
    return [m["@odata.id"] for m in node if isinstance(m, dict) and isinstance(m.get("@odata.id"), str)]


def bmc_messages(body: Any) -> list[dict[str, str]]:
    """The MessageId/Message/Resolution entries of a Redfish error (or success) body."""
    if not isinstance(body, dict):
        return []
    holder = body.get("error") if isinstance(body.get("error"), dict) else body
    infos = holder.get("@Message.ExtendedInfo") or []
    out = []
    for info in infos if isinstance(infos, list) else []:
        if isinstance(info, dict):
            out.append(
                {
                    "id": str(info.get("MessageId") or ""),
                    "message": str(info.get("Message") or ""),
                    "resolution": str(info.get("Resolution") or ""),
                }
            )
    if not out and isinstance(holder.get("message"), str):
        out.append({"id": str(holder.get("code") or ""), "message": holder["message"], "resolution": ""})
    return out


def describe_messages(body: Any, limit: int = 3) -> str:
    """One line from a BMC's error body, e.g. ``IDRAC.2.8.SYS011: Pending configuration ...``."""
    parts = []
    for m in bmc_messages(body)[:limit]:
        text = m["message"].strip()
        if m["id"]:
            text = f"{m['id']}: {text}" if text else m["id"]
        if text:
            parts.append(text)
    return "; ".join(parts)


def message_id_endswith(body: Any, *suffixes: str) -> bool:
    """Whether any message id ends with one of ``suffixes`` (registry versions vary)."""
    return any(m["id"].split(".")[-1] in suffixes for m in bmc_messages(body))


def health(doc: dict[str, Any] | None) -> tuple[str | None, str | None]:
    status = doc.get("Status") if isinstance(doc, dict) else None
    if not isinstance(status, dict):
        return None, None
    return status.get("Health"), status.get("HealthRollup") or status.get("HealthRollUp")
