"""The vendor interface: every place where BMCs differ, with the DMTF-standard behaviour.

A vendor module overrides only what its BMC does differently. Everything here either is
pure (judging JSON) or takes the ``BmcContext`` and does its I/O through its client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bringup.redfish.errors import NotSupported, RedfishError
from bringup.redfish.messages import link

if TYPE_CHECKING:
    from bringup.redfish.context import BmcContext
    from bringup.redfish.nics import Nic


class Vendor:
    name = "generic"
    # BootSourceOverrideMode in a boot PATCH: "always" (some BMCs reset it to Legacy when it
    # is missing), or "if-differs" (send it only to change it: others start a BIOS job for it).
    send_boot_mode = "if-differs"

    # -- what the BMC is ------------------------------------------------------------------

    def bmc_model(self, manager: dict[str, Any] | None) -> str | None:
        return manager.get("Model") if isinstance(manager, dict) else None

    # -- discovery ------------------------------------------------------------------------

    def network_adapter_collections(self, ctx: BmcContext, chassis: dict[str, Any] | None) -> list[str]:
        """NetworkAdapters collections to read (DMTF: under the Chassis)."""
        found = link(chassis, "NetworkAdapters")
        return [found] if found else []

    def event_log_entries(self, ctx: BmcContext) -> list[str]:
        """Known paths of the hardware event log's Entries, tried before a generic search."""
        return []

    def keep_firmware(self, entry: dict[str, Any]) -> bool:
        """Whether a FirmwareInventory member is running firmware (not a rollback image)."""
        return True

    def oem_nics(self, ctx: BmcContext) -> list[Nic]:
        """NICs from OEM resources, read only when no standard source named any."""
        return []

    # -- changes --------------------------------------------------------------------------

    def before_change(self, ctx: BmcContext, *, config: bool) -> None:
        """Raise when the BMC is not ready for a change (``config``: a settings change, not
        just an action)."""

    def diagnose(self, ctx: BmcContext, err: RedfishError) -> RedfishError:
        """A clearer error for a refused change, when the vendor can tell why."""
        return err

    # -- job queues (Dell) ------------------------------------------------------------------

    def jobs(self, ctx: BmcContext) -> list[dict[str, Any]]:
        raise NotSupported(
            f"{ctx.client.endpoint.url}: job queues are a Dell iDRAC feature ({self.name} BMC)"
        )

    def clear_jobs(self, ctx: BmcContext) -> str:
        raise NotSupported(
            f"{ctx.client.endpoint.url}: job queues are a Dell iDRAC feature ({self.name} BMC)"
        )

    def readiness(self, ctx: BmcContext) -> dict[str, Any]:
        raise NotSupported(
            f"{ctx.client.endpoint.url}: a readiness query is a Dell iDRAC feature ({self.name} BMC)"
        )
