"""Stand-in hardware tools for lab nodes (nvidia-smi, dcgmi, ibstat, burnin-stress, ...).

A lab node gets executables named like the real tools that print recorded real outputs chosen
by the node's faults (see dispatch.py and catalog.json), and a fake PCI sysfs tree of an
HGX H100 host (sysfs.py) that its init mounts over /sys. Only the lab uses this package:
nothing in bringup/ or burnin/ outside lab/ may know about faults.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bringup.lab.standins import dispatch, front
from bringup.lab.standins.catalog_file import BASE_PLATFORM, catalog
from bringup.lab.standins.catalog_file import CATALOG_PATH as CATALOG_PATH  # re-exported for the lab
from bringup.lab.standins.catalog_file import PlatformError as PlatformError
from bringup.lab.standins.catalog_file import platforms as platforms
from bringup.lab.standins.sysfs import install_fake_sysfs

PACKAGE_DIR = Path(__file__).resolve().parent
SAMPLES_DIR = PACKAGE_DIR / "samples"
# Stand-ins that are programs rather than recordings (they talk to each other across nodes):
# each file here is installed as /usr/local/bin/<name>; it reads the node's faults file itself.
PROGRAMS_DIR = PACKAGE_DIR / "programs"
DISPATCHER_PATH = PACKAGE_DIR / "dispatch.py"

# Where things land inside a node root (the dispatcher derives the root from its own path).
LIB_DIR = Path(dispatch.LIB_SUBDIR)
BIN_DIR = Path("usr/local/bin")
FAULTS_FILE = Path(dispatch.FAULTS_SUBPATH)


def known_faults(platform: str | None = None) -> dict[str, str]:
    """Fault name -> one-line description, from the catalog of `platform` (None: the base's)."""
    return dict(catalog(platform)["faults"])


def tool_names(platform: str | None = None) -> list[str]:
    return sorted(catalog(platform)["tools"])


def fault_conflicts(faults: Sequence[str], platform: str | None = None) -> list[str]:
    """Why these faults cannot be combined on one node, one message per clash ([] = fine).

    Two faults clash when both change the output of the same command and the catalog has no
    recording of them together: the dispatcher would silently show only one of them.
    """
    active = set(faults)
    problems = _sysfs_conflicts(active, platform)
    for tool, entries in catalog(platform)["tools"].items():
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for entry in entries:
            groups.setdefault(tuple(entry["args"]), []).append(entry)
        for args, group in groups.items():
            relevant = {f for e in group for f in e.get("faults", []) if f in active}
            chosen = _best(group, active)
            covered = set(chosen.get("faults", [])) if chosen else set()
            if not relevant <= covered:
                problems.append(
                    f"faults {', '.join(sorted(relevant))} all change `{tool} {args[0]}` and no "
                    f"recording combines them"
                )
    return problems


def _sysfs_conflicts(active: set[str], platform: str | None) -> list[str]:
    owner: dict[tuple[str, str], str] = {}
    problems = []
    for fault, devices in sorted(catalog(platform).get("sysfs", {}).items()):
        if fault not in active:
            continue
        for bdf, files in devices.items():
            for name in files:
                other = owner.setdefault((bdf, name), fault)
                if other != fault:
                    problems.append(f"faults {other}, {fault} both change sysfs {bdf}/{name}")
    return problems


def _best(group: list[dict[str, Any]], active: set[str]) -> dict[str, Any] | None:
    # Same rule as dispatch.select_entry, minus argument matching (the group shares its args).
    best = None
    for entry in group:
        wanted = set(entry.get("faults", []))
        if wanted <= active and (best is None or len(wanted) > len(best.get("faults", []))):
            best = entry
    return best


def check_faults(faults: Sequence[str], platform: str | None = None) -> None:
    """Raise ValueError if a fault is unknown (on `platform`), repeated, or clashes with another."""
    known = known_faults(platform)
    unknown = [f for f in faults if f not in known]
    if unknown:
        raise ValueError(
            f"unknown fault(s) {', '.join(unknown)}{on_platform(platform)}; known: {', '.join(sorted(known))}"
        )
    if len(set(faults)) != len(faults):
        raise ValueError(f"repeated fault in {list(faults)}")
    problems = fault_conflicts(faults, platform)
    if problems:
        raise ValueError("; ".join(problems))


def on_platform(platform: str | None) -> str:
    """ " on platform X" for messages about a platform other than the base, else ""."""
    return f" on platform {platform}" if platform not in (None, BASE_PLATFORM) else ""


def install_standins(root: Path, faults: Sequence[str], platform: str | None = None) -> None:
    """Install the dispatcher, catalog, samples, tool links, the fault list and the fake sysfs
    tree (as a tar the node's init unpacks, see sysfs.py) into a node root.

    Idempotent: re-running replaces everything it wrote, so a node's faults can be changed
    between runs (the sysfs tree of a running node changes at its next start). Tool entries
    are relative symlinks, valid both inside the node's chroot and from the host.

    The node's identity file (etc/bringup-lab/identity.json with its `index`) must be in the
    root before this runs: the outputs rendered here and the sysfs tree carry the node's own
    InfiniBand GUIDs (dispatch.rewrite_guids); without the file the recordings stay as they are.

    `platform` (a profile name; None: the base, HGX H100) picks the recordings: the node gets the
    platform's merged catalog (catalog_file.merge) as its catalog.json, so the dispatcher on the
    node needs to know nothing of platforms.
    """
    check_faults(faults, platform)
    node_catalog = catalog(platform)
    root = Path(root)
    node = dispatch.node_number(root)  # IB GUIDs renumbered for the node (read before install)
    lib = root / LIB_DIR
    if lib.exists():
        shutil.rmtree(lib)
    (lib / "samples").mkdir(parents=True)
    shutil.copy2(DISPATCHER_PATH, lib / "dispatch.py")
    os.chmod(lib / "dispatch.py", 0o755)
    (lib / dispatch.CATALOG_NAME).write_text(json.dumps(node_catalog, indent=1) + "\n", encoding="utf-8")
    for sample in sorted(SAMPLES_DIR.iterdir()):
        if sample.is_file():
            shutil.copy2(sample, lib / "samples" / sample.name)

    faults_json = json.dumps({"faults": list(faults)}, indent=2) + "\n"
    faults_file = root / FAULTS_FILE
    faults_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = faults_file.with_suffix(".tmp")
    tmp.write_text(faults_json, encoding="utf-8")
    tmp.replace(faults_file)  # atomic: a tool running meanwhile never reads half a file

    # Each tool: a bash front resolved for these faults (front.py) in bin/, falling back to
    # dispatch.py through lib/tools/<tool> (a link, so dispatch.py sees the tool's name).
    bin_dir = root / BIN_DIR
    bin_dir.mkdir(parents=True, exist_ok=True)
    (lib / "tools").mkdir()
    (lib / "resolved").mkdir()
    lib_from_bin = os.path.relpath(lib, bin_dir)
    for tool in tool_names(platform):
        (lib / "tools" / tool).symlink_to(os.path.join("..", "dispatch.py"))
        entries = node_catalog["tools"][tool]
        for index in front.ordered_eligible(entries, faults):
            if entries[index].get("output") is not None:
                data = dispatch.for_node(dispatch.render(entries[index], str(SAMPLES_DIR)), node)
                (lib / "resolved" / f"{tool}.{index}").write_bytes(data)
        script = bin_dir / tool
        if script.is_symlink() or script.exists():
            script.unlink()
        script.write_text(
            front.front_script(tool, entries, faults, lib_from_bin, faults_json), encoding="utf-8"
        )
        script.chmod(0o755)

    for program in sorted(PROGRAMS_DIR.glob("*")) if PROGRAMS_DIR.is_dir() else []:
        if program.is_file() and not program.name.startswith(("_", ".")):
            shutil.copy2(program, bin_dir / program.name)
            (bin_dir / program.name).chmod(0o755)

    install_fake_sysfs(root, faults, platform=platform)  # unpacked into a tmpfs by the node's init
