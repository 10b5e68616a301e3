"""The services every lab runs (the ``LabService`` hook is in service_hook.py).

Whoever starts a virtual rack hands it these (``VirtualRack(..., services=lab_services())``);
the rack itself knows only the hook, so a lab can also run with fewer or none.
"""

from __future__ import annotations

from bringup.lab.aptrepo import AptRepoService
from bringup.lab.fabric import FabricService
from bringup.lab.netfaults import NetFaultService
from bringup.lab.nvlink_rack import NvlinkRackService
from bringup.lab.service_hook import LabService
from bringup.lab.slurm import SlurmService


def lab_services() -> list[LabService]:
    """The services every lab runs, in start order (stopped in reverse)."""
    return [
        AptRepoService(),  # the stand-in apt repository
        NetFaultService(),  # the `unreachable` fault
        SlurmService(),  # slurmctld/slurmd/munge, mpirun settings
        FabricService(),  # the simulated InfiniBand fabric and its plan
        NvlinkRackService(),  # the NVL72 racks' NVLink fabric faults, on every tray of a rack
    ]
