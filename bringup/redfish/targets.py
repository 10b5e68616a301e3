"""Which BMCs a command works on: rack inventory hosts -> endpoints, rules and boot modes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bringup.credentials import CredentialError, resolve
from bringup.inventory import InventoryHost, Rack, load_rack
from bringup.redfish.endpoint import BmcEndpoint, normalise_url
from bringup.redfish.nics import NicRule, parse_rule

TRUE = (True, "true", "yes", "1", 1)


@dataclass
class Target:
    host: InventoryHost
    endpoint: BmcEndpoint | None
    problem: str | None
    rule: NicRule
    boot_mode: str

    @property
    def name(self) -> str:
        return self.host.name


def split_nodes(values: tuple[str, ...] | list[str] | None) -> list[str]:
    """``--nodes a,b --nodes c`` -> [a, b, c]."""
    out: list[str] = []
    for value in values or ():
        out += [v.strip() for v in value.split(",") if v.strip()]
    return out


def _setting(host: InventoryHost, rack: Rack, host_key: str, profile_key: str, default: Any) -> Any:
    if host.vars.get(host_key) not in (None, ""):
        return host.vars[host_key]
    profile = rack.profiles.get(host.profile)
    value = profile.get(profile_key) if profile else None
    return default if value in (None, "") else value


def load_targets(
    rack_name: str, inventory_dir: Path, nodes: list[str] | None = None
) -> tuple[Rack, list[Target]]:
    """Targets for the rack's hosts (or the named ones). A host whose password cannot be read
    or whose address is malformed gets a ``problem`` and fails alone; a bad inventory fails
    the command."""
    rack, problems = load_rack(rack_name, inventory_dir)
    if rack is None:
        raise ValueError(
            f"rack {rack_name} is not valid:\n" + "\n".join(str(p) for p in problems if not p.warning)
        )
    hosts = rack.hosts
    if nodes:
        known = {h.name for h in hosts}
        unknown = [n for n in nodes if n not in known]
        if unknown:
            raise ValueError(f"rack {rack.name} has no host(s) {', '.join(unknown)}")
        hosts = [h for h in hosts if h.name in set(nodes)]
    targets = []
    for host in hosts:
        rule_text = _setting(host, rack, "provisioning_nic", "provisioning.nic", None)
        try:
            rule = parse_rule(rule_text)
        except ValueError as exc:
            raise ValueError(f"host {host.name}: {exc}") from None
        mode = str(_setting(host, rack, "boot_mode", "boot_mode", "uefi")).lower()
        endpoint, problem = None, None
        try:
            endpoint = BmcEndpoint(
                name=host.name,
                url=normalise_url(host.bmc_address),
                username=host.bmc_username,
                password=resolve(host.bmc_password),
                vendor=host.bmc_vendor,
                vendor_forced=host.vars.get("bmc_vendor_force") in TRUE,
            )
        except (CredentialError, ValueError) as exc:
            problem = str(exc)
        targets.append(Target(host, endpoint, problem, rule, mode))
    return rack, targets
