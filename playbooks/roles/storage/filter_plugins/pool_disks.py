"""bringup_pool_disks: pick the drives of the scratch ZFS pool from Ansible's device facts.

A pure function (tests/unit/playbooks/test_storage_role.py runs it on device facts): a drive is used
only if its name and model match the rule, its serial is not excluded, and nothing is on it
(no partitions, no holders such as LVM or md, no mounted filesystem). The OS drive always has a
partition or a mount, so it can never be chosen, whatever the rule says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any


def _by_id(name: str, facts: Mapping[str, Any]) -> str:
    """A stable path for the drive: its /dev/disk/by-id link (model_serial form first)."""
    ids = list((facts.get("links") or {}).get("ids") or [])
    named = [i for i in ids if not i.startswith(("nvme-eui.", "nvme-nvme.", "wwn-"))]
    chosen = sorted(named)[0] if named else (sorted(ids)[0] if ids else None)
    return f"/dev/disk/by-id/{chosen}" if chosen else f"/dev/{name}"


def pool_disks(
    devices: Mapping[str, Mapping[str, Any]],
    mounts: Iterable[Mapping[str, Any]],
    name_pattern: str,
    model_patterns: Iterable[str],
    exclude_serials: Iterable[str] = (),
) -> list[str]:
    """Sorted by-id paths of the drives that match the rule and carry nothing."""
    mounted = {str(m.get("device", "")) for m in mounts}
    excluded = {str(s).strip() for s in exclude_serials}
    models = [re.compile(p) for p in model_patterns]
    chosen = []
    for name, facts in sorted(devices.items()):
        if not re.fullmatch(name_pattern, name):
            continue
        model = str(facts.get("model") or "").strip()
        serial = str(facts.get("serial") or "").strip()
        if not any(p.fullmatch(model) for p in models) or serial in excluded:
            continue
        partitions = facts.get("partitions") or {}
        holders = facts.get("holders") or []
        in_use = f"/dev/{name}" in mounted or any(f"/dev/{p}" in mounted for p in partitions)
        if partitions or holders or in_use:
            continue
        chosen.append(_by_id(name, facts))
    return chosen


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"bringup_pool_disks": pool_disks}
