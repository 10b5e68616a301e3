"""Which vendor a BMC is, from the service root and the Manager (pure)."""

from __future__ import annotations

from typing import Any

_WORDS = {
    "dell": ("dell", "idrac"),
    "hpe": ("hpe", "hewlett packard", "ilo"),
    "supermicro": ("supermicro", "super micro"),
}


def _match(text: Any) -> str | None:
    if not isinstance(text, str):
        return None
    low = text.lower()
    for vendor, words in _WORDS.items():
        if any(w in low for w in words):
            return vendor
    return None


def detect_vendor(root: dict[str, Any], manager: dict[str, Any] | None) -> str:
    """``dell``, ``hpe``, ``supermicro`` or ``generic``.

    The service root's ``Vendor`` (Redfish 1.5+) and its ``Oem`` keys are the strongest
    signals; older firmware leaves them out, so the Manager (``iDRAC.Embedded.1``, model
    ``iLO 6``, ``Oem.Supermicro``) decides then. The system's Manufacturer is not used: a
    Dell-made chassis can carry a generic BMC (and the lab's emulator says "Dell Inc.").
    """
    found = _match(root.get("Vendor"))
    if found:
        return found
    for key in root.get("Oem") or {}:
        if found := _match("hpe" if key.lower() in ("hp", "hpe") else key):
            return found
    if isinstance(manager, dict):
        for value in (manager.get("Id"), manager.get("Model"), manager.get("Manufacturer")):
            if found := _match(value):
                return found
        for key in manager.get("Oem") or {}:
            if found := _match("hpe" if key.lower() in ("hp", "hpe") else key):
                return found
    return "generic"
