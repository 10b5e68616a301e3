"""The vendor interface: every place where BMCs differ, with the DMTF-standard behaviour.

A vendor module overrides only what its BMC does differently. Everything here either is
pure (judging JSON) or takes the located BMC (``LocatedBmc``) and does its I/O through its client.
"""

from __future__ import annotations

from typing import Any, Protocol

from bringup.redfish.client import RedfishClient
from bringup.redfish.errors import NotSupported, RedfishError
from bringup.redfish.messages import link
from bringup.redfish.nics import Nic


class LocatedBmc(Protocol):
    """What a vendor may read of a BMC that ``context.locate`` found (a ``BmcContext``).

    A protocol here, not the context itself, because the context holds a ``Vendor``.
    """

    client: RedfishClient
    system_path: str
    system: dict[str, Any]
    manager_path: str | None
    manager: dict[str, Any] | None

    @property
    def url(self) -> str: ...


class Vendor:
    name = "generic"
    # BootSourceOverrideMode in a boot PATCH: "always" (some BMCs reset it to Legacy when it
    # is missing), or "if-differs" (send it only to change it: others start a BIOS job for it).
    send_boot_mode = "if-differs"

    # -- what the BMC is ------------------------------------------------------------------

    def bmc_model(self, manager: dict[str, Any] | None) -> str | None:
        return manager.get("Model") if isinstance(manager, dict) else None

    # -- discovery ------------------------------------------------------------------------

    def network_adapter_collections(self, ctx: LocatedBmc, chassis: dict[str, Any] | None) -> list[str]:
        """NetworkAdapters collections to read (DMTF: under the Chassis)."""
        found = link(chassis, "NetworkAdapters")
        return [found] if found else []

    def event_log_entries(self, ctx: LocatedBmc) -> list[str]:
        """Known paths of the hardware event log's Entries, tried before a generic search."""
        return []

    def keep_firmware(self, entry: dict[str, Any]) -> bool:
        """Whether a FirmwareInventory member is running firmware (not a rollback image)."""
        return True

    def oem_nics(self, ctx: LocatedBmc) -> list[Nic]:
        """NICs from OEM resources, read when no standard source named a port or said where
        one sits (their placement fills the gaps, merged by MAC)."""
        return []

    # -- changes --------------------------------------------------------------------------

    def before_change(self, ctx: LocatedBmc, *, config: bool) -> list[str]:
        """Raise when the BMC is not ready for a change (``config``: a settings change, not
        just an action). Returns why each pre-change check that could not run did not (none
        here: a standard BMC has none)."""
        return []

    def diagnose(self, ctx: LocatedBmc, err: RedfishError) -> RedfishError:
        """A clearer error for a refused change, when the vendor can tell why."""
        return err

    # -- job queues (Dell) ------------------------------------------------------------------

    def jobs(self, ctx: LocatedBmc) -> list[dict[str, Any]]:
        raise NotSupported(
            f"{ctx.client.endpoint.url}: job queues are a Dell iDRAC feature ({self.name} BMC)"
        )

    def clear_jobs(self, ctx: LocatedBmc) -> str:
        raise NotSupported(
            f"{ctx.client.endpoint.url}: job queues are a Dell iDRAC feature ({self.name} BMC)"
        )

    def readiness(self, ctx: LocatedBmc) -> dict[str, Any]:
        raise NotSupported(
            f"{ctx.client.endpoint.url}: a readiness query is a Dell iDRAC feature ({self.name} BMC)"
        )
