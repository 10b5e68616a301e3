"""Vendor quirks behind one interface (``base.Vendor``): Dell iDRAC 9/10, HPE iLO, Supermicro,
and generic DMTF Redfish."""

from __future__ import annotations

from bringup.core.errors import BadInput
from bringup.redfish.vendors.base import Vendor
from bringup.redfish.vendors.dell import Dell
from bringup.redfish.vendors.generic import Generic
from bringup.redfish.vendors.hpe import Hpe
from bringup.redfish.vendors.supermicro import Supermicro

_VENDORS: dict[str, Vendor] = {v.name: v for v in (Dell(), Hpe(), Supermicro(), Generic())}


def vendor_for(name: str) -> Vendor:
    try:
        return _VENDORS[name]
    except KeyError:
        raise BadInput(f"unknown BMC vendor {name!r} (one of {', '.join(_VENDORS)})") from None


__all__ = ["Vendor", "vendor_for"]
