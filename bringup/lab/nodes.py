"""Fake nodes: a network namespace, an overlay root on the cached base, and sshd as PID 1.

A node is as real as the lab needs: its own IP and MAC on the lab bridge, hostname, host key,
process tree and writable disk (the overlay's upper dir survives stop/start, like a real disk).
It shares the host's kernel, CPUs and memory. Recipe and timings: docs/lab.md.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bringup.lab.naming import LabNames, check_node_name
from bringup.lab.network import (
    NETNS_DIR,
    RUN_DIR,
    LabError,
    LabNetwork,
    delete_link,
    flocked,
    kill_and_wait,
    link_exists,
    netns_pids,
    run_cmd,
    unmount,
)

Prepare = Callable[[Path], None]
SSH_PORT = 22
DEFAULT_START_TIMEOUT = 30.0

# Runs as PID 1 of the node's fresh PID/UTS/mount namespaces, inside its network namespace
# (arguments: root, hostname, netns; the netns is only there so `ps` shows whose node it is).
# It mounts the kernel filesystems into the overlay root, then pivot_root()s into it and
# detaches the host's tree, so the node's mount namespace pins nothing of the host (other
# nodes' overlays, /run/netns handles) and each node can be torn down independently.
NODE_INIT = r"""
set -eu
root=$1
name=$2
cd "$root"
mount -t proc -o nosuid,nodev,noexec proc proc
# A lab node gets a boot id of its own, new at each start, bound over the host's: its BMC's power
# cycle writes another in place (reboot.py), so the node's kernel-log readers see a new boot.
if [ -d etc/bringup-lab ]; then
    cat proc/sys/kernel/random/uuid > etc/bringup-lab/boot_id
    mount --bind etc/bringup-lab/boot_id proc/sys/kernel/random/boot_id
fi
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs sys
# A node prepared with the stand-ins has a fake PCI tree (standins/sysfs.py), unpacked into a
# tmpfs (writable for the stress stand-in) that replaces /sys/devices and /sys/bus/pci. The real
# non-PCI parts of /sys/devices (virtual/net, system/cpu, ...) are bound into it first.
fake=etc/bringup-lab/sysfs
if [ -f "$fake.tar" ] && [ -d sys/bus/pci ]; then
    mkdir -p "$fake"
    mount -t tmpfs -o nosuid,nodev,mode=0755,size=32m bringup-sysfs "$fake"
    tar -xf "$fake.tar" -C "$fake"
    for dir in sys/devices/*; do
        case ${dir##*/} in pci*) continue ;; esac
        [ -d "$dir" ] || continue
        if [ "${dir##*/}" = virtual ] && [ -d etc/bringup-lab/dmi ]; then
            # The node's own SMBIOS identity (its BMC's serial and UUID) as the kernel shows it,
            # in virtual/dmi/id: virtual's other children are bound one by one around it.
            for sub in "$dir"/*; do
                [ "${sub##*/}" = dmi ] && continue
                mkdir -p "$fake/devices/virtual/${sub##*/}"
                mount --bind "$sub" "$fake/devices/virtual/${sub##*/}"
            done
            mkdir -p "$fake/devices/virtual/dmi/id"
            cp -p etc/bringup-lab/dmi/* "$fake/devices/virtual/dmi/id/"
            continue
        fi
        mkdir -p "$fake/devices/${dir##*/}"
        mount --bind "$dir" "$fake/devices/${dir##*/}"
    done
    mount --rbind "$fake/devices" sys/devices
    mount --bind "$fake/bus/pci" sys/bus/pci
fi
mount -t tmpfs -o nosuid,mode=0755,size=16m tmpfs dev
for spec in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0"; do
    set -- $spec
    mknod -m 0666 "dev/$1" c "$2" "$3"
done
mkdir -m 0755 dev/pts
mkdir -m 1777 dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts dev/pts
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs dev/shm
ln -s pts/ptmx dev/ptmx
ln -s /proc/self/fd dev/fd
ln -s /proc/self/fd/0 dev/stdin
ln -s /proc/self/fd/1 dev/stdout
ln -s /proc/self/fd/2 dev/stderr
mount -t tmpfs -o nosuid,nodev,mode=0755,size=64m tmpfs run
mkdir -m 0755 run/sshd
echo "$name" > /proc/sys/kernel/hostname
pivot_root . .
umount -l .
cd /
exec /usr/sbin/sshd -D -e
"""


@dataclass
class FakeNode:
    name: str
    index: int
    netns: str
    ip: str
    mac: str
    root: Path  # merged overlay dir (the node's "/")
    upper: Path  # everything the node wrote
    pid: int | None  # the launcher (unshare); the node dies with it
    veth_host: str = ""
    log: Path | None = None  # sshd's stderr


@dataclass(frozen=True)
class NodeSpec:
    name: str
    index: int
    mac: str
    prepare: Prepare | None = None  # overrides start_nodes(prepare=...) for this node


# Launcher processes we started, so stop_node can reap them (no zombies left behind).
_PROCS: dict[int, subprocess.Popen[bytes]] = {}
_PROCS_LOCK = threading.Lock()


def default_specs(
    names: LabNames, count: int, start_index: int = 0, fmt: str = "node{:02d}"
) -> list[NodeSpec]:
    """``count`` nodes named node00, node01, ... with MACs derived from the run id."""
    return [NodeSpec(fmt.format(i), i, names.mac(i)) for i in range(start_index, start_index + count)]


def _ensure_netns_dir(names: LabNames) -> None:
    """Create /run/netns's shared mount once, under a lock.

    The first `ip netns add` on a host bind-mounts /run/netns onto itself; two racing first
    calls stack two such mounts. Doing it once, serially, keeps the host tidy.
    """
    if os.path.ismount(NETNS_DIR):
        return
    with flocked(RUN_DIR / "netns.lock"):
        if not os.path.ismount(NETNS_DIR):
            probe = f"{names.prefix}-probe"
            run_cmd(["ip", "netns", "add", probe])
            run_cmd(["ip", "netns", "del", probe])


def ed25519_keypair() -> tuple[bytes, bytes]:
    """(private key in OpenSSH format, public key line): node host keys and the lab's login key."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public


def _write(path: Path, data: str | bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    path.chmod(mode)


def _write_identity(node: FakeNode, authorized_key: str) -> None:
    root = node.root
    private, public = ed25519_keypair()
    _write(root / "etc/ssh/ssh_host_ed25519_key", private, 0o600)
    _write(root / "etc/ssh/ssh_host_ed25519_key.pub", public + f" root@{node.name}\n".encode(), 0o644)
    _write(root / "etc/hostname", node.name + "\n", 0o644)
    _write(root / "etc/hosts", f"127.0.0.1\tlocalhost\n{node.ip}\t{node.name}\n", 0o644)
    (root / "root/.ssh").mkdir(mode=0o700, parents=True, exist_ok=True)
    _write(root / "root/.ssh/authorized_keys", authorized_key.strip() + "\n", 0o600)


def _log_tail(node: FakeNode, lines: int = 20) -> str:
    if node.log is None or not node.log.exists():
        return "(no log)"
    return "\n".join(node.log.read_text(errors="replace").splitlines()[-lines:]) or "(log empty)"


def _wait_for_ssh(node: FakeNode, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise LabError(
                f"node {node.name}: sshd exited with rc={proc.returncode}; tail of {node.log}:\n{_log_tail(node)}"
            )
        with contextlib.suppress(OSError), socket.create_connection((node.ip, SSH_PORT), timeout=0.5):
            return
        if time.monotonic() > deadline:
            raise LabError(
                f"node {node.name}: port {SSH_PORT} on {node.ip} not open after {timeout}s; "
                f"tail of {node.log}:\n{_log_tail(node)}"
            )
        time.sleep(0.01)


def _launch(node: FakeNode) -> subprocess.Popen[bytes]:
    assert node.log is not None
    # The script lives next to the node (short, readable `ps` lines); sh keeps it open, so it
    # keeps running after pivot_root detaches the host's tree.
    script = node.root.parent / "init.sh"
    script.write_text(NODE_INIT.lstrip())
    with open(node.log, "ab") as log:
        # nsenter joins the network namespace; unshare gives the node its own PID, UTS and mount
        # namespaces (--kill-child: the node dies if the launcher is killed). A new session keeps
        # the node alive when the CLI that started it exits or its terminal closes.
        cmd = ["nsenter", f"--net={NETNS_DIR / node.netns}"]
        cmd += ["unshare", "--uts", "--pid", "--mount", "--propagation", "private", "--fork", "--kill-child"]
        cmd += ["sh", str(script), str(node.root), node.name, node.netns]
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    with _PROCS_LOCK:
        _PROCS[proc.pid] = proc
    return proc


def start_node(
    names: LabNames,
    net: LabNetwork,
    name: str,
    index: int,
    base: Path,
    state_dir: Path,
    mac: str,
    authorized_key: str,
    prepare: Prepare | None = None,
    timeout: float = DEFAULT_START_TIMEOUT,
) -> FakeNode:
    """Start one node; returns once its sshd accepts TCP connections. Cleans up on failure."""
    check_node_name(name)
    node_dir = (state_dir / "nodes" / name).resolve()
    base = base.resolve()
    for p in (node_dir, base):
        if any(c in str(p) for c in ",:\n"):
            raise ValueError(f"overlay paths cannot contain ',', ':' or newlines: {p}")
    ip = net.node_ip(index)
    node = FakeNode(
        name=name,
        index=index,
        netns=names.netns(name),
        ip=str(ip),
        mac=mac,
        root=node_dir / "root",
        upper=node_dir / "upper",
        pid=None,
        veth_host=names.veth_host(index),
        log=node_dir / "sshd.log",
    )
    # Refuse, without touching anything, to start over a live node or an unswept leftover.
    if (NETNS_DIR / node.netns).exists() or link_exists(node.veth_host) or os.path.ismount(node.root):
        raise LabError(f"node {name} ({node.netns}) already exists: stop_node() or sweep() it first")
    try:
        for d in (node.root, node.upper, node_dir / "work"):
            d.mkdir(parents=True, exist_ok=True)
        _ensure_netns_dir(names)
        run_cmd(["ip", "netns", "add", node.netns])
        # The node end is born inside the namespace as eth0, with the MAC the BMC reports.
        veth = ["ip", "link", "add", node.veth_host, "type", "veth"]
        run_cmd([*veth, "peer", "name", "eth0", "address", mac, "netns", node.netns])
        run_cmd(["ip", "link", "set", node.veth_host, "master", net.bridge, "up"])
        run_cmd(
            ["ip", "-n", node.netns, "-batch", "-"],
            input=(
                "link set lo up\n"
                "link set eth0 up\n"
                f"addr add {ip}/{net.node_subnet.prefixlen} dev eth0\n"
                f"route add default via {net.gateway}\n"
            ),
        )
        # The mount source names the namespace, so sweep(prefix) finds the mount after a crash.
        layers = f"lowerdir={base},upperdir={node.upper},workdir={node_dir / 'work'}"
        run_cmd(["mount", "-t", "overlay", node.netns, "-o", layers, str(node.root)])
        _write_identity(node, authorized_key)
        if prepare is not None:
            prepare(node.root)
        proc = _launch(node)
        node.pid = proc.pid
        _wait_for_ssh(node, proc, timeout)
    except BaseException:
        with contextlib.suppress(Exception):
            stop_node(node)
        raise
    return node


def start_nodes(
    names: LabNames,
    net: LabNetwork,
    specs: Sequence[NodeSpec] | int,
    base: Path,
    state_dir: Path,
    authorized_key: str,
    prepare: Prepare | None = None,
    max_workers: int = 16,
    timeout: float = DEFAULT_START_TIMEOUT,
) -> list[FakeNode]:
    """Start many nodes concurrently; all or nothing (started ones are stopped on any failure)."""
    if isinstance(specs, int):
        specs = default_specs(names, specs)
    if len({s.name for s in specs}) != len(specs) or len({s.index for s in specs}) != len(specs):
        raise ValueError("node names and indexes must be unique")
    if not specs:
        return []
    _ensure_netns_dir(names)

    def one(spec: NodeSpec) -> FakeNode:
        return start_node(
            names,
            net,
            spec.name,
            spec.index,
            base,
            state_dir,
            spec.mac,
            authorized_key,
            spec.prepare or prepare,
            timeout,
        )

    with ThreadPoolExecutor(max_workers=min(max_workers, len(specs)), thread_name_prefix="lab-node") as pool:
        futures = [pool.submit(one, s) for s in specs]
    started, errors = [], []
    for spec, fut in zip(specs, futures, strict=True):
        exc = fut.exception()
        if exc is None:
            started.append(fut.result())
        else:
            errors.append((spec.name, exc))
    if errors:
        stop_nodes(started)
        name, exc = errors[0]
        raise LabError(f"{len(errors)} of {len(specs)} nodes failed to start; first, {name}: {exc}") from exc
    return started


def stop_node(node: FakeNode) -> None:
    """Kill the node's processes, delete its veth, then its namespace, then unmount. Idempotent."""
    with _PROCS_LOCK:
        proc = _PROCS.pop(node.pid, None) if node.pid else None

    def alive() -> list[int]:
        pids = netns_pids([node.netns])[node.netns]
        if proc is not None and proc.poll() is None:
            pids.append(proc.pid)
        return pids

    kill_and_wait(alive(), alive)
    if proc is not None:
        proc.wait()
    # veth first: deleting it is synchronous, while namespace deletion is not and would race
    # a quick restart of the same node.
    delete_link(node.veth_host)
    if (NETNS_DIR / node.netns).exists():
        run_cmd(["ip", "netns", "del", node.netns])
    if os.path.ismount(node.root):
        unmount(str(node.root))
    node.pid = None


def stop_nodes(nodes: Sequence[FakeNode], max_workers: int = 16) -> None:
    """Stop nodes concurrently; raises the first error after trying all of them."""
    if not nodes:
        return
    with ThreadPoolExecutor(max_workers=min(max_workers, len(nodes))) as pool:
        results = [pool.submit(stop_node, n) for n in nodes]
    for fut in results:
        fut.result()
