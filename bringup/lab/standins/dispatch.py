#!/usr/bin/python3
"""Stand-in hardware tool for lab nodes: prints a recorded real output.

Installed as /usr/local/lib/bringup-standins/dispatch.py inside a lab node's root, with each
tool name (/usr/local/bin/nvidia-smi, lspci, ...) a symlink to it. The node has only Debian's
python3, so this file uses the standard library alone and reads JSON, never YAML.

It looks up (tool name, arguments, the node's faults) in catalog.json next to it, prints the
chosen sample(s) without their `# SOURCE:` line and exits with the recorded exit code.
Arguments it has no recording for get an honest error and a non-zero exit: a stand-in must
never fake a pass.

The same module is imported by the lab package (bringup.lab.standins) so that the selection
rule used to validate fault specs is the one the nodes run.
"""

from __future__ import annotations

import json
import os
import re
import sys

CATALOG_NAME = "catalog.json"
LIB_SUBDIR = os.path.join("usr", "local", "lib", "bringup-standins")
FAULTS_SUBPATH = os.path.join("etc", "bringup-lab", "faults.json")
EXIT_NO_RECORDING = 2  # like a usage error of the real tool
EXIT_BROKEN_SETUP = 3  # catalog or faults file missing/invalid


class StandinError(Exception):
    """Setup error: the catalog, a sample or the faults file is unusable."""


def arg_string(args):
    """The arguments as one string, the form catalog patterns are matched against."""
    return " ".join(args)


def entry_matches(entry, argstr):
    return any(re.fullmatch(pattern, argstr) for pattern in entry["args"])


def select_entry(entries, args, active_faults):
    """The catalog entry for these arguments and faults, or None.

    Among entries whose `args` patterns match, only those whose faults are all active are
    eligible; the one with the most faults wins (a recording of two faults together beats a
    recording of one), ties go to the first in catalog order.
    """
    argstr = arg_string(args)
    active = set(active_faults)
    best = None
    for entry in entries:
        wanted = set(entry.get("faults", []))
        if not wanted <= active or not entry_matches(entry, argstr):
            continue
        if best is None or len(wanted) > len(best.get("faults", [])):
            best = entry
    return best


def render(entry, samples_dir):
    """The bytes the tool prints for this entry: its parts, each a slice of one sample."""
    out = []
    after_each = entry.get("after_each", "").encode()
    for part in entry["output"]:
        path = os.path.join(samples_dir, part["sample"])
        try:
            with open(path, "rb") as f:
                lines = f.read().splitlines(keepends=True)
        except OSError as exc:
            raise StandinError(f"sample {part['sample']}: {exc.strerror}") from exc
        # Line 1 is always the sample's `# SOURCE:` provenance line; `first` is 1-based.
        first = max(int(part.get("first", 2)), 2)
        last = part.get("last")
        chunk = b"".join(lines[first - 1 : last])
        if chunk and not chunk.endswith(b"\n"):
            chunk += b"\n"
        out.append(chunk + after_each)
    return b"".join(out)


def lab_root(here):
    """The node root this dispatcher is installed in ("/" inside a node)."""
    here = os.path.realpath(here)
    if here.endswith(os.sep + LIB_SUBDIR):
        return here[: -len(LIB_SUBDIR)] or os.sep
    return os.sep


def load_catalog(lib_dir):
    try:
        with open(os.path.join(lib_dir, CATALOG_NAME), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise StandinError(f"cannot read {CATALOG_NAME}: {exc}") from exc


def load_faults(path, catalog):
    """The node's active faults; no file means a healthy node."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise StandinError(f"cannot read {path}: {exc}") from exc
    faults = data.get("faults") if isinstance(data, dict) else None
    if not isinstance(faults, list) or not all(isinstance(x, str) for x in faults):
        raise StandinError(f'{path}: expected {{"faults": [names...]}}')
    unknown = [x for x in faults if x not in catalog.get("faults", {})]
    if unknown:
        raise StandinError(f"{path}: unknown fault(s) {', '.join(unknown)}")
    return faults


def main(argv=None):
    argv = sys.argv if argv is None else argv
    tool = os.path.basename(argv[0])
    args = argv[1:]
    lib_dir = os.path.dirname(os.path.realpath(__file__))
    try:
        catalog = load_catalog(lib_dir)
        faults = load_faults(os.path.join(lab_root(lib_dir), FAULTS_SUBPATH), catalog)
        entries = catalog.get("tools", {}).get(tool)
        if entries is None:
            sys.stderr.write(f"stand-in {tool}: not a tool this lab records\n")
            return EXIT_NO_RECORDING
        entry = select_entry(entries, args, faults)
        if entry is None:
            sys.stderr.write(
                f"stand-in {tool}: no recorded output for arguments {arg_string(args)!r}"
                f" (lab stand-in, not the real tool)\n"
            )
            return EXIT_NO_RECORDING
        data = render(entry, os.path.join(lib_dir, "samples"))
    except StandinError as exc:
        sys.stderr.write(f"stand-in {tool}: {exc}\n")
        return EXIT_BROKEN_SETUP
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:  # `| head` closed the pipe: not an error for a CLI
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return int(entry.get("rc", 0))


if __name__ == "__main__":
    sys.exit(main())
