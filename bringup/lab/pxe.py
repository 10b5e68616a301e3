"""The lab's PXE: a provisioning server namespace, QEMU VMs that really PXE-boot, their BMCs.

    host namespace                     <prefix>-pxesrv                <prefix>-pxecli
    BMC emulator (sushy)  --mgmt--     mgmt0  (BMC network)
    VM notifier           <prefix>m    pxe0   (provisioning net) --- uplink -- br0 -- tap0 (vm01)
                                       `bringup provision` runs                  \\- tap1 (vm02)
                                       here: dnsmasq + boot server

The server namespace plays the provisioning server: one NIC on the BMC network (the host,
where the Redfish emulator serves every VM's BMC) and one on the provisioning network (the
client namespace's bridge, one tap per VM). ``bringup`` commands run in it through
``ip netns exec`` (``PxeLab.bringup()``), so the product code sees a real interface and knows
nothing about namespaces. The emulator's external notifier (``bringup.lab.vms``) starts a VM
when its system is powered on with PXE boot set, and stops it on power off.

PxeLab is its own object, not a part of every VirtualRack: only the tests that PXE-boot pay
for it. Everything carries the run prefix and ``down()`` removes it all, also after a crash.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

import bringup
from bringup.core.credentials import write_secret_file
from bringup.lab import network
from bringup.lab.bmc import BmcEmulator, BmcSystem, bmc_url
from bringup.lab.naming import LabNames
from bringup.lab.network import LabError, run_cmd
from bringup.lab.rack import (
    BMC_PORT,
    BMC_USER,
    DEFAULT_PROFILE,
    default_lab_root,
    platform_bmc_fields,
    run_id_for,
)
from bringup.lab.vms import VmSpec, write_config
from bringup.local.files import atomic_write
from bringup.local.procs import cmdline_has, read_pid, stop_pid

STATE_FILE = "pxe-lab.json"
HTTP_PORT = 8080  # inside the server namespace: no other run can hold it
NOTIFIER_MODULE = "bringup.lab.vms"


def server_dir(prefix: str) -> Path:
    return network.RUN_DIR / f"{prefix}-pxe-server"


def default_cache_dir() -> Path:
    return Path(os.environ.get("BRINGUP_LAB_CACHE", "/var/cache/bringup-lab"))


@dataclass(frozen=True)
class PxeVmSpec:
    """A VM to create: firmware ``bios`` or ``uefi``; ``fault`` ``hang`` or ``unplugged``."""

    name: str
    firmware: str = "bios"
    fault: str | None = None
    dhcp_timeout: float | None = None  # a per-host pxe_dhcp_timeout in the inventory


@dataclass
class PxeVm:
    name: str
    index: int
    firmware: str
    fault: str | None
    mac: str
    serial: str
    uuid: str
    bmc_address: str
    provision_ip: str
    tap: str
    dhcp_timeout: float | None = None


@dataclass
class PxeLabState:
    name: str
    run_id: str
    prefix: str
    state_dir: str
    inventory: str
    server_netns: str
    client_netns: str
    mgmt_link: str
    mgmt_subnet: str
    pxe_subnet: str
    server_ip: str
    notifier_url: str
    ramdisk_dir: str
    vms: list[PxeVm] = field(default_factory=list)
    ssh_key: str = ""  # root's login key when the VMs' ramdisk runs an SSH server (pxe_ssh.py)

    def save(self) -> None:
        atomic_write(Path(self.state_dir) / STATE_FILE, json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, state_dir: Path) -> PxeLabState | None:
        path = Path(state_dir) / STATE_FILE
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        data["vms"] = [PxeVm(**v) for v in data.get("vms", [])]
        return cls(**data)


def render_inventory(state: PxeLabState, inventory: Path, password_file: Path, profile: str) -> str:
    """The PXE lab's rack inventory: a production rack's shape, with the pxe backend's settings."""
    rel = os.path.relpath(password_file, inventory.parent.resolve())
    pxe_net = ipaddress.IPv4Network(state.pxe_subnet)
    hosts: dict[str, dict[str, Any]] = {}
    for vm in state.vms:
        host: dict[str, Any] = {
            "bmc_address": vm.bmc_address,
            "rack_unit": vm.index + 1,
            "provision_ip": vm.provision_ip,
            "ansible_host": vm.provision_ip,
            "boot_mode": "uefi" if vm.firmware == "uefi" else "legacy",
        }
        if vm.dhcp_timeout is not None:
            host["pxe_dhcp_timeout"] = vm.dhcp_timeout
        hosts[vm.name] = host
    doc = {
        "all": {
            "vars": {
                "profile": profile,
                "bmc_vendor": "generic",
                "bmc_allow_http": True,  # sushy-tools serves plain HTTP on the lab's own bridge
                "bmc_username": BMC_USER,
                "bmc_password": f"file:{rel}",
                "provisioner": "pxe",
                "pxe_mode": "agent",
                "pxe_interface": "pxe0",
                "pxe_server_ip": state.server_ip,
                "pxe_subnet": str(pxe_net),
                "pxe_http_port": HTTP_PORT,
                "pxe_enable_ra": True,
                "pxe_agent_dir": state.ramdisk_dir,
                # dnsmasq runs as nobody: its directory must be reachable by others.
                "pxe_state_dir": str(server_dir(state.prefix)),
                # The lab's reference clock is the host's own (served by the VM notifier): the
                # check runs for real, but cannot fail here.
                "pxe_clock_reference": state.notifier_url,
                "pxe_dhcp_timeout": 120,
                "pxe_dhcp_retries": 2,
            },
            "children": {state.name: {"hosts": hosts}},
        }
    }
    if state.ssh_key:  # the VMs answer SSH: burn-in logs in as root, pinned to the reported keys
        doc["all"]["vars"].update(ansible_user="root", ansible_ssh_private_key_file=state.ssh_key)
    header = f"# The PXE lab {state.name!r} (run {state.run_id}), written by bringup.lab.pxe; removed by its down().\n"
    return header + yaml.safe_dump(doc, sort_keys=False, width=120)


class PxeLab:
    def __init__(self, name: str, root: Path | None = None, inventory_dir: Path | None = None):
        self.name = name
        self.names = LabNames(run_id_for(name))
        self.state_dir = ((root or default_lab_root()) / name).resolve()
        self.inventory_path = ((inventory_dir or Path("inventories")) / f"{name}.yml").resolve()
        self.state: PxeLabState | None = None

    @property
    def server_netns(self) -> str:
        return self.names.netns("pxesrv")

    @property
    def client_netns(self) -> str:
        return self.names.netns("pxecli")

    # -- up ---------------------------------------------------------------------------------

    def up(self, vms: Sequence[PxeVmSpec], profile: str = DEFAULT_PROFILE, ssh: bool = False) -> PxeLabState:
        """Bring the lab up; with ``ssh`` the VMs boot the agent ramdisk with an SSH server
        (``pxe_ssh``), so their phone-home reports a host key and they can be burned in."""
        if not vms:
            raise LabError("a PXE lab needs at least one VM")
        for tool in ("qemu-system-x86_64", "dnsmasq"):
            if shutil.which(tool) is None:
                raise LabError(f"{tool} is not installed (scripts/install-system-deps.sh installs it)")
        if PxeLabState.load(self.state_dir) is not None or network.netns_names(self.names.prefix):
            raise LabError(
                f"PXE lab {self.name!r} is already up (prefix {self.names.prefix}); down() it first"
            )
        from bringup.provision.pxe.ramdisk import build_ramdisk

        ssh_key = ""
        if ssh:
            from bringup.lab.pxe_ssh import build_ssh_ramdisk, login_key

            key_file, public = login_key(default_cache_dir())
            ramdisk, ssh_key = build_ssh_ramdisk(default_cache_dir(), public), str(key_file)
        else:
            ramdisk = build_ramdisk(default_cache_dir())
        self.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.state = self._up(list(vms), ramdisk.directory, profile, ssh_key)
        except BaseException:
            self.down()
            raise
        return self.state

    def _up(self, specs: list[PxeVmSpec], ramdisk_dir: Path, profile: str, ssh_key: str) -> PxeLabState:
        p = self.names.prefix
        mgmt_link = f"{p}m"
        srv, cli = self.server_netns, self.client_netns
        with network.flocked(network.RUN_DIR / "net.lock"):
            mgmt, pxe = network._pick_free_subnets(2, self.names.run_id + "-pxe")
            run_cmd(["ip", "netns", "add", srv])
            run_cmd(["ip", "netns", "add", cli])
            # The claim on the management subnet is its address on the host (see create_network).
            run_cmd(["ip", "link", "add", mgmt_link, "type", "veth", "peer", "name", "mgmt0", "netns", srv])
            run_cmd(["ip", "addr", "add", f"{mgmt.network_address + 1}/24", "dev", mgmt_link])
            run_cmd(["ip", "link", "set", mgmt_link, "up"])
        server_ip = str(pxe.network_address + 1)
        state = PxeLabState(
            name=self.name,
            run_id=self.names.run_id,
            prefix=p,
            state_dir=str(self.state_dir),
            inventory=str(self.inventory_path),
            server_netns=srv,
            client_netns=cli,
            mgmt_link=mgmt_link,
            mgmt_subnet=str(mgmt),
            pxe_subnet=str(pxe),
            server_ip=server_ip,
            notifier_url="",
            ramdisk_dir=str(ramdisk_dir),
            ssh_key=ssh_key,
        )
        state.save()

        def ns(name: str, *args: str) -> None:
            run_cmd(["ip", "netns", "exec", name, *args])

        ns(srv, "ip", "link", "set", "lo", "up")
        ns(srv, "ip", "addr", "add", f"{mgmt.network_address + 2}/24", "dev", "mgmt0")
        ns(srv, "ip", "link", "set", "mgmt0", "up")
        run_cmd(
            [
                "ip",
                "link",
                "add",
                "pxe0",
                "netns",
                srv,
                "type",
                "veth",
                "peer",
                "name",
                "uplink",
                "netns",
                cli,
            ]
        )
        ns(srv, "ip", "addr", "add", f"{server_ip}/24", "dev", "pxe0")
        # An IPv6 prefix for dnsmasq's router advertisements (iPXE then stops waiting for IPv6).
        ula = f"fd{self.names.run_id[:2]}:{self.names.run_id[2:6]}::1/64"
        ns(srv, "ip", "-6", "addr", "add", ula, "dev", "pxe0", "nodad")
        ns(srv, "ip", "link", "set", "pxe0", "up")
        ns(cli, "ip", "link", "set", "lo", "up")
        ns(cli, "ip", "link", "add", "br0", "type", "bridge", "forward_delay", "0")
        ns(cli, "ip", "link", "set", "br0", "up")
        ns(cli, "ip", "link", "set", "uplink", "master", "br0")
        ns(cli, "ip", "link", "set", "uplink", "up")

        for i, spec in enumerate(specs):
            bmc_ip = mgmt.network_address + network.FIRST_HOST + i
            run_cmd(["ip", "addr", "add", f"{bmc_ip}/24", "dev", mgmt_link])
            state.vms.append(
                PxeVm(
                    name=spec.name,
                    index=i,
                    firmware=spec.firmware,
                    fault=spec.fault,
                    mac=self.names.mac(0x100 + i),
                    serial=f"PXE{self.names.run_id}{i + 1:03d}".upper(),
                    uuid=str(
                        uuid.uuid5(uuid.NAMESPACE_URL, f"bringup-pxe-lab/{self.names.run_id}/{spec.name}")
                    ),
                    bmc_address=bmc_url(str(bmc_ip), BMC_PORT),
                    provision_ip=str(pxe.network_address + network.FIRST_HOST + i),
                    tap=f"tap{i}",
                    dhcp_timeout=spec.dhcp_timeout,
                )
            )
        state.save()

        notifier_ip = str(mgmt.network_address + 1)
        port = _free_port(notifier_ip)
        state.notifier_url = f"http://{notifier_ip}:{port}/"
        self._start_notifier(state, notifier_ip, port)
        state.save()

        password = secrets.token_urlsafe(18)
        password_file = self.state_dir / "bmc-password"
        write_secret_file(password_file, password + "\n")
        systems = [
            BmcSystem(
                name=vm.name,
                uuid=vm.uuid,
                serial=vm.serial,
                macs=[vm.mac],
                address=str(mgmt.network_address + network.FIRST_HOST + vm.index),
                platform=profile,
                **platform_bmc_fields(profile),
            )
            for vm in state.vms
        ]
        BmcEmulator(
            systems,
            BMC_PORT,
            self.state_dir / "bmc",
            BMC_USER,
            password,
            external_notification_url=state.notifier_url,
        ).start()

        self.inventory_path.parent.mkdir(parents=True, exist_ok=True)
        self.inventory_path.write_text(render_inventory(state, self.inventory_path, password_file, profile))
        return state

    def _start_notifier(self, state: PxeLabState, address: str, port: int) -> None:
        config = self.state_dir / "vms.json"
        ready = self.state_dir / "vms.ready"
        ready.unlink(missing_ok=True)
        specs = [VmSpec(v.name, v.uuid, v.serial, v.mac, v.firmware, v.tap, v.fault) for v in state.vms]
        write_config(
            config,
            address=address,
            port=port,
            vm_dir=self.state_dir / "vms",
            netns=state.client_netns,
            bridge="br0",
            vms=specs,
            ready_file=ready,
        )
        env = dict(os.environ)
        project_root = str(Path(bringup.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [project_root, env.get("PYTHONPATH")]))
        with (self.state_dir / "vms.log").open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", NOTIFIER_MODULE, "--config", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        (self.state_dir / "vms.pid").write_text(f"{proc.pid}\n")
        deadline = time.monotonic() + 15
        while not (ready.exists() and ready.read_text().strip() == str(proc.pid)):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (self.state_dir / "vms.log").read_text(errors="replace")[-1500:]
                raise LabError(f"the VM notifier did not start:\n{tail}")
            time.sleep(0.05)

    # -- using it -----------------------------------------------------------------------------

    def bringup(self, *args: str, db: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """Run ``bringup ARGS`` on the provisioning server (in the server namespace)."""
        return self._cli(["-m", "bringup"], args, db, timeout)

    def burnin(self, *args: str, db: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """Run ``burnin ARGS`` on the provisioning server (the VMs are reached from there)."""
        return self._cli(["-c", "from burnin.cli import main; main(prog_name='burnin')"], args, db, timeout)

    def _cli(
        self, program: list[str], args: Sequence[str], db: Path, timeout: float
    ) -> subprocess.CompletedProcess[str]:
        state = self.state or PxeLabState.load(self.state_dir)
        if state is None:
            raise LabError(f"PXE lab {self.name!r} is not up")
        options = ["--db", str(db), "--inventory-dir", str(Path(state.inventory).parent)]
        return self.in_server([sys.executable, *program, *options, *args], timeout)

    def in_server(self, cmd: Sequence[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """Run ``cmd`` in the server namespace with this project importable (its output captured)."""
        state = self.state or PxeLabState.load(self.state_dir)
        if state is None:
            raise LabError(f"PXE lab {self.name!r} is not up")
        argv = ["ip", "netns", "exec", state.server_netns, *cmd]
        env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
        project_root = str(Path(bringup.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [project_root, env.get("PYTHONPATH")]))
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, check=False)

    def vm_log(self, name: str) -> str:
        path = self.state_dir / "vms" / name / "serial.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # -- down -----------------------------------------------------------------------------------

    def down(self) -> list[str]:
        removed: list[str] = []
        if _stop_pidfile(self.state_dir / "vms.pid", NOTIFIER_MODULE):
            removed.append("vm notifier")
        if BmcEmulator.stop_from_state(self.state_dir / "bmc"):
            removed.append("bmc emulator")
        removed += network.sweep(self.names.prefix, self.state_dir)
        if server_dir(self.names.prefix).exists():
            shutil.rmtree(server_dir(self.names.prefix), ignore_errors=True)
            removed.append(str(server_dir(self.names.prefix)))
        if self.inventory_path.exists() and PxeLabState.load(self.state_dir) is not None:
            self.inventory_path.unlink()
        if self.state_dir.exists():
            shutil.rmtree(self.state_dir, ignore_errors=True)
            removed.append(str(self.state_dir))
        self.state = None
        return removed

    def __enter__(self) -> PxeLab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def _stop_pidfile(pid_file: Path, module: str) -> bool:
    """Stop the daemon in ``pid_file`` if it is still ``module``'s; the pid file goes either way."""
    pid = read_pid(pid_file)
    if pid is None:
        return False
    ours = cmdline_has(pid, module)
    if ours:
        stop_pid(pid, grace_s=15)  # it stops its VMs first
    pid_file.unlink(missing_ok=True)
    return ours
