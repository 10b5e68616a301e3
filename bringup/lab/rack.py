"""The virtual rack: fake nodes + one Redfish BMC per node + stand-in tools, as one unit.

A lab is named (default ``lab``); its run id, and so the prefix on every namespace, link and
mount, is derived from the name. That makes ``lab down`` able to find and remove everything a
lab made even when its state file is gone, while two labs with different names (parallel test
workers) never collide. State lives in ``<lab root>/<name>/``: ``lab.json``, the SSH key, the
BMC password file, the nodes' overlay directories and logs.

Host keys are checked in the lab as on a real rack: the lab knows the keys it gave its nodes'
sshd, writes them to ``known_hosts`` (which its inventory names, for Ansible, paramiko and
mpirun alike), and ``record_host_keys`` puts them in a fleet store the way provisioning would.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from bringup.core.credentials import write_secret_file
from bringup.fleet.store import FleetStore
from bringup.lab import network
from bringup.lab.base_image import ensure_base_image
from bringup.lab.bmc import BmcEmulator, BmcSystem, bmc_url
from bringup.lab.faults import FaultSpec, load_fault_spec
from bringup.lab.naming import LabNames
from bringup.lab.network import LabError
from bringup.lab.nodes import FakeNode, NodeSpec, ed25519_keypair, start_nodes, stop_nodes
from bringup.lab.service_hook import LabService
from bringup.lab.standins import PlatformError, catalog, install_standins
from bringup.lab.state import BMC_PORT, LabNode, LabState
from bringup.ssh.hostkey_records import record
from bringup.ssh.hostkeys import known_hosts_text

HOST_KEY = "etc/ssh/ssh_host_ed25519_key.pub"  # in a node's root (nodes.py writes it)
DEFAULT_NAME = "lab"
DEFAULT_PROFILE = "h100-sxm-8x400g"
BMC_USER = "root"


def default_lab_root() -> Path:
    return Path(os.environ.get("BRINGUP_LAB_DIR", ".lab"))


def run_id_for(name: str) -> str:
    """The lab's run id: stable for a name, so a lab can be found and swept without its state."""
    return hashlib.sha256(name.encode()).hexdigest()[:6]


def _make_ssh_key(state_dir: Path) -> tuple[Path, str]:
    """The key pair root logs in with on every node (OpenSSH format: ssh and paramiko read it)."""
    private, public = ed25519_keypair()
    path = state_dir / "id_ed25519"
    write_secret_file(path, private.decode())
    line = f"{public.decode()} bringup-lab"
    (state_dir / "id_ed25519.pub").write_text(line + "\n")
    return path, line


KNOWN_HOSTS = "known_hosts"


def write_known_hosts(state: LabState) -> Path:
    """The nodes' host keys, as ssh reads them: the lab's inventory checks every node against it."""
    path = Path(state.state_dir) / KNOWN_HOSTS
    path.write_text(known_hosts_text([(n.ip, 22, [n.host_key]) for n in state.nodes if n.host_key]))
    return path


def record_host_keys(store: FleetStore, state: LabState, actor: str = "lab") -> None:
    """Record each node's host key in the fleet store, as provisioning records what a node
    reports: burn-in and configure then connect to the lab's nodes pinned, like any other."""
    for n in state.nodes:
        if n.host_key:
            record(
                store, n.name, [n.host_key], "lab up (the key it generated for the node's sshd)", actor=actor
            )


def write_dmi_identity(root: Path, node: LabNode) -> None:
    """The SMBIOS serial and UUID the node's BMC reports, as files the node's init shows in
    /sys/devices/virtual/dmi/id (nodes.NODE_INIT), where an installed OS reads them: the
    preinstalled provisioning backend compares them with discovery."""
    dmi = root / "etc" / "bringup-lab" / "dmi"
    dmi.mkdir(parents=True, exist_ok=True)
    for name, value in (
        ("product_serial", node.serial),
        ("chassis_serial", node.serial),
        ("product_uuid", node.uuid),
    ):
        (dmi / name).write_text(value + "\n")
        (dmi / name).chmod(0o400)  # root-only, as the kernel's


# The platform's `bmc` section keys (standins/catalog_file.py) -> BmcSystem fields they set.
_BMC_FIELDS = {
    "manufacturer": "manufacturer",
    "system_model": "model",
    "cpu_model": "cpu_model",
    "cpu_count": "cpu_count",
}


def platform_bmc_fields(profile: str) -> dict[str, Any]:
    """What a node of this platform's BMC says of the system (maker, model, CPUs), where its
    platform's catalog says it; the rest keeps BmcSystem's defaults (an XE9680's)."""
    bmc = catalog(profile).get("bmc") or {}
    return {field: bmc[key] for key, field in _BMC_FIELDS.items() if key in bmc}


def render_inventory(state: LabState, inventory_path: Path, password_file: Path, profile: str) -> str:
    """The lab's rack inventory: the same shape as a production rack's (no faults in it)."""
    rel = os.path.relpath(password_file, inventory_path.parent.resolve())
    key_rel = os.path.relpath(state.ssh_key, inventory_path.parent.resolve())
    known = Path(state.state_dir) / KNOWN_HOSTS
    known_rel = os.path.relpath(known, inventory_path.parent.resolve())
    hosts = {
        n.name: {"bmc_address": n.bmc_address, "rack_unit": n.index + 1, "ansible_host": n.ip}
        for n in state.nodes
    }
    doc = {
        "all": {
            "vars": {
                "profile": profile,
                # Namespace nodes start with their OS in place (they cannot PXE-boot):
                # `bringup provision` checks each over SSH and records it (docs/lab.md).
                "provisioner": "preinstalled",
                "bmc_vendor": "generic",
                "bmc_allow_http": True,  # sushy-tools serves plain HTTP on the lab's own bridge
                "bmc_username": BMC_USER,
                "bmc_password": f"file:{rel}",
                "ansible_user": "root",
                "ansible_ssh_private_key_file": "{{ inventory_dir }}/" + key_rel,
                # Host keys checked against the ones the lab generated (never trust on first use).
                "ansible_ssh_common_args": "-o UserKnownHostsFile={{ inventory_dir }}/" + known_rel,
                "mpirun_ssh_options": f"-o StrictHostKeyChecking=yes -o UserKnownHostsFile={known} -o LogLevel=ERROR",
                "ansible_python_interpreter": "/usr/bin/python3",
                "ansible_pipelining": True,
                **state.inventory_vars,
            },
            "children": {state.name: {"hosts": hosts}},
        }
    }
    header = (
        f"# The virtual rack {state.name!r}, written by `bringup lab up` (run {state.run_id}); rewritten on\n"
        "# every lab up. Same shape as a production rack: BMC credentials by reference, never in here.\n"
    )
    return header + yaml.safe_dump(doc, sort_keys=False, width=120)


class VirtualRack:
    """One lab: ``up``, ``down`` and ``status``.

    ``services`` makes the lab services, afresh for each ``up`` and ``down`` (they may keep
    state): they are started, in order, once the nodes and BMCs are up, and stopped in reverse
    on ``down``. ``services.lab_services`` for a full lab; none where a test needs only SSH and
    the stand-ins.
    """

    def __init__(
        self,
        name: str = DEFAULT_NAME,
        root: Path | None = None,
        inventory_dir: Path | None = None,
        *,
        services: Callable[[], Sequence[LabService]],
    ):
        self.name = name
        self.services = services
        self.names = LabNames(run_id_for(name))
        self.state_dir = ((root or default_lab_root()) / name).resolve()
        self.inventory_path = (inventory_dir or Path("inventories")) / f"{name}.yml"

    # -- up -------------------------------------------------------------------------------

    def up(self, nodes: int = 4, faults: Path | None = None, profile: str = DEFAULT_PROFILE) -> LabState:
        if nodes < 1:
            raise LabError("a lab needs at least one node")
        current = LabState.load(self.state_dir)
        if current is not None or network.netns_names(self.names.prefix):
            raise LabError(
                f"lab {self.name!r} is already up (prefix {self.names.prefix}); run `bringup lab down` first"
            )
        try:
            catalog(profile)  # a platform the stand-ins have recordings of, before anything starts
        except PlatformError as exc:
            raise LabError(str(exc)) from exc
        spec = load_fault_spec(faults, profile) if faults else FaultSpec({})
        lab_nodes = [f"node{i:02d}" for i in range(1, nodes + 1)]
        unknown = sorted(set(spec.faulty_nodes()) - set(lab_nodes))
        if unknown:
            raise LabError(
                f"fault spec {faults} names node(s) the lab does not have: {', '.join(unknown)} "
                f"(this lab has node01..node{nodes:02d})"
            )
        base = ensure_base_image()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        state = LabState(
            name=self.name,
            run_id=self.names.run_id,
            prefix=self.names.prefix,
            state_dir=str(self.state_dir),
            inventory=str(self.inventory_path.resolve()),
            created_at=datetime.now(timezone.utc).isoformat(),
            fault_spec=str(Path(faults).resolve()) if faults else None,
            profile=profile,
        )
        state.save()  # from here on, `lab down` can clean up whatever happens
        try:
            self._up(state, lab_nodes, spec, base, profile)
        except BaseException:
            self.down()
            raise
        return state

    def _up(self, state: LabState, lab_nodes: list[str], spec: FaultSpec, base: Path, profile: str) -> None:
        net = network.create_network(self.names)
        state.bridge, state.node_subnet, state.bmc_subnet, state.gateway = (
            net.bridge,
            str(net.node_subnet),
            str(net.bmc_subnet),
            str(net.gateway),
        )
        key_path, public_key = _make_ssh_key(self.state_dir)
        state.ssh_key = str(key_path)
        for i, name in enumerate(lab_nodes):
            state.nodes.append(
                LabNode(
                    name=name,
                    index=i,
                    ip=str(net.node_ip(i)),
                    mac=self.names.mac(i),
                    serial=f"LAB{self.names.run_id}{i + 1:03d}".upper(),
                    uuid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"bringup-lab/{self.names.run_id}/{name}")),
                    bmc_address=bmc_url(str(net.bmc_ip(i)), BMC_PORT),
                    faults=list(spec.faults_for(name)),
                )
            )
        state.save()

        services = self.services()

        def node_prepare(node: LabNode):
            def prepare(root: Path) -> None:
                # The identity first: the stand-ins number the node's IB GUIDs by its index.
                ident = dict(
                    name=node.name,
                    index=node.index,
                    serial=node.serial,
                    uuid=node.uuid,
                    mac=node.mac,
                    platform=state.profile,
                )
                (root / "etc" / "bringup-lab").mkdir(parents=True, exist_ok=True)
                (root / "etc" / "bringup-lab" / "identity.json").write_text(json.dumps(ident, indent=2))
                write_dmi_identity(root, node)
                install_standins(root, node.faults, state.profile)
                for service in services:
                    service.prepare_node(state, node, root)

            return prepare

        specs = [NodeSpec(n.name, n.index, n.mac, node_prepare(n)) for n in state.nodes]
        started = start_nodes(self.names, net, specs, base, self.state_dir, public_key)
        for n, fake in zip(state.nodes, started, strict=True):
            n.host_key = " ".join((fake.root / HOST_KEY).read_text().split()[:2])
        write_known_hosts(state)

        password = secrets.token_urlsafe(18)
        password_file = self.state_dir / "bmc-password"
        write_secret_file(password_file, password + "\n")
        for i in range(len(state.nodes)):
            network.add_bmc_address(net, net.bmc_ip(i))
        systems = [
            BmcSystem(
                name=n.name,
                uuid=n.uuid,
                serial=n.serial,
                macs=[n.mac],
                address=str(net.bmc_ip(n.index)),
                faults=list(n.faults),
                platform=state.profile,
                **platform_bmc_fields(state.profile),
            )
            for n in state.nodes
        ]
        BmcEmulator(
            systems, BMC_PORT, self.state_dir / "bmc", BMC_USER, password, lab_state_dir=self.state_dir
        ).start()  # a power cycle reboots the node (reboot.py)
        for service in services:
            state.inventory_vars.update(service.start(state))
            state.save()

        self.inventory_path.parent.mkdir(parents=True, exist_ok=True)
        text = render_inventory(state, self.inventory_path, password_file, profile)
        tmp = self.inventory_path.with_suffix(".yml.tmp")
        tmp.write_text(text)
        tmp.replace(self.inventory_path)
        state.save()

    # -- down -----------------------------------------------------------------------------

    def down(self) -> list[str]:
        """Remove everything the lab made; works without a state file and after a crash."""
        removed: list[str] = []
        state = LabState.load(self.state_dir)
        for service in reversed(self.services()):
            removed += service.stop(self.state_dir)
        if BmcEmulator.stop_from_state(self.state_dir / "bmc"):
            removed.append("bmc emulator")
        if state is not None and state.nodes:
            fake = [
                FakeNode(
                    name=n.name,
                    index=n.index,
                    netns=self.names.netns(n.name),
                    ip=n.ip,
                    mac=n.mac,
                    root=self.state_dir / "nodes" / n.name / "root",
                    upper=self.state_dir / "nodes" / n.name / "upper",
                    pid=None,
                    veth_host=self.names.veth_host(n.index),
                )
                for n in state.nodes
            ]
            stop_nodes(fake)
            removed += [f"node {n.name}" for n in state.nodes]
        removed += network.sweep(self.names.prefix, self.state_dir)
        network.destroy_network(self.names)
        if self.state_dir.exists():
            _remove_state_dir(self.state_dir, self.names.prefix)
            removed.append(str(self.state_dir))
        return removed

    # -- status ---------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        state = LabState.load(self.state_dir)
        namespaces = network.netns_names(self.names.prefix)
        if state is None:
            return {"name": self.name, "up": False, "prefix": self.names.prefix, "leftovers": namespaces}
        bmc_pid = _read_pid(self.state_dir / "bmc" / "bmc.pid")
        nodes = []
        for n in state.nodes:
            nodes.append(
                {
                    **asdict(n),
                    "netns": self.names.netns(n.name) in namespaces,
                    "ssh": _port_open(n.ip, 22),
                    "bmc": _port_open(urlsplit(n.bmc_address).hostname or "", state.bmc_port),
                }
            )
        healthy = all(n["netns"] and n["ssh"] and n["bmc"] for n in nodes) and bmc_pid is not None
        return {
            "name": self.name,
            "up": True,
            "healthy": healthy,
            "prefix": state.prefix,
            "state_dir": state.state_dir,
            "inventory": state.inventory,
            "bridge": state.bridge,
            "node_subnet": state.node_subnet,
            "bmc_subnet": state.bmc_subnet,
            "bmc_pid": bmc_pid,
            "ssh_key": state.ssh_key,
            "fault_spec": state.fault_spec,
            "nodes": nodes,
        }


def _read_pid(path: Path) -> int | None:
    try:
        pid = int(path.read_text().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def _port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _remove_state_dir(path: Path, prefix: str) -> None:
    """Delete the lab's directory, refusing to descend into a mount that is still there."""
    still = network.lab_mounts(prefix, path)
    if still:
        raise LabError(f"not removing {path}: still mounted: {', '.join(still)}")
    shutil.rmtree(path, ignore_errors=False)
