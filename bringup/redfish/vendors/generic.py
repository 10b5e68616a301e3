"""Any DMTF-conformant Redfish service: the base behaviour, nothing overridden."""

from __future__ import annotations

from bringup.redfish.vendors.base import Vendor


class Generic(Vendor):
    name = "generic"
