#!/usr/bin/python3 -SI
"""Stand-in hardware tool for lab nodes: prints a recorded real output.

Installed as /usr/local/lib/bringup-standins/dispatch.py inside a lab node's root, with each
tool name (/usr/local/bin/nvidia-smi, lspci, ...) a symlink to it. The node has only Debian's
python3, so this file uses the standard library alone and reads JSON, never YAML.

It looks up (tool name, arguments, the node's faults) in catalog.json next to it, prints the
chosen sample(s) without their `# SOURCE:` line and exits with the recorded exit code.
Arguments it has no recording for get an honest error and a non-zero exit: a stand-in must
never fake a pass.

A tool that runs for a while (the GPU stress program) is an entry with `hold`: it lasts the
seconds its arguments ask for, and while it runs it writes `sysfs_during` values into the node's
fake sysfs tree (sysfs.py; GPU links speed up under load), restoring the old contents when it
ends, also on SIGTERM, SIGINT or SIGHUP. A `render` hook may adapt the recording to the
arguments (the stress JSON's duration and iteration counts).

Every node replays the same recordings, but no real fabric has two HCAs with one GUID: the
InfiniBand GUIDs in what a tool prints are renumbered for the node (`rewrite_guids`, the node's
number from its identity file), the same way in the fake sysfs tree (sysfs.py).

The same module is imported by the lab package (bringup.lab.standins) so that the selection
rule used to validate fault specs is the one the nodes run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time

CATALOG_NAME = "catalog.json"
LIB_SUBDIR = os.path.join("usr", "local", "lib", "bringup-standins")
FAULTS_SUBPATH = os.path.join("etc", "bringup-lab", "faults.json")
SYSFS_SUBPATH = os.path.join("etc", "bringup-lab", "sysfs")  # the fake tree (sysfs.py)
IDENTITY_SUBPATH = os.path.join("etc", "bringup-lab", "identity.json")  # written by lab/rack.py
# The node's view of the lab's simulated fabric (bringup/lab/fabric.py); ibstat's ports on it
# answer from it: their LID, the SM's LID, and Down/Polling where the cable is not laid.
FABRIC_SUBPATH = os.path.join("etc", "bringup-lab", "fabric.json")
# The node's NVL72 rack (bringup/lab/nvlink_rack.py): its rack ("r02"), tray and the rack's faults.
RACK_SUBPATH = os.path.join("etc", "bringup-lab", "nvlink-rack.json")
RACK_TRAYS = 18  # compute trays per NVL72 rack (lab nodes are racked in index order)
FABRIC_TOOLS = ("ibstat",)
EXIT_NO_RECORDING = 2  # like a usage error of the real tool
EXIT_BROKEN_SETUP = 3  # catalog, faults file or fake sysfs tree missing/invalid


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


def render(entry, samples_dir, logged_at=None):
    """The bytes the tool prints for this entry: its parts, each a slice of one sample. A part
    `logged_by` a fault with a stamp in `logged_at` is restamped to start then."""
    logged_at = logged_at or {}
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
        if part.get("logged_by") in logged_at:
            chunk = restamp(chunk, parse_iso_stamp(logged_at[part["logged_by"]]))
        out.append(chunk + after_each)
    return b"".join(out)


# ---- the node's own InfiniBand identity ---------------------------------------------------------
# A GUID is 8 bytes: the vendor's OUI (3 bytes), then bytes the vendor numbers its ports with.
# Lab rule: keep the OUI and the recording's low 3 bytes (distinct for the HCAs of one node), and
# put the node's number (16 bits) in bytes 3-4: on node03, 0xa088c20300e04776 -> 0xa088c20003e04776.
# Only GUIDs with the OUI of the recorded HCAs are touched, so other 64-bit hex (throttle-reason
# masks, VPD blobs) stays as recorded.
HCA_OUIS = ("a088c2",)  # NVIDIA/Mellanox: the ConnectX-7s of the ibstat recordings
MAX_NODE_NUMBER = 0xFFFF
_HEX = "[0-9a-f]"
_EDGE = "[0-9a-z_]"  # a GUID is not part of a longer word or number


def _guid_regex(ouis):
    forms = []
    for oui in ouis:
        a, b, c = oui[0:2], oui[2:4], oui[4:6]
        # 0xa088c20300e04776: ibstat, ibnetdiscover, iblinkinfo
        forms.append(rf"0x{a}{b}{c}{_HEX}{{10}}(?!{_EDGE})")
        # a088:c203:00e0:4776: sysfs node_guid, ibv_devinfo; also the last half of a GID
        # (fe80:0000:0000:0000:a088:c203:00e0:4776), so a ':' may come before it
        forms.append(rf"{a}{b}:{c}{_HEX}{{2}}(?::{_HEX}{{4}}){{2}}(?!{_EDGE}|:{_HEX})")
        # a0:88:c2:03:00:e0:47:76 or with '-': lspci's Device Serial Number, an IPoIB address's tail
        for sep in ":-":
            forms.append(rf"{a}{sep}{b}{sep}{c}(?:{sep}{_HEX}{{2}}){{5}}(?!{_EDGE}|[:-]{_HEX})")
    return re.compile(rf"(?<!{_EDGE})(?:{'|'.join(forms)})", re.IGNORECASE)


_GUID_RE = _guid_regex(HCA_OUIS)


def node_guid(guid, node):
    """One GUID as it reads on lab node number `node`, in the same notation and letter case."""
    prefix = guid[:2] if guid[:2] in ("0x", "0X") else ""
    body = guid[len(prefix) :]
    digits = [ch for ch in body if ch not in ":-"]
    number = f"{node:04x}"
    if any(ch.isupper() for ch in body):
        number = number.upper()
    new = iter(digits[:6] + list(number) + digits[10:])
    return prefix + "".join(ch if ch in ":-" else next(new) for ch in body)


def rewrite_guids(text, node):
    """The text with every GUID of a recorded HCA renumbered for lab node number `node`."""
    if not 0 <= node <= MAX_NODE_NUMBER:
        raise ValueError(f"node number {node} out of range 0..{MAX_NODE_NUMBER}")
    return _GUID_RE.sub(lambda m: node_guid(m.group(0), node), text)


def for_node(data, node):
    """Output bytes for node number `node`; unchanged when the node has none (a bare root)."""
    if node is None:
        return data
    # latin-1 maps bytes 1:1, so everything but the GUIDs stays byte for byte as recorded
    return rewrite_guids(data.decode("latin-1"), node).encode("latin-1")


def node_number(root):
    """The node's number for its IB identity: `index` + 1 of its identity file (node01 -> 1).

    None when the root has no identity file or the file no index (a root not made by the lab's
    rack, e.g. a test's): its tools print the recordings unchanged.
    """
    path = os.path.join(root, IDENTITY_SUBPATH)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StandinError(f"cannot read {path}: {exc}") from exc
    index = data.get("index") if isinstance(data, dict) else None
    if index is None:
        return None
    if type(index) is not int or not 0 <= index < MAX_NODE_NUMBER:
        raise StandinError(f"{path}: index must be an integer 0..{MAX_NODE_NUMBER - 1}, got {index!r}")
    return index + 1


# ---- the node's own subnet ---------------------------------------------------------------------
# A recording that lists the rack's management addresses (`nvidia-imex-ctl -N`: one per tray) is
# recorded on 10.20.3.11 + k; a lab node i sits at <its /24>.11 + i (bringup/lab/network.py), so
# an entry's `lab_subnet` prefix is replaced by the node's own /24 and tray k of the node's rack r
# (r = 0 for node01..node18) is lab node 18r + k. A recorded multi-node NVLink domain is made the
# rack's own the same way: an entry's `rack_clique` (the recording's CliqueId) + r.
ROUTE_FILE = "/proc/net/route"  # the kernel's IPv4 routes of the reading process's namespace
SIOCGIFADDR = 0x8915  # the ioctl that reads an interface's IPv4 address (linux/sockios.h)


def node_subnet_prefix(route_file=ROUTE_FILE, iface="eth0"):
    """'a.b.c' of the /24 the node's `iface` is on: its connected route, else (a lab node's /proc
    shows its processes only, no /proc/net) its address; None if it has neither."""
    try:
        with open(route_file, encoding="ascii") as f:
            rows = [line.split() for line in f.read().splitlines()[1:]]
    except OSError:
        return interface_prefix(iface)
    for row in rows:
        if len(row) >= 8 and row[0] == iface and row[2] == "00000000" and row[7] == "00FFFFFF":
            octets = bytes.fromhex(row[1])[::-1]  # the file holds addresses little-endian
            return ".".join(str(b) for b in octets[:3])
    return None


def interface_prefix(iface):
    """The first three octets of `iface`'s IPv4 address (the lab's subnets are /24s), or None."""
    import fcntl
    import socket
    import struct

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            raw = fcntl.ioctl(sock.fileno(), SIOCGIFADDR, struct.pack("256s", iface.encode()[:15]))
    except OSError:
        return None
    return ".".join(str(b) for b in raw[20:23])  # struct ifreq: the sockaddr_in's address


def rewrite_subnet(data, recorded, prefix, rack=0):
    """Every address of the recorded /24 (`recorded`: 'a.b.c') moved to `prefix`, its last octet
    raised by the trays of the racks before `rack`."""
    if not prefix:
        return data
    pattern = re.compile(r"(?<![0-9.])" + re.escape(recorded) + r"\.([0-9]{1,3})(?![0-9])")

    def moved(m):
        return f"{prefix}.{int(m.group(1)) + RACK_TRAYS * rack}"

    return pattern.sub(moved, data.decode("latin-1")).encode("latin-1")


def rewrite_clique(data, recorded, rack):
    """The recording's CliqueId made rack `rack`'s own (recorded + rack): each rack a domain."""
    if not rack:
        return data
    pattern = re.compile(r"(?m)^(\s*CliqueId\s*: )" + re.escape(str(recorded)) + r"$")
    return pattern.sub(lambda m: m.group(1) + str(int(recorded) + rack), data.decode("latin-1")).encode(
        "latin-1"
    )


def node_rack(root):
    """The node's rack number (0 for r01) from its nvlink-rack.json; 0 without one."""
    try:
        with open(os.path.join(root, RACK_SUBPATH), encoding="utf-8") as f:
            rack = json.load(f).get("rack", "r01")
        return max(0, int(str(rack).lstrip("r")) - 1)
    except (OSError, ValueError, AttributeError):
        return 0


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
    return load_fault_file(path, catalog)[0]


def load_fault_file(path, catalog):
    """(active faults, {fault: the time its kernel-log lines were logged}); no file: healthy."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return [], {}
    except (OSError, ValueError) as exc:
        raise StandinError(f"cannot read {path}: {exc}") from exc
    faults = data.get("faults") if isinstance(data, dict) else None
    if not isinstance(faults, list) or not all(isinstance(x, str) for x in faults):
        raise StandinError(f'{path}: expected {{"faults": [names...]}}')
    unknown = [x for x in faults if x not in catalog.get("faults", {})]
    if unknown:
        raise StandinError(f"{path}: unknown fault(s) {', '.join(unknown)}")
    logged_at = data.get("logged_at", {})
    if not isinstance(logged_at, dict) or not all(parse_iso_stamp(v) is not None for v in logged_at.values()):
        raise StandinError(f"{path}: 'logged_at' must map faults to dmesg ISO stamps")
    return faults, logged_at


def fabric_ibstat(data, hcas):
    """ibstat's output with the fabric's facts for its CAs on the lab fabric (`hcas`: CA name ->
    lid, sm_lid, state, physical_state, rate as fabric.json has them). An Active port keeps its
    recorded state and rate (an ib-port-degraded recording stays as recorded)."""
    out, ca = [], None
    for line in data.decode("latin-1").splitlines(keepends=True):
        m = re.match(r"^CA '([^']+)'", line)
        if m:
            ca = hcas.get(m.group(1))
        m = re.match(r"^(\s+)(State|Physical state|Rate|Base lid|SM lid): .*?(\r?\n?)$", line)
        if ca is not None and m:
            key = m.group(2)
            value = {"Base lid": ca["lid"], "SM lid": ca["sm_lid"]}.get(key)
            if value is None and ca["state"] != "Active":
                value = {"State": ca["state"], "Physical state": ca["physical_state"], "Rate": ca["rate"]}[
                    key
                ]
            if value is not None:
                line = f"{m.group(1)}{key}: {value}{m.group(3)}"
        out.append(line)
    return "".join(out).encode("latin-1")


def load_fabric_view(root):
    """The node's fabric.json, or None on a lab without a simulated fabric."""
    try:
        with open(os.path.join(root, FABRIC_SUBPATH), encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StandinError(f"cannot read {FABRIC_SUBPATH}: {exc}") from exc


# ---- kernel-log lines logged when a fault was switched on ----------------------------------------
# `dmesg --time-format iso`: 2025-01-18T09:14:07,074554+00:00 (comma, microseconds, UTC offset).
_ISO_STAMP = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d),(\d{6})\+00:00")


def parse_iso_stamp(text):
    """Microseconds since the epoch of a line's leading dmesg ISO stamp (UTC), or None."""
    m = _ISO_STAMP.match(text) if isinstance(text, str) else None
    if m is None:
        return None
    y, mo, d, h, mi, s, us = (int(g) for g in m.groups())
    return ((_days_since_epoch(y, mo, d) * 24 + h) * 60 + mi) * 60_000_000 + s * 1_000_000 + us


def _days_since_epoch(y, m, d):
    """Days from 1970-01-01 to a proleptic Gregorian date (calendar.timegm's arithmetic; the
    dispatcher imports only what a stand-in's start needs)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def iso_stamp(micros):
    """The dmesg ISO stamp of microseconds since the epoch (UTC)."""
    seconds, us = divmod(micros, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f",{us:06d}+00:00"


def restamp(data, start_micros):
    """Kernel-log lines moved in time so the first stamped one is at `start_micros`, the gaps
    between them kept; continuation lines (no stamp) stay as they are."""
    out, shift = [], None
    for line in data.decode("latin-1").splitlines(keepends=True):
        at = parse_iso_stamp(line)
        if at is not None:
            shift = start_micros - at if shift is None else shift
            line = iso_stamp(at + shift) + line[_ISO_STAMP.match(line).end() :]
        out.append(line)
    return "".join(out).encode("latin-1")


def sysfs_attr_path(bdf, name=""):
    """A device's file in the fake sysfs tree, relative to the tree, through its bus/pci link."""
    parts = ["bus", "pci", "devices", bdf] + ([name] if name else [])
    return os.path.join(*parts)


def hold_seconds(hold, args):
    """(seconds asked for, seconds to run) of a holding entry; ValueError on a bad value.

    The value follows `hold["seconds_arg"]` (`--seconds 3` or `--seconds=3`), else
    `hold["default"]`; the run lasts at least `hold["min"]` (a stress run of 0 s still starts).
    """
    flag = hold["seconds_arg"]
    value = None
    for i, arg in enumerate(args):
        if arg == flag:
            value = args[i + 1] if i + 1 < len(args) else ""
        elif arg.startswith(flag + "="):
            value = arg[len(flag) + 1 :]
    try:
        asked = float(hold.get("default", 0) if value is None else value)
    except ValueError:
        asked = -1.0
    if not 0 <= asked < float("inf"):
        raise ValueError(f"{flag} must be a non-negative number of seconds, got {value!r}")
    return asked, max(asked, float(hold.get("min", 0)))


def render_burnin_stress(data, seconds):
    """The stress JSON for a run of `seconds`: duration and each GPU's iterations rescaled.

    One iteration is a size x size x size matmul (2 * size^3 flop) at the recorded TFLOP/s.
    """
    doc = json.loads(data)
    doc["seconds"] = int(seconds) if float(seconds).is_integer() else seconds
    flop = 2 * doc["size"] ** 3
    for gpu in doc["gpus"]:
        gpu["iterations"] = max(1, int(gpu["tflops"] * 1e12 * seconds / flop))
    return (json.dumps(doc, indent=2) + "\n").encode()


RENDERERS = {"burnin-stress-json": render_burnin_stress}


def _write_atomic(path, data):
    # Readers never see a half-written attribute: write aside, then rename over it.
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".standin")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def apply_sysfs(tree, changes, saved):
    """Write {BDF: {file: value}} into the fake tree, appending (path, old bytes) to `saved` first."""
    for bdf, files in sorted(changes.items()):
        for name, value in sorted(files.items()):
            path = os.path.join(tree, sysfs_attr_path(bdf, name))
            try:
                with open(path, "rb") as f:
                    saved.append((path, f.read()))
                _write_atomic(path, (value.rstrip("\n") + "\n").encode())
            except OSError as exc:
                raise StandinError(f"fake sysfs {path}: {exc.strerror}") from exc


def restore_sysfs(saved):
    for path, data in reversed(saved):
        _write_atomic(path, data)


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through `finally`, which restores the tree


def hold(seconds, changes, tree):
    """Run `seconds` with the sysfs `changes` in place; always put the tree back."""
    saved = []
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _exit_on_signal)
    try:
        apply_sysfs(tree, changes, saved)
        time.sleep(seconds)
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)  # a second signal must not cut the restore short
        restore_sysfs(saved)


def main(argv=None):
    argv = sys.argv if argv is None else argv
    tool = os.path.basename(argv[0])
    args = argv[1:]
    lib_dir = os.path.dirname(os.path.realpath(__file__))
    try:
        catalog = load_catalog(lib_dir)
        faults, logged_at = load_fault_file(os.path.join(lab_root(lib_dir), FAULTS_SUBPATH), catalog)
        node = node_number(lab_root(lib_dir))
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
        data = render(entry, os.path.join(lib_dir, "samples"), logged_at)
        if "hold" in entry:
            try:
                asked, held = hold_seconds(entry["hold"], args)
            except ValueError as exc:
                sys.stderr.write(f"stand-in {tool}: {exc}\n")
                return EXIT_NO_RECORDING
            if entry.get("render"):
                data = RENDERERS[entry["render"]](data, asked)
            hold(held, entry.get("sysfs_during", {}), os.path.join(lab_root(lib_dir), SYSFS_SUBPATH))
        if entry.get("lab_subnet"):
            data = rewrite_subnet(
                data, entry["lab_subnet"], node_subnet_prefix(), node_rack(lab_root(lib_dir))
            )
        if entry.get("rack_clique"):
            data = rewrite_clique(data, entry["rack_clique"], node_rack(lab_root(lib_dir)))
        if tool in FABRIC_TOOLS:
            view = load_fabric_view(lab_root(lib_dir))
            if view is not None:
                data = fabric_ibstat(data, view.get("hcas", {}))
        data = for_node(data, node)
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
