"""The provisioning backend interface: what the orchestrator hands a backend and gets back.

A backend (the built-in PXE server, MAAS) takes nodes that discovery knows to an installed,
reachable OS. The orchestrator owns the lifecycle, batching, refusal and recording; a backend
only does the work for the targets it is given and reports one outcome per target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bringup.redfish.endpoint import BmcEndpoint
    from bringup.ssh.hostkeys import PinnedKeys


@dataclass(frozen=True)
class ProvisionTarget:
    key: str  # the node's fleet-store key (serial once discovered)
    name: str  # inventory name; also the hostname to give the node
    serial: str | None
    macs: tuple[str, ...]  # from discovery (Redfish)
    provisioning_mac: str | None  # hardware["provisioning_nic"]["mac"] if present, else the first MAC
    ip: str | None  # address to reserve (inventory host var `provision_ip`, or ansible_host)
    bmc_address: str
    hostvars: Mapping[
        str, Any
    ]  # the inventory's host vars (bmc_username, password reference, install_disk, ...)
    profile: str
    uuid: str | None = None  # the system UUID discovery read (SMBIOS type 1), when it did
    boot_mode: str = "uefi"  # "uefi" or "legacy": the one-time boot mode to ask the BMC for
    # The BMC with its credentials resolved (None when the reference could not be read);
    # never printed (the password is in it).
    bmc: BmcEndpoint | None = field(default=None, repr=False, compare=False)
    # The SSH host keys the store recorded for the node (None: none), for a backend that logs in.
    pinned: PinnedKeys | None = field(default=None, compare=False)


@dataclass
class ProvisionOutcome:
    key: str
    ok: bool
    reason: str  # "provisioned" or why not, in the operator's words (MAAS's own message for MAAS)
    ip: str | None = None
    hostname: str | None = None
    report: dict[str, Any] = field(default_factory=dict)  # what the node itself reported
    details: dict[str, Any] = field(default_factory=dict)  # backend specifics (lease time, system_id, ...)


Progress = Callable[[str, str], None]  # progress(key, line)


class ProvisionBackend(Protocol):
    name: str

    def preflight(self, targets: Sequence[ProvisionTarget]) -> list[str]:
        """Problems that must stop the run before any power action; empty means go."""
        ...

    def plan(self, targets: Sequence[ProvisionTarget]) -> list[str]:
        """Human lines for --dry-run: what would be done to each target."""
        ...

    def provision(self, batch: Sequence[ProvisionTarget], progress: Progress) -> Iterator[ProvisionOutcome]:
        """Provision one batch; yield one outcome per target as each finishes."""
        ...

    def close(self) -> None: ...
