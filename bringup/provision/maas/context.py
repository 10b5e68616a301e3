"""What one node's run (node.py) needs from the backend that starts it (backend.py).

A protocol of its own so that the two do not import each other: ``MaasBackend`` satisfies it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from bringup.provision.backend import ProvisionTarget
from bringup.provision.maas.client import MaasClient
from bringup.provision.maas.redact import Redactor
from bringup.provision.maas.settings import MaasSettings


class RunContext(Protocol):
    inventory_dir: Path  # where the user-data template and key files are taken from
    redact: Redactor  # every message a run produces passes through it
    clock: Callable[[], float]  # monotonic seconds, for the phase deadlines

    def valid_settings(self) -> MaasSettings:
        """The rack's MAAS settings; raises ValueError when they are invalid."""
        ...

    def client(self) -> MaasClient: ...

    def username(self) -> str | None:
        """The MAAS user the API key belongs to."""
        ...

    def node_vars(self, target: ProvisionTarget) -> dict[str, Any]: ...

    def power_form(self, target: ProvisionTarget) -> list[tuple[str, str]]:
        """MAAS's Redfish power parameters for the target (resolves its BMC password)."""
        ...
