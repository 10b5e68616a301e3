"""Blame on an NVL72 rack as a failure domain. Pure: the stages' findings in, statements out.

A rack's 18 compute trays share 9 NVLink switch trays (docs/platforms.md): a bad switch tray
slows every tray's multi-node NVLink traffic while each tray's own checks pass, and a tray whose
GPUs did not register with the fabric (preflight's gpu_fabric_state: In Progress, or CliqueId 0)
is missing from the domain. So the statement is about the rack when the whole rack is slow
("the NVLink fabric of rack r03 is slow"), about one tray when one did not register ("tray 7 did
not register"), and per tray otherwise, with which pass it was slow in (docs/burnin.md, "nccl
stage on NVL72").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# RackBlame.kind values
KINDS = (
    "rack_unregistered",  # no tray of the rack registered: the rack's switch trays or their manager
    "tray_unregistered",  # one tray's GPUs did not join the rack's NVLink domain
    "nvlink_fabric",  # every tray slow with MNNVL on, fine with it off: the rack's switch trays
    "rack_network",  # every tray slow both ways: the rack's InfiniBand side (its leaf switches)
    "tray_nvlink",  # one tray slow with MNNVL on only: its NVLink links to the switch trays
    "tray",  # one tray slow both ways: the tray itself (GPUs, NICs)
    "tray_network",  # one tray slow with MNNVL off only: its NICs or cables
)


@dataclass(frozen=True)
class RackBlame:
    kind: str  # one of KINDS
    rack: str
    nodes: tuple[str, ...]  # the trays the statement covers (each tray of the rack for a rack-wide one)
    message: str


def _tray(rack: str, trays: Sequence[str], node: str) -> str:
    return f"tray {trays.index(node) + 1} ({node}) of rack {rack}"


def localise_racks(
    racks: Mapping[str, Sequence[str]],
    *,
    unregistered: Iterable[str] = (),
    mnnvl_slow: Iterable[str] = (),
    ib_slow: Iterable[str] = (),
    fabric: Iterable[str] = (),
) -> list[RackBlame]:
    """Statements about each rack (``racks``: rack name -> its trays in slot order, tray 1 first).
    ``unregistered``: trays whose GPUs did not register (burnin.plan.nvlink_groups.registered is
    False); ``mnnvl_slow`` / ``ib_slow``: trays that failed (slow, hung, wrong) with multi-node
    NVLink on / off; ``fabric``: racks the localiser already blamed as a whole
    (burnin.plan.nvlink_groups.RackLocalizer.fabric). A rack with nothing against it says nothing."""
    unregistered, mnnvl, ib, whole = set(unregistered), set(mnnvl_slow), set(ib_slow), set(fabric)
    out: list[RackBlame] = []
    for rack, trays in racks.items():
        trays = list(trays)
        missing = [t for t in trays if t in unregistered]
        if trays and len(missing) == len(trays):
            out.append(
                RackBlame(
                    "rack_unregistered",
                    rack,
                    tuple(trays),
                    f"no tray of rack {rack} registered with its NVLink fabric: the rack's NVLink "
                    "switch trays or the fabric's manager (NMX), not its trays",
                )
            )
            continue
        for t in missing:
            out.append(
                RackBlame(
                    "tray_unregistered",
                    rack,
                    (t,),
                    f"{_tray(rack, trays, t)} did not register with the rack's NVLink fabric (its GPUs' "
                    "fabric state In Progress or no domain, CliqueId 0): reboot it, then its NVLink "
                    "cartridge and cables",
                )
            )
        present = [t for t in trays if t not in unregistered]
        slow_on = [t for t in present if t in mnnvl]
        if rack in whole or (len(present) >= 2 and len(slow_on) == len(present)):
            if present and all(t in ib for t in present):
                out.append(
                    RackBlame(
                        "rack_network",
                        rack,
                        tuple(present),
                        f"every tray of rack {rack} is slow with multi-node NVLink on and off: the "
                        "rack's InfiniBand side (its leaf switches), not its NVLink fabric",
                    )
                )
            else:
                out.append(
                    RackBlame(
                        "nvlink_fabric",
                        rack,
                        tuple(present),
                        f"the NVLink fabric of rack {rack} is slow: every tray is slow with multi-node "
                        "NVLink on and fine over InfiniBand; its NVLink switch trays, not its "
                        f"{len(present)} compute trays",
                    )
                )
            continue
        for t in present:
            on, off = t in mnnvl, t in ib
            if on and off:
                kind, why = "tray", "slow with multi-node NVLink on and off: the tray itself (GPUs, NICs)"
            elif on:
                kind, why = "tray_nvlink", "slow with multi-node NVLink on only: its NVLink links"
            elif off:
                kind, why = "tray_network", "slow over InfiniBand only: its NICs or their cables"
            else:
                continue
            out.append(RackBlame(kind, rack, (t,), f"{_tray(rack, trays, t)} is {why}"))
    return out
