"""catalog.json, parsed, and per platform: which recording each stand-in tool prints for which faults.

The base catalog is an HGX H100 node (``BASE_PLATFORM``). Another platform's node replays its own
recordings: ``platforms/<profile>.json`` is an overlay on the base, merged by :func:`merge`
(docs/lab.md, "Platforms"):

- ``tools``: an overlay entry whose ``args`` list equals a base entry's replaces every base entry
  with that list (the healthy recording and its faulted ones: an H100 fault recording on an H200
  node would show the wrong machine); other base entries stay; tools the base lacks are added;
  the overlay's entries come first.
- ``without``: base tools the platform does not have (an AMD node has no nvidia-smi).
- ``faults``: the base faults named in ``inherit_faults`` (those whose recordings still fit: the
  fabric, disks, DIMMs, the BMC) and the overlay's own. Base entries and sysfs changes of a fault
  the platform does not have are dropped, so nothing can select them.
- ``programs``: a program's keys replace the base program's keys of that name, the others stay.
- ``pci``, ``bmc``, ``demo``: the platform's fake PCI tree, what its BMC lists, its demo defaults.

Its own module so that sysfs.py (the catalog's ``sysfs`` section) and the package, which
imports sysfs.py, both read it from below.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from bringup.lab.standins.dispatch import CATALOG_NAME

CATALOG_PATH = Path(__file__).resolve().parent / CATALOG_NAME
PLATFORMS_DIR = Path(__file__).resolve().parent / "platforms"
BASE_PLATFORM = "h100-sxm-8x400g"  # what catalog.json records
_OVERLAY_KEYS = frozenset(
    {
        "_comment",
        "profile",
        "inherit_faults",
        "faults",
        "tools",
        "without",
        "sysfs",
        "programs",
        "pci",
        "bmc",
        "demo",
    }
)


class PlatformError(ValueError):
    """An unknown platform, or an overlay that does not fit the base catalog."""


def platforms() -> list[str]:
    """Every platform the lab can stand in for: the base and one per overlay file."""
    return sorted({BASE_PLATFORM, *(p.stem for p in PLATFORMS_DIR.glob("*.json"))})


@lru_cache(maxsize=1)
def _base() -> dict[str, Any]:
    with CATALOG_PATH.open(encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


@lru_cache(maxsize=16)
def overlay(platform: str) -> dict[str, Any]:
    """The parsed overlay of a platform (PlatformError if it has none)."""
    path = PLATFORMS_DIR / f"{platform}.json"
    if platform == BASE_PLATFORM or not path.is_file():
        raise PlatformError(
            f"the lab has no stand-in recordings of platform {platform!r} (it has: {', '.join(platforms())})"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise PlatformError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("profile") != platform:
        raise PlatformError(f"{path}: 'profile' must be {platform!r}, the file's name")
    return data


@lru_cache(maxsize=16)
def catalog(platform: str | None = None) -> dict[str, Any]:
    """The catalog a node of `platform` replays (None or the base platform: catalog.json as it
    is). Cached: package data that does not change at run time; callers must not modify it."""
    if platform in (None, BASE_PLATFORM):
        return _base()
    return merge(_base(), overlay(platform))


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """The base catalog with a platform's overlay applied (pure; rules in the module docstring)."""
    name = over.get("profile", "?")
    unknown_keys = sorted(set(over) - _OVERLAY_KEYS)
    if unknown_keys:
        raise PlatformError(f"overlay {name}: unknown key(s) {', '.join(unknown_keys)}")
    inherit = list(over.get("inherit_faults", []))
    missing = [f for f in inherit if f not in base["faults"]]
    if missing:
        raise PlatformError(f"overlay {name}: inherit_faults names no base fault {', '.join(missing)}")
    clash = sorted(set(inherit) & set(over.get("faults", {})))
    if clash:
        raise PlatformError(f"overlay {name}: fault(s) {', '.join(clash)} both inherited and redefined")
    faults = {**{f: base["faults"][f] for f in inherit}, **over.get("faults", {})}
    without = set(over.get("without", []))
    absent = sorted(without - set(base["tools"]))
    if absent:
        raise PlatformError(f"overlay {name}: 'without' names tool(s) the base lacks: {', '.join(absent)}")
    own = over.get("tools", {})

    def fits(entry: Mapping[str, Any]) -> bool:
        return set(entry.get("faults", [])) <= set(faults)

    tools: dict[str, list[dict[str, Any]]] = {}
    for tool, entries in base["tools"].items():
        if tool in without:
            continue
        replaced = {tuple(e["args"]) for e in own.get(tool, [])}
        kept = [e for e in entries if tuple(e["args"]) not in replaced and fits(e)]
        tools[tool] = copy.deepcopy(list(own.get(tool, [])) + kept)
    for tool, entries in own.items():
        tools.setdefault(tool, copy.deepcopy(list(entries)))
    stray = sorted({f for es in own.values() for e in es for f in e.get("faults", [])} - set(faults))
    if stray:
        raise PlatformError(
            f"overlay {name}: entries use fault(s) it neither defines nor inherits: {', '.join(stray)}"
        )
    sysfs = {f: v for f, v in base.get("sysfs", {}).items() if f in faults}
    sysfs.update(over.get("sysfs", {}))
    programs = copy.deepcopy(base.get("programs", {}))
    for program, spec in over.get("programs", {}).items():  # key by key: say only what differs
        programs[program] = {**programs.get(program, {}), **copy.deepcopy(spec)}
    merged = {k: v for k, v in base.items() if k not in ("faults", "tools", "sysfs", "programs")}
    merged.update(faults=faults, tools=tools, sysfs=sysfs, programs=programs, platform=name)
    for key in ("pci", "bmc", "demo"):
        if key in over:
            merged[key] = copy.deepcopy(over[key])
    return merged
