"""What the boot server says to a node (pure): iPXE scripts per state, and the installer's
per-node configuration (Ubuntu autoinstall, cloud-init).

States a node can be in, as the boot server sees it:

    agent    boot the agent ramdisk, which phones home the node's own inventory
    install  boot the Ubuntu installer with this node's autoinstall configuration
    local    boot from the local disk (installed, or nothing to do)

The install disk is chosen by serial, model or size (``install_disk``), never by a
``/dev/sdX`` name: drives enumerate in a different order from boot to boot.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from bringup.core.errors import BadInput

MODES = ("agent", "install", "local")

# iPXE expands these on the node: firmware-level inventory before any OS runs.
IPXE_REPORT = (
    "mac=${netX/mac}&uuid=${uuid}&serial=${serial:uristring}&manufacturer=${manufacturer:uristring}"
    "&product=${product:uristring}&platform=${platform}&buildarch=${buildarch}"
)


def chain_script(base_url: str) -> str:
    """The one script every node gets first (the DHCP boot file): chain to its own."""
    return (
        "#!ipxe\n"
        "echo bringup: ${netX/mac} (${platform}) asks the boot server\n"
        f"chain --autofree {base_url}/node.ipxe?{IPXE_REPORT} || goto failed\n"
        ":failed\n"
        "echo bringup: the boot server did not answer; booting from local disk in 10 s\n"
        "sleep 10\n"
        "exit\n"
    )


def local_script() -> str:
    """Boot from the local disk: EFI returns to the firmware's next boot option."""
    return (
        "#!ipxe\n"
        "echo bringup: booting from local disk\n"
        "iseq ${platform} efi && exit ||\n"
        "sanboot --no-describe --drive 0x80 || exit\n"
    )


def unknown_script(mac: str) -> str:
    return f"#!ipxe\necho bringup: {mac} is not being provisioned; booting from local disk\nexit\n"


def kernel_script(kernel_url: str, initrd_url: str, cmdline: str, what: str) -> str:
    """Kernel + initrd over HTTP. ``initrd=initrd.gz`` on the kernel line: old iPXE on UEFI
    hands the initrd to the kernel only under that name."""
    return (
        "#!ipxe\n"
        f"echo bringup: {what}\n"
        f"kernel {kernel_url} initrd=initrd.gz {cmdline}\n"
        f"initrd --name initrd.gz {initrd_url}\n"
        "boot\n"
    )


def agent_script(
    base_url: str, mac: str, token: str, console: str = "console=tty0 console=ttyS0,115200"
) -> str:
    """The agent ramdisk; ``token`` (this attempt's) goes on its kernel command line."""
    cmdline = f"{console} quiet panic=30 bringup.url={base_url} bringup.mac={mac} bringup.token={token}"
    return kernel_script(f"{base_url}/files/vmlinuz", f"{base_url}/files/initrd.gz", cmdline, "agent ramdisk")


def install_script(
    base_url: str, mac: str, token: str, kernel_url: str, initrd_url: str, iso_url: str
) -> str:
    """The Ubuntu installer; its NoCloud seed URL carries this attempt's ``token``."""
    seed = f"{base_url}/cloud-init/{mac}/{token}/"
    cmdline = f"ip=dhcp url={iso_url} autoinstall ds=nocloud-net;s={seed} cloud-config-url=/dev/null"
    return kernel_script(kernel_url, initrd_url, cmdline, "Ubuntu installer (autoinstall)")


# -- the install disk ---------------------------------------------------------------------------

DISK_KEYS = ("serial", "model", "size")


def parse_disk_rule(value: Any) -> dict[str, str]:
    """``install_disk`` -> a curtin/subiquity ``match`` mapping (pure).

    Accepted: a mapping with ``serial``, ``model`` (globs allowed) and/or ``size``
    (``largest`` or ``smallest``); or a string ``serial:X``, ``model:X``, ``largest``,
    ``smallest``. ``None`` means ``smallest`` (on GPU servers the boot drive is the small one;
    the large NVMe drives hold data). A device path is refused.
    """
    if value is None or value == "":
        return {"size": "smallest"}
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("/dev/") or text.startswith("path:"):
            raise BadInput(
                f"install_disk {value!r} names a device path: drives enumerate in a different order on "
                "every boot; choose the disk by serial:, model: or size (largest/smallest)"
            )
        if text in ("largest", "smallest"):
            return {"size": text}
        key, sep, rest = text.partition(":")
        if sep and key.strip() in ("serial", "model", "size"):
            return parse_disk_rule({key.strip(): rest.strip()})
        raise BadInput(f"install_disk {value!r}: expected serial:X, model:X, largest or smallest")
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(DISK_KEYS))
        if "path" in unknown:
            raise BadInput("install_disk must not use path: choose the disk by serial, model or size")
        if unknown:
            raise BadInput(f"install_disk has unknown key(s) {', '.join(unknown)} (use serial, model, size)")
        if not value:
            raise BadInput("install_disk is empty (use serial, model or size)")
        rule = {k: str(v).strip() for k, v in value.items()}
        if "size" in rule and rule["size"] not in ("largest", "smallest"):
            raise BadInput(f"install_disk size must be largest or smallest, got {rule['size']!r}")
        if any(v == "" for v in rule.values()):
            raise BadInput("install_disk has an empty value")
        return rule
    raise BadInput(f"install_disk must be a mapping or a string, got {type(value).__name__}")


def pick_disk(rule: Mapping[str, str], disks: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The disk a ``match`` rule selects from a node's reported disks, as curtin would (pure)."""
    found = [
        d
        for d in disks
        if ("serial" not in rule or fnmatch.fnmatchcase(str(d.get("serial") or ""), rule["serial"]))
        and ("model" not in rule or fnmatch.fnmatchcase(str(d.get("model") or ""), rule["model"]))
        and int(d.get("size_bytes") or 0) > 0
    ]
    if not found:
        return None
    if rule.get("size") == "largest":
        return max(found, key=lambda d: int(d.get("size_bytes") or 0))
    if rule.get("size") == "smallest":
        return min(found, key=lambda d: int(d.get("size_bytes") or 0))
    return found[0]


# -- autoinstall / cloud-init ---------------------------------------------------------------------


@dataclass(frozen=True)
class InstallSpec:
    hostname: str
    mac: str
    base_url: str  # the boot server, for phone-home and progress
    disk_rule: Mapping[str, str]
    ssh_keys: Sequence[str]
    ntp_servers: Sequence[str] = ()
    admin_user: str = "root"
    agent_script: str = ""  # agent.sh, run at first boot to phone home
    extra_packages: Sequence[str] = field(default_factory=tuple)
    timezone: str = "Etc/UTC"
    token: str = field(default="", repr=False)  # this attempt's boot token (see tokens)


def user_data(spec: InstallSpec) -> str:
    """Ubuntu autoinstall user-data for one node (pure). The installed system's own cloud-init
    config sits under ``autoinstall.user-data``; it runs the agent at first boot."""
    mac = spec.mac
    auth = f"?token={spec.token}"  # the installer's webhook cannot send a header: the URL carries it
    installed = f"curl -fsS -m 20 -X POST {spec.base_url}/installed/{mac}{auth} || true"
    first_boot: dict[str, Any] = {
        "hostname": spec.hostname,
        "preserve_hostname": False,
        "timezone": spec.timezone,
        "disable_root": spec.admin_user != "root",
        "ssh_pwauth": False,
        "write_files": [
            {"path": "/usr/local/sbin/bringup-agent", "permissions": "0755", "content": spec.agent_script}
        ],
        "runcmd": [
            [
                "sh",
                "-c",
                f"BRINGUP_URL={spec.base_url} BRINGUP_MAC={mac} BRINGUP_TOKEN={spec.token} "
                "/usr/local/sbin/bringup-agent",
            ]
        ],
    }
    if spec.admin_user == "root":
        first_boot["ssh_authorized_keys"] = list(spec.ssh_keys)
    else:
        first_boot["users"] = [
            {
                "name": spec.admin_user,
                "sudo": "ALL=(ALL) NOPASSWD:ALL",
                "shell": "/bin/bash",
                "lock_passwd": True,
                "ssh_authorized_keys": list(spec.ssh_keys),
            }
        ]
    if spec.ntp_servers:
        first_boot["ntp"] = {"enabled": True, "servers": list(spec.ntp_servers)}
    doc = {
        "autoinstall": {
            "version": 1,
            "locale": "en_US.UTF-8",
            "keyboard": {"layout": "us"},
            "ssh": {"install-server": True, "allow-pw": False, "authorized-keys": list(spec.ssh_keys)},
            "storage": {"layout": {"name": "direct", "match": dict(spec.disk_rule)}},
            "packages": list(spec.extra_packages),
            "reporting": {
                "bringup": {"type": "webhook", "endpoint": f"{spec.base_url}/progress/{mac}{auth}"}
            },
            "late-commands": [installed],
            "user-data": first_boot,
            "shutdown": "reboot",
        }
    }
    return "#cloud-config\n" + yaml.safe_dump(doc, sort_keys=False, width=200)


def meta_data(hostname: str, instance_id: str) -> str:
    return json.dumps({"instance-id": instance_id, "local-hostname": hostname}, indent=2) + "\n"


def safe_mac(mac: str) -> str | None:
    """A MAC from a URL, normalised; None when it is not one."""
    digits = re.sub(r"[^0-9a-fA-F]", "", mac or "").lower()
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2)) if len(digits) == 12 else None
