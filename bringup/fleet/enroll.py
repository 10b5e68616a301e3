"""Putting a rack's inventory hosts into the fleet store (``enrolled``), or refreshing them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from bringup.fleet.store import FleetStore, StoreError
from bringup.inventory.rack import InventoryHost


@dataclass
class Enrollment:
    rack: str
    new: list[str] = field(default_factory=list)  # enrolled now
    known: list[str] = field(default_factory=list)  # already in the store: record refreshed
    gone: list[str] = field(default_factory=list)  # in the store for this rack, not in the inventory


def enroll_host(store: FleetStore, rack: str, host: InventoryHost) -> bool:
    """Enroll ``host`` (or refresh its BMC, profile and rack unit); True if it is new."""
    _, created = store.enroll(
        host.name,
        rack,
        host.profile,
        bmc_address=host.bmc_address,
        bmc_vendor=host.bmc_vendor,
        rack_unit=host.rack_unit,
    )
    return created


def enroll_hosts(store: FleetStore, rack: str, hosts: Iterable[InventoryHost]) -> Enrollment:
    """Enroll every host of a rack's inventory; idempotent. Says which store nodes of the rack the
    inventory no longer lists (an operator retires them if they left)."""
    hosts = list(hosts)
    done = Enrollment(rack)
    for host in hosts:
        try:
            created = enroll_host(store, rack, host)
        except StoreError as exc:
            # One transaction per host: those before are committed. Say so, and where it stopped.
            count = len(done.new) + len(done.known)
            raise StoreError(
                f"rack {rack}: {count} of {len(hosts)} node(s) enrolled (committed), from {host.name} "
                f"on not: {exc}; enroll is idempotent, run it again once that is fixed"
            ) from exc
        (done.new if created else done.known).append(host.name)
    listed = {h.name for h in hosts}
    done.gone = [n.name for n in store.list_nodes(rack=rack) if n.name not in listed]
    return done
