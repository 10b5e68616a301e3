"""Talk to a rack's BMCs over Redfish: discover nodes, control power, set one-time boot.

Layers, each small: ``endpoint`` (where and how), ``client`` (HTTP on the DMTF ``redfish``
library: timeouts, retries, error classes), ``context`` (find system, manager, vendor),
``readers``/``nics`` (pure: JSON -> records), ``vendors`` (quirks behind one interface),
``discovery``/``power``/``boot``/``vmedia`` (operations), ``fanout`` (many BMCs at once),
``targets`` (inventory -> endpoints) and ``cli``.
"""

from bringup.redfish.client import RedfishClient
from bringup.redfish.context import BmcContext, locate
from bringup.redfish.discovery import HARDWARE_KEYS, Discovery, discover, discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import RedfishError
from bringup.redfish.fanout import Outcome, Task, fan_out

__all__ = [
    "HARDWARE_KEYS",
    "BmcContext",
    "BmcEndpoint",
    "Discovery",
    "Outcome",
    "RedfishClient",
    "RedfishError",
    "Task",
    "TransportOptions",
    "discover",
    "discover_endpoint",
    "fan_out",
    "locate",
]
