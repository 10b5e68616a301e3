"""Which BMCs a command works on: rack inventory hosts -> endpoints, rules and boot modes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bringup.core.credentials import CredentialError, resolve
from bringup.core.errors import BadInput
from bringup.fleet.select import load_valid_rack, pick_hosts
from bringup.inventory.rack import InventoryHost, Rack
from bringup.redfish.endpoint import BmcEndpoint, normalise_url, plain_http_problem
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


def _setting(host: InventoryHost, host_key: str, from_profile: Any, default: Any) -> Any:
    """A host (or group) variable wins over the profile's value, which wins over the default."""
    if host.vars.get(host_key) not in (None, ""):
        return host.vars[host_key]
    return default if from_profile in (None, "") else from_profile


def load_targets(
    rack_name: str, inventory_dir: Path, nodes: list[str] | None = None, *, allow_http: bool = False
) -> tuple[Rack, list[Target]]:
    """Targets for the rack's hosts (or the named ones). A host whose password cannot be read
    or whose address is malformed gets a ``problem`` and fails alone; a bad inventory fails
    the command."""
    rack, _ = load_valid_rack(rack_name, inventory_dir)
    return rack, targets_for(rack, pick_hosts(rack, nodes), allow_http=allow_http)


def targets_for(rack: Rack, hosts: list[InventoryHost], *, allow_http: bool = False) -> list[Target]:
    """A target per host: a host whose password cannot be read, whose address is malformed, or
    whose address is plain HTTP without ``bmc_allow_http`` (or ``allow_http``: --allow-http)
    gets a ``problem`` (it fails alone); a malformed NIC rule is a ``BadInput``."""
    targets = []
    for host in hosts:
        profile = rack.profiles.get(host.profile)
        rule_text = _setting(host, "provisioning_nic", profile.provisioning.nic if profile else None, None)
        try:
            rule = parse_rule(rule_text)
        except ValueError as exc:
            raise BadInput(f"host {host.name}: {exc}") from None
        mode = str(_setting(host, "boot_mode", profile.boot_mode if profile else None, "uefi")).lower()
        endpoint, problem = None, None
        try:
            endpoint = BmcEndpoint(
                name=host.name,
                url=normalise_url(host.bmc_address),
                username=host.bmc_username,
                password=resolve(host.bmc_password),
                vendor=host.bmc_vendor,
                vendor_forced=host.vars.get("bmc_vendor_force") in TRUE,
                require_prechecks=host.bmc_require_prechecks,
                system=host.bmc_system,
            )
        except (CredentialError, ValueError) as exc:
            problem = str(exc)
        if endpoint is not None and endpoint.plain_http and not (allow_http or host.bmc_allow_http):
            endpoint, problem = None, plain_http_problem(host.name, endpoint.url)
        targets.append(Target(host, endpoint, problem, rule, mode))
    return targets


def plain_http_warnings(targets: list[Target]) -> list[str]:
    """The warning every run over plain-HTTP BMCs prints (those were allowed, else refused)."""
    plain = [t.name for t in targets if t.endpoint is not None and t.endpoint.plain_http]
    if not plain:
        return []
    return [
        f"plain HTTP (no TLS) to the BMC of {', '.join(plain)}: the BMC password crosses the network in "
        "cleartext (allowed by bmc_allow_http or --allow-http)"
    ]
