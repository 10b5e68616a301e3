"""The lab's network: one Linux bridge per run, two /24s, and the sweep that undoes it all.

The bridge lives in the host namespace and holds the gateway address of the node subnet plus
the BMC addresses (aliases), so the host reaches fake nodes and fake BMCs directly and nothing
ever leaves the machine: there is no NAT and no uplink.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bringup.core.errors import UserError
from bringup.lab.naming import LabNames
from bringup.local.files import flocked

RUN_DIR = Path("/run/bringup-lab")
NETNS_DIR = Path("/run/netns")
# Lab subnets are carved from here; override for hosts where this range is taken.
POOL = ipaddress.IPv4Network(os.environ.get("BRINGUP_LAB_POOL", "10.213.0.0/16"))
FIRST_HOST = 11  # node_ip(0) / bmc_ip(0) is .11: .1-.10 stay free for lab services


class LabError(UserError, RuntimeError):
    """A lab operation failed; the message carries the command's stderr."""


def run_cmd(
    args: Sequence[str], *, input: str | None = None, timeout: float = 60, env: dict[str, str] | None = None
) -> str:
    """Run a command with check=True semantics and an error that shows what went wrong."""
    try:
        proc = subprocess.run(
            list(args), input=input, capture_output=True, text=True, timeout=timeout, check=True, env=env
        )
    except subprocess.CalledProcessError as exc:
        err = (exc.stderr or exc.stdout or "").strip()[-2000:]
        raise LabError(f"{' '.join(args)} failed (rc={exc.returncode}): {err}") from exc
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"{' '.join(args)} timed out after {timeout}s") from exc
    return proc.stdout


@dataclass
class LabNetwork:
    bridge: str
    node_subnet: ipaddress.IPv4Network
    bmc_subnet: ipaddress.IPv4Network
    gateway: ipaddress.IPv4Address

    def node_ip(self, index: int) -> ipaddress.IPv4Address:
        return self._host(self.node_subnet, index)

    def bmc_ip(self, index: int) -> ipaddress.IPv4Address:
        return self._host(self.bmc_subnet, index)

    @property
    def bmc_gateway(self) -> ipaddress.IPv4Address:
        """The host's own address in the BMC subnet (where a BMC emulator can listen)."""
        return self.bmc_subnet.network_address + 1

    @staticmethod
    def _host(subnet: ipaddress.IPv4Network, index: int) -> ipaddress.IPv4Address:
        offset = FIRST_HOST + index
        if index < 0 or offset >= subnet.num_addresses - 1:
            raise ValueError(f"index {index} does not fit in {subnet}")
        return subnet.network_address + offset


# --- subnet selection -------------------------------------------------------------------------


def _used_networks() -> list[ipaddress.IPv4Network]:
    """IPv4 networks already present on the host: interface addresses and routes."""
    used: list[ipaddress.IPv4Network] = []
    for line in run_cmd(["ip", "-o", "-4", "addr", "show"]).splitlines():
        parts = line.split()
        if "inet" in parts:
            used.append(ipaddress.IPv4Interface(parts[parts.index("inet") + 1]).network)
    for line in run_cmd(["ip", "-4", "route", "show", "table", "all"]).splitlines():
        dest = line.split()[0] if line.split() else ""
        if dest in ("broadcast", "local", "unreachable", "blackhole", "prohibit", "multicast"):
            dest = line.split()[1]
        if dest == "default":
            continue
        try:
            net = ipaddress.IPv4Network(dest, strict=False)
        except ValueError:
            continue
        # A broad route (say 10.0.0.0/8 via a VPN) is shadowed harmlessly by a lab /24; only
        # specific routes mean "somebody uses these addresses".
        if net.prefixlen >= 16:
            used.append(net)
    return used


def _pick_free_subnets(count: int, seed: str) -> list[ipaddress.IPv4Network]:
    used = _used_networks()
    free = [s for s in POOL.subnets(new_prefix=24) if not any(s.overlaps(u) for u in used)]
    if len(free) < count:
        raise LabError(f"no {count} free /24s left in {POOL} (set BRINGUP_LAB_POOL)")
    # Spread by the run id: a process that picks subnets without our lock is unlikely to clash
    # with us, and the same lab gets the same subnets each time (a stable lab inventory).
    return random.Random(seed).sample(free, count)


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def create_network(names: LabNames) -> LabNetwork:
    """Create the run's bridge with the gateway (node subnet .1) and BMC subnet .1 on it.

    Picking and claiming happen under one host-wide flock, and the claim *is* the addresses on
    the bridge, so parallel workers see each other's subnets as used and never pick the same.
    """
    if link_exists(names.bridge):
        raise LabError(f"bridge {names.bridge} already exists: destroy_network() or sweep() it first")
    with flocked(RUN_DIR / "net.lock"):
        node_subnet, bmc_subnet = _pick_free_subnets(2, names.run_id)
        net = LabNetwork(names.bridge, node_subnet, bmc_subnet, node_subnet.network_address + 1)
        try:
            run_cmd(["ip", "link", "add", names.bridge, "type", "bridge"])
            run_cmd(["ip", "link", "set", names.bridge, "up"])
            run_cmd(["ip", "addr", "add", f"{net.gateway}/24", "dev", names.bridge])
            run_cmd(["ip", "addr", "add", f"{net.bmc_gateway}/24", "dev", names.bridge])
        except Exception:
            destroy_network(names)
            raise
    return net


def add_bmc_address(net: LabNetwork, ip: ipaddress.IPv4Address | str) -> None:
    """Add a BMC address as an alias on the bridge (idempotent)."""
    ip = ipaddress.IPv4Address(ip)
    if ip not in net.bmc_subnet:
        raise ValueError(f"{ip} is not in the BMC subnet {net.bmc_subnet}")
    current = run_cmd(["ip", "-o", "-4", "addr", "show", "dev", net.bridge])
    if f" {ip}/" not in current:
        run_cmd(["ip", "addr", "add", f"{ip}/{net.bmc_subnet.prefixlen}", "dev", net.bridge])


def destroy_network(names: LabNames) -> None:
    """Delete the bridge (its addresses and routes go with it). Idempotent."""
    delete_link(names.bridge)


def delete_link(name: str) -> bool:
    """Delete a link if it exists; deleting one end of a veth pair removes both, synchronously."""
    if not link_exists(name):
        return False
    try:
        run_cmd(["ip", "link", "del", name])
    except LabError:
        if link_exists(name):
            raise
    return True


# --- namespaces and processes -----------------------------------------------------------------


def netns_names(prefix: str = "") -> list[str]:
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(prefix))


def netns_pids(netns: Sequence[str]) -> dict[str, list[int]]:
    """Like ``ip netns pids`` for several namespaces in one /proc scan."""
    wanted: dict[tuple[int, int], str] = {}
    for ns in netns:
        try:
            st = os.stat(NETNS_DIR / ns)
        except FileNotFoundError:
            continue
        wanted[(st.st_dev, st.st_ino)] = ns
    found: dict[str, list[int]] = {ns: [] for ns in netns}
    if not wanted:
        return found
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            st = os.stat(f"/proc/{entry.name}/ns/net")
        except OSError:  # process gone, or a kernel thread
            continue
        ns = wanted.get((st.st_dev, st.st_ino))
        if ns is not None:
            found[ns].append(int(entry.name))
    return found


def _own_lineage() -> set[int]:
    """This process and its ancestors: never killed by a sweep, whatever their command line."""
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def pids_with_cmdline(needle: str) -> list[int]:
    """Processes whose command line mentions ``needle`` (e.g. a node launcher mid-start)."""
    skip, hits = _own_lineage(), []
    raw = needle.encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                if raw in f.read():
                    hits.append(int(entry.name))
        except OSError:
            continue
    return hits


def kill_and_wait(pids: Sequence[int], still_alive: Callable[[], list[int]], timeout: float = 10.0) -> None:
    """SIGKILL ``pids`` and wait until ``still_alive()`` returns nothing (reaping our children).

    Killing a node's PID-namespace init takes the whole namespace down with it.
    """
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while True:
        left = still_alive()
        for pid in left:
            _reap(pid)
        left = [p for p in still_alive() if not _is_zombie(p)]
        if not left:
            return
        if time.monotonic() > deadline:
            raise LabError(f"processes {left} survived SIGKILL for {timeout}s")
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True  # gone


# --- mounts -----------------------------------------------------------------------------------


def _unescape_mount_field(field: str) -> str:
    # /proc/mounts escapes space, tab, newline and backslash as octal.
    for code, ch in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, ch)
    return field


def mounts() -> list[tuple[str, str, str]]:
    """(source, mountpoint, fstype) of every mount in this mount namespace."""
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            src, target, fstype = line.split()[:3]
            out.append((_unescape_mount_field(src), _unescape_mount_field(target), fstype))
    return out


def unmount(path: str) -> None:
    """Unmount ``path``; fall back to a lazy unmount if something still holds it."""
    try:
        run_cmd(["umount", path])
    except LabError:
        run_cmd(["umount", "--lazy", path])


def lab_mounts(prefix: str, state_dir: Path | None = None) -> list[str]:
    """Mountpoints belonging to the lab: under state_dir, or naming the prefix in path or source."""
    under = str(state_dir.resolve()) + "/" if state_dir else None
    hits = []
    for src, target, fstype in mounts():
        if fstype == "nsfs" and target.startswith(str(NETNS_DIR) + "/"):
            continue  # namespace handles: `ip netns del` owns those
        if prefix in target or prefix in src or (under and (target + "/").startswith(under)):
            hits.append(target)
    # Deepest first, so nested mounts come off before their parents.
    return sorted(set(hits), key=lambda p: p.count("/"), reverse=True)


# --- sweep ------------------------------------------------------------------------------------


def sweep(prefix: str, state_dir: Path | None = None) -> list[str]:
    """Remove everything carrying ``prefix``; works after a crash, needs no state file.

    Order matters: processes first (they pin namespaces and mounts), then host-side veths
    (deleting one end removes the pair synchronously, unlike namespace deletion), then the
    namespaces, the bridge, and finally the mounts. Returns what was removed, for logs.
    """
    if len(prefix) < 2:
        raise ValueError(f"refusing to sweep the too-short prefix {prefix!r}")
    removed: list[str] = []
    namespaces = netns_names(prefix)
    # Command-line matching only for a full run prefix ("bl" + 6 hex): a short one such as "bl"
    # (sweep every lab) would hit unrelated programs.
    by_cmdline = len(prefix) >= 8

    def alive() -> list[int]:
        pids = {p for ps in netns_pids(namespaces).values() for p in ps}
        if by_cmdline:
            pids |= set(pids_with_cmdline(prefix))
        return sorted(pids)

    victims = alive()
    if victims:
        kill_and_wait(victims, alive)
        removed += [f"pid {p}" for p in victims]

    links = [line.split(":")[1].strip().split("@")[0] for line in run_cmd(["ip", "-o", "link"]).splitlines()]
    bridges = [n for n in links if n.startswith(prefix) and Path("/sys/class/net", n, "bridge").exists()]
    for name in links:
        if name.startswith(prefix) and name not in bridges and delete_link(name):
            removed.append(f"link {name}")
    for ns in namespaces:
        with contextlib.suppress(LabError):
            run_cmd(["ip", "netns", "del", ns])
        if (NETNS_DIR / ns).exists():
            raise LabError(f"namespace {ns} survived `ip netns del`")
        removed.append(f"netns {ns}")
    for name in bridges:
        if delete_link(name):
            removed.append(f"bridge {name}")
    for target in lab_mounts(prefix, state_dir):
        unmount(target)
        removed.append(f"mount {target}")
    return removed
