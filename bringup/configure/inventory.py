"""The inventory a configure run hands to Ansible (pure).

Hosts are the rack's nodes that may be configured, addressed where provisioning recorded them
(the fleet store's ``ip``, else the rack inventory's ``ansible_host``). Each host keeps its rack
inventory variables (SSH user and key, site repositories, lab switches) minus what Ansible must
never see (BMC endpoints and credentials, anything secret-named), and gains its hardware
profile's pins as the roles' variables: the profile is the source of truth for versions, so its
values win over an inventory's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bringup.core.credentials import SECRET_KEY
from bringup.inventory.rack import Rack
from bringup.profiles.load import Profile

# Rack inventory variables that are bringup's own business, not Ansible's.
BRINGUP_ONLY = frozenset({"profile", "rack_unit", "provisioning_nic"})
_INVENTORY_DIR = re.compile(r"\{\{\s*inventory_dir\s*\}\}")

# Profile pin -> the burnin_tools role variable it sets.
BURNIN_TOOL_PINS = {
    "nccl": "burnin_tools_nccl_version",
    "nccl_tests": "burnin_tools_nccl_tests_version",
    "perftest": "burnin_tools_perftest_version",
    "infiniband_diags": "burnin_tools_infiniband_diags_version",
    "pciutils": "burnin_tools_pciutils_version",
    "stress_ng": "burnin_tools_stress_ng_version",
    "fio": "burnin_tools_fio_version",
    "sysbench": "burnin_tools_sysbench_version",
}


def profile_vars(profile: Profile) -> dict[str, Any]:
    """The role variables a hardware profile sets (see each role's defaults/main.yml)."""

    def pin(key: str) -> str | None:
        return getattr(profile.pins, key) or None  # an empty pin is no pin

    driver = pin("driver")
    mnnvl = bool(profile.gpu.multi_node_nvlink)
    out: dict[str, Any] = {
        "bringup_profile": profile.name,
        # Whose driver and tools the roles install (playbooks/site.yml): the pin is NVIDIA's
        # driver or AMD's GPU driver release, by the profile's gpu.vendor.
        "gpu_vendor": profile.gpu.vendor,
        "nvidia_driver_version": (driver or "") if profile.gpu.vendor == "nvidia" else "",
        "amdgpu_driver_version": (driver or "") if profile.gpu.vendor == "amd" else "",
        # A multi-node NVLink tray (GB200/GB300 NVL72) leaves the fabric to the switch trays and
        # runs the IMEX daemon at the driver's version instead (role nvidia_imex).
        "fabric_manager_enabled": profile.gpu.nvswitch and not mnnvl,
        "fabric_manager_version": pin("fabric_manager") or driver or "",
        "nvidia_imex_enabled": mnnvl,
        "nvidia_imex_version": driver or "",
        "doca_ofed_enabled": pin("doca_ofed") is not None,
        "storage_enabled": profile.host.zfs,
    }
    optional = {
        "doca_ofed": "doca_ofed_version",
        "dcgm": "dcgm_version",
        "dcgm_exporter": "dcgm_exporter_version",
        "container_toolkit": "container_toolkit_version",
        **BURNIN_TOOL_PINS,
    }
    for key, var in optional.items():
        value = pin(key)
        if value is not None:
            out[var] = value
    # Only a figure the profile states; otherwise the base role's own default (the same 2 s).
    if "max_clock_offset_s" in profile.host.model_fields_set:
        out["base_max_clock_offset_s"] = profile.host.max_clock_offset_s
    return out


def address(name: str, inventory_vars: dict[str, Any], ip: str | None) -> str:
    """Where a host is reached: the fleet store's ``ip``, else the inventory's, else its name."""
    return ip or str(inventory_vars.get("ansible_host") or name)


def imex_domain(rack: Rack, ips: dict[str, str | None]) -> list[str]:
    """The addresses of the rack's multi-node NVLink trays, in name order: the IMEX node list
    (role nvidia_imex). One rack inventory is one NVLink domain (docs/configure.md); every tray
    of it is listed, also those a run does not configure, so a partial run keeps the domain."""
    return [
        address(h.name, h.vars, ips.get(h.name))
        for h in sorted(rack.hosts, key=lambda h: h.name)
        if rack.profiles[h.profile].gpu.multi_node_nvlink
    ]


def _ansible_safe(name: str, value: Any) -> bool:
    """False for variables Ansible must not receive: BMC access and secrets."""
    return not (name.startswith("bmc_") or name in BRINGUP_ONLY or SECRET_KEY.search(name))


def _with_inventory_dir(value: Any, inventory_dir: str) -> Any:
    """``{{ inventory_dir }}`` means the rack inventory's directory, not the generated one's."""
    if isinstance(value, str):
        return _INVENTORY_DIR.sub(inventory_dir.replace("\\", "\\\\"), value)
    if isinstance(value, list):
        return [_with_inventory_dir(v, inventory_dir) for v in value]
    if isinstance(value, dict):
        return {k: _with_inventory_dir(v, inventory_dir) for k, v in value.items()}
    return value


def _plain(value: Any) -> bool:
    """Only JSON-able values go into the generated inventory (an !vault value cannot)."""
    if isinstance(value, str | int | float | bool) or value is None:
        return True
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def host_vars(
    name: str, inventory_vars: dict[str, Any], inventory_dir: Path, profile: Profile, ip: str | None
) -> dict[str, Any]:
    """One host's variables: rack inventory (filtered), its address, then the profile's pins."""
    base = str(inventory_dir.resolve())
    out = {
        k: _with_inventory_dir(v, base)
        for k, v in inventory_vars.items()
        if _ansible_safe(k, v) and _plain(v)
    }
    out["ansible_host"] = address(name, inventory_vars, ip)
    out.update(profile_vars(profile))
    return out


def group_name(rack: str) -> str:
    """An Ansible group name for a rack (letters, digits and underscores)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", rack)
    return name if name and not name[0].isdigit() else f"rack_{name}"


def build_inventory(rack: str, hosts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """An Ansible YAML/JSON inventory: the rack as one group holding every host."""
    return {"all": {"children": {group_name(rack): {"hosts": dict(sorted(hosts.items()))}}}}
