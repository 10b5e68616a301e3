"""What nodes post to the boot server, read and judged (pure): phone-home reports and progress."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from bringup.provision.pxe import scripts


def report_refusal(report: dict[str, Any], mac: str, peer: str, address: str | None) -> str | None:
    """Why a phone-home report cannot be this node's (None: it can). Its ``client``,
    ``boot_mac`` and ``ip`` (each optional) must be the caller, the URL's MAC and the node's
    reserved ``address`` (None: not checked, proxy-DHCP mode)."""
    client = report.get("client")
    if client not in (None, "") and str(client) != peer:
        return f"the report names client {client}, but it came from {peer}"
    boot_mac = report.get("boot_mac")
    if boot_mac not in (None, "") and scripts.safe_mac(str(boot_mac)) != mac:
        return f"the report names boot MAC {boot_mac}, but was posted for {mac}"
    ip = report.get("ip")
    if ip not in (None, "") and address is not None and str(ip) != address:
        return f"the report names address {ip}, but {mac} is reserved {address}"
    return None


def progress_line(body: bytes, ctype: str) -> str:
    """A progress POST -> one line: plain text, or a subiquity/curtin webhook event."""
    if "json" in ctype:
        try:
            event = json.loads(body)
        except ValueError:
            event = None
        if isinstance(event, dict):
            parts = [
                event.get("event_type"),
                event.get("name"),
                event.get("result"),
                event.get("description"),
            ]
            return " ".join(str(p) for p in parts if p)[:300]
    return body.decode(errors="replace").strip().splitlines()[0][:300] if body.strip() else "(empty)"


def parse_report(body: bytes, ctype: str) -> dict[str, Any]:
    if "json" in ctype or body.lstrip().startswith(b"{"):
        doc = json.loads(body)
        if not isinstance(doc, dict):
            raise ValueError("a report must be a JSON object")
        return doc
    # cloud-init's phone_home module posts a form.
    return {k: v[0] if len(v) == 1 else v for k, v in parse_qs(body.decode(errors="replace")).items()}
