"""Fake nodes on a real bridge: SSH reachability, prepare hooks, teardown and crash sweep.

Needs root, network namespaces, overlayfs and (once, then cached) debootstrap with access to
the host's Debian mirror. Every test uses its own run id, so xdist workers never collide.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import paramiko
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bringup.lab.base_image import ensure_base_image
from bringup.lab.naming import LabNames, new_run_id
from bringup.lab.network import LabError, LabNetwork, create_network, destroy_network, netns_pids, sweep
from bringup.lab.nodes import FakeNode, NodeSpec, start_node, start_nodes, stop_node
from tests.conftest import unavailable

REPO = Path(__file__).resolve().parents[2]


def _lab_capable() -> bool:
    tools = ("ip", "unshare", "nsenter", "pivot_root", "debootstrap", "mount")
    return os.geteuid() == 0 and all(shutil.which(t) for t in tools)


pytestmark = pytest.mark.lab


@pytest.fixture(autouse=True)
def _needs_lab() -> None:
    if not _lab_capable():
        unavailable("needs root, iproute2, util-linux and debootstrap")


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def base() -> Path:
    return ensure_base_image()


@pytest.fixture(scope="session")
def ssh_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """An ed25519 key pair: (private key file, authorized_keys line)."""
    key = Ed25519PrivateKey.generate()
    path = tmp_path_factory.mktemp("key") / "id_ed25519"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return path, public.decode() + " lab-test"


@pytest.fixture
def lab_net(tmp_path: Path):
    names = LabNames(new_run_id())
    net = create_network(names)
    try:
        yield names, net
    finally:
        sweep(names.prefix, tmp_path)
        destroy_network(names)


# --- helpers ----------------------------------------------------------------------------------


def ssh_run(node: FakeNode | str, key: Path, command: str) -> tuple[int, str, str, paramiko.PKey]:
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    client.connect(
        node.ip if isinstance(node, FakeNode) else node,
        username="root",
        key_filename=str(key),
        look_for_keys=False,
        allow_agent=False,
        timeout=10,
    )
    try:
        host_key = client.get_transport().get_remote_server_key()
        _, stdout, stderr = client.exec_command(command, timeout=20)
        out, err = stdout.read().decode(), stderr.read().decode()
        return stdout.channel.recv_exit_status(), out, err, host_key
    finally:
        client.close()


def _out(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def leftovers(prefix: str, pids: Sequence[int] = ()) -> list[str]:
    """Anything on the host that still carries ``prefix``, plus any of ``pids`` still running."""
    found = [f"netns {n}" for n in _out("ip", "netns", "list").split() if prefix in n]
    found += [f"link {line[:60]}" for line in _out("ip", "-o", "link").splitlines() if prefix in line]
    found += [f"mount {line}" for line in Path("/proc/mounts").read_text().splitlines() if prefix in line]
    me = str(os.getpid())
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or entry.name == me:
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
            state = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z":
            continue
        if prefix.encode() in cmdline or int(entry.name) in pids:
            found.append(f"process {entry.name} {cmdline[:80]!r}")
    return found


def node_pids(nodes: list[FakeNode]) -> list[int]:
    by_ns = netns_pids([n.netns for n in nodes])
    return [p for ps in by_ns.values() for p in ps]


# --- tests ------------------------------------------------------------------------------------


def test_four_nodes_reachable_over_ssh(
    lab_net: tuple[LabNames, LabNetwork], base: Path, tmp_path: Path, ssh_key: tuple[Path, str]
) -> None:
    names, net = lab_net
    key_file, pub = ssh_key

    def prepare(root: Path) -> None:
        tool = root / "usr/local/bin/lab-hello"
        tool.write_text("#!/bin/sh\necho hello from $(hostname)\n")
        tool.chmod(0o755)
        (root / "etc/lab-marker").write_text(f"dropped for {root.parent.name}\n")

    nodes = start_nodes(names, net, 4, base, tmp_path, pub, prepare=prepare)
    assert [n.name for n in nodes] == ["node00", "node01", "node02", "node03"]
    host_keys = set()
    for node in nodes:
        rc, out, err, host_key = ssh_run(node, key_file, "hostname; ip -o addr")
        assert rc == 0, err
        lines = out.splitlines()
        assert lines[0] == node.name
        assert any(" eth0 " in line and f"inet {node.ip}/24" in line for line in lines), out
        host_keys.add((host_key.get_name(), host_key.get_base64()))

        rc, out, err, _ = ssh_run(
            node,
            key_file,
            "cat /etc/lab-marker; lab-hello; echo $PATH; /usr/bin/python3 -c 'print(6*7)'; "
            "cat /sys/class/net/eth0/address; ip route show default; echo pid1=$(cat /proc/1/comm)",
        )
        assert rc == 0, err
        marker, hello, path, answer, mac, route, pid1 = out.splitlines()
        assert marker == f"dropped for {node.name}"
        assert hello == f"hello from {node.name}"
        assert "/usr/local/bin" in path.split(":")
        assert answer == "42"
        assert mac == node.mac
        assert route.startswith(f"default via {net.gateway} dev eth0")
        assert pid1 == "pid1=sshd"
    # Each node has its own ed25519 host key.
    assert len(host_keys) == 4 and {k[0] for k in host_keys} == {"ssh-ed25519"}


def test_stop_leaves_nothing_behind(
    lab_net: tuple[LabNames, LabNetwork], base: Path, tmp_path: Path, ssh_key: tuple[Path, str]
) -> None:
    names, net = lab_net
    nodes = start_nodes(names, net, 3, base, tmp_path, ssh_key[1])
    pids = node_pids(nodes)
    assert len(pids) >= 3
    for node in nodes:
        stop_node(node)
        stop_node(node)  # idempotent
    destroy_network(names)
    destroy_network(names)
    assert leftovers(names.prefix, pids) == []
    assert sweep(names.prefix, tmp_path) == []  # nothing left to sweep


def test_restart_keeps_disk_and_reuses_name(
    lab_net: tuple[LabNames, LabNetwork], base: Path, tmp_path: Path, ssh_key: tuple[Path, str]
) -> None:
    names, net = lab_net
    key_file, pub = ssh_key
    node = start_node(names, net, "rack1-n7", 7, base, tmp_path, names.mac(7), pub)
    rc, _, err, _ = ssh_run(node, key_file, "echo persisted > /root/disk-file")
    assert rc == 0, err
    # Starting it again while it runs is refused, and leaves the running node alone.
    with pytest.raises(LabError, match="already exists"):
        start_node(names, net, "rack1-n7", 7, base, tmp_path, names.mac(7), pub)
    assert ssh_run(node, key_file, "true")[0] == 0
    stop_node(node)
    # Immediate restart under the same names: the veth-first teardown makes this race-free.
    node = start_node(names, net, "rack1-n7", 7, base, tmp_path, names.mac(7), pub)
    rc, out, err, _ = ssh_run(node, key_file, "cat /root/disk-file; hostname")
    assert (rc, out) == (0, "persisted\nrack1-n7\n"), err
    assert (node.upper / "root/disk-file").read_text() == "persisted\n"
    stop_node(node)


def test_failed_start_reports_log_and_cleans_up(
    lab_net: tuple[LabNames, LabNetwork], base: Path, tmp_path: Path, ssh_key: tuple[Path, str]
) -> None:
    names, net = lab_net

    def break_sshd(root: Path) -> None:
        (root / "etc/ssh/sshd_config.d/zz-broken.conf").write_text("NoSuchOption yes\n")

    with pytest.raises(LabError, match="NoSuchOption"):
        start_node(names, net, "broken", 0, base, tmp_path, names.mac(0), ssh_key[1], prepare=break_sshd)

    def explode(root: Path) -> None:
        raise RuntimeError("prepare failed")

    specs = [NodeSpec("good", 1, names.mac(1)), NodeSpec("bad", 2, names.mac(2), prepare=explode)]
    with pytest.raises(LabError, match="prepare failed"):
        start_nodes(names, net, specs, base, tmp_path, ssh_key[1])
    # All or nothing: the good node was stopped too; only the bridge remains.
    assert [x for x in leftovers(names.prefix) if "link" not in x or names.bridge not in x] == []


CRASHING_CLI = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from bringup.lab.naming import LabNames
    from bringup.lab.network import create_network
    from bringup.lab.nodes import start_nodes
    from bringup.lab.base_image import ensure_base_image

    run_id, state, pub = sys.argv[1:4]
    names = LabNames(run_id)
    net = create_network(names)
    nodes = start_nodes(names, net, 3, ensure_base_image(), Path(state), pub)
    print(json.dumps([n.ip for n in nodes]), flush=True)
    os._exit(0)  # no cleanup of any kind: the Python objects are gone
    """
)


def test_sweep_after_crash_by_prefix_only(base: Path, tmp_path: Path, ssh_key: tuple[Path, str]) -> None:
    names = LabNames(new_run_id())
    try:
        out = subprocess.run(
            [sys.executable, "-c", CRASHING_CLI, names.run_id, str(tmp_path / "state"), ssh_key[1]],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert out.returncode == 0, out.stderr
        ips = json.loads(out.stdout)
        # The nodes outlived the process that started them.
        rc, stdout, err, _ = ssh_run(ips[0], ssh_key[0], "hostname")
        assert (rc, stdout) == (0, "node00\n"), err
        namespaces = [names.netns(f"node{i:02d}") for i in range(3)]
        pids = [p for ps in netns_pids(namespaces).values() for p in ps]
        assert len(pids) >= 3
        assert leftovers(names.prefix, pids) != []

        removed = sweep(names.prefix)  # prefix only: no state dir, no objects
        assert any(r.startswith("netns") for r in removed)
        assert any(r.startswith("mount") for r in removed)
        assert any(r.startswith("bridge") for r in removed)
        assert leftovers(names.prefix, pids) == []
        assert sweep(names.prefix) == []
    finally:
        sweep(names.prefix, tmp_path)
