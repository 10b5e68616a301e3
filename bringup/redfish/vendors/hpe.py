"""HPE iLO 5 and 6.

- Ids are small integers: ``Systems/1``, ``Managers/1``, ``Chassis/1``.
- The hardware event log is the Integrated Management Log: ``Systems/1/LogServices/IML``
  (``Oem.Hpe.Repaired`` marks entries already dealt with). ``Managers/1/LogServices/IEL``
  is iLO's own log and is not read.
- EthernetInterfaces is filled by the Agentless Management Service from a running OS; before
  that the ports are in ``Chassis/1/NetworkAdapters`` and, on Gen10, the OEM
  ``Systems/1/BaseNetworkAdapters`` (``PhysicalPorts[].MacAddress``, ``StructuredName``).
  With the agent, EthernetInterfaces (ids 1..n, names vmnic0..) say nothing of placement:
  BaseNetworkAdapters' ``Location`` ("Embedded LOM", "OCP 3.0 Slot 10") is read to fill it.
"""

from __future__ import annotations

from typing import Any

from bringup.redfish.errors import NotSupported
from bringup.redfish.nics import Nic, normalise_mac, place
from bringup.redfish.vendors.base import LocatedBmc, Vendor


def base_adapter_nics(adapter: dict[str, Any]) -> list[Nic]:
    """NICs of one ``HpeBaseNetworkAdapter`` (pure)."""
    name = adapter.get("StructuredName") or adapter.get("Id") or ""
    loc, slot, _ = place(name, adapter.get("Name"), adapter.get("Location"))
    out = []
    for i, port in enumerate(adapter.get("PhysicalPorts") or [], start=1):
        mac = normalise_mac((port or {}).get("MacAddress"))
        if mac:
            out.append(
                Nic(
                    id=f"{name}.port{i}" if name else mac,
                    mac=mac,
                    source="OEM",
                    permanent=False,
                    name=adapter.get("Name"),
                    adapter=adapter.get("Id"),
                    location=loc,
                    slot=slot,
                    port=i,
                    link_status=(port or {}).get("LinkStatus"),
                )
            )
    return out


class Hpe(Vendor):
    name = "hpe"

    def event_log_entries(self, ctx: LocatedBmc) -> list[str]:
        return [f"{ctx.system_path}/LogServices/IML/Entries"]

    def oem_nics(self, ctx: LocatedBmc) -> list[Nic]:
        try:
            adapters = ctx.client.members(f"{ctx.system_path}/BaseNetworkAdapters")
        except NotSupported:
            return []
        return [nic for adapter in adapters for nic in base_adapter_nics(adapter)]
