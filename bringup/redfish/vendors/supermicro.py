"""Supermicro (X12/X13/H13 BMCs).

- A boot override PATCH must carry ``BootSourceOverrideMode``: left out, the BMC falls back
  to Legacy on some firmware, so it is always sent.
- The system event log is ``Systems/1/LogServices/Log1`` (the Manager's ``Log1`` on some
  firmware); chassis serials are often the placeholder ``0123456789``, so the system serial
  is used then (``readers.node_serial``).
"""

from __future__ import annotations

from bringup.redfish.vendors.base import LocatedBmc, Vendor


class Supermicro(Vendor):
    name = "supermicro"
    send_boot_mode = "always"

    def event_log_entries(self, ctx: LocatedBmc) -> list[str]:
        paths = [f"{ctx.system_path}/LogServices/Log1/Entries"]
        if ctx.manager_path:
            paths.append(f"{ctx.manager_path}/LogServices/Log1/Entries")
        return paths
