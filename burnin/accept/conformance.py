"""What arrived against what was ordered, node by node and part by part (pure).

Sources, each as the store holds it:

- the node record: its chassis serial and ``hardware`` from discovery (Redfish): ``gpus``
  (the GPUs the BMC lists, compared as ``gpu (BMC)``), ``inventory``
  (DIMMs, CPUs, drives, PSUs, fans, Bios attributes: bringup/redfish/hardware.py), ``bmc``
  (firmware version), ``system`` (BIOS version), ``memory``/``cpu`` summaries;
- the node's latest check results: ``gpu_versions`` (each GPU's product, serial and VBIOS from
  nvidia-smi -q), ``ib_ports`` (each HCA's type, firmware and node GUID from ibstat),
  ``memory_dimms`` (dmidecode), ``cpu_inventory`` (lscpu), ``nvme_health`` (smartctl).

Each part the order states gives a ``PartRow`` (ordered, found, ok) and each difference a
``Mismatch`` naming the part, its slot and serial, the finding and the action that fixes it
(burnin/result.py). A part nobody reported cannot be compared: its row is ``ok=None`` and its
mismatch has no action. That is not a pass, and it is never taken for zero parts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from bringup.inventory.delivery import Delivery
from burnin.accept import bmc_gpus
from burnin.accept import conformance_parts as parts
from burnin.accept.conformance_model import (
    Collected,
    DeliveryConformance,
    Mismatch,
    NodeConformance,
    NodeRecord,
    PartRow,
    ResultRecord,
)
from burnin.result import Action

__all__ = [
    "DeliveryConformance",
    "Mismatch",
    "NodeConformance",
    "NodeRecord",
    "PartRow",
    "ResultRecord",
    "compare",
    "compare_node",
]


# -- the comparison ------------------------------------------------------------------------------------


def compare_node(
    delivery: Delivery, node: NodeRecord, latest_results: Iterable[ResultRecord]
) -> NodeConformance:
    """One node against the order of its hardware profile, part by part."""
    out = Collected()
    hw = node.hardware or {}
    results = parts.latest(latest_results)
    if node.serial is None:
        out.unknown(
            "chassis",
            "a serial on the packing list" if delivery.nodes.serials else "a chassis serial",
            "not discovered",
        )
    elif delivery.nodes.serials:
        listed = node.serial in delivery.nodes.serials
        out.row("chassis", "on the packing list", node.serial, listed)
        if not listed:
            out.add(
                "chassis",
                f"chassis serial {node.serial} is not on the packing list",
                Action.RMA,
                slot="chassis",
                serial=node.serial,
                ordered="on the packing list",
                found=node.serial,
            )
    order = delivery.profile(node.profile)
    if order is None:
        out.unknown(
            "profile", ", ".join(delivery.profiles), f"the order has no hardware profile {node.profile!r}"
        )
    else:
        parts.cpu(order, hw, results, out)
        parts.memory(order, hw, results, out)
        parts.gpu(order, results, out)
        bmc_gpus.compare(order, hw, results, out)
        parts.nics(order, results, out)
        parts.nvme(order, hw, results, out)
        parts.psu(order, hw, out)
        parts.fans(hw, out)
        parts.firmware(order, hw, out)
        parts.bios_attributes(order, hw, out)
    return NodeConformance(node.name, node.serial, node.profile, tuple(out.rows), tuple(out.mismatches))


def compare(
    delivery: Delivery,
    node_records: Sequence[NodeRecord],
    latest_results: Mapping[str, Iterable[ResultRecord]],
) -> DeliveryConformance:
    """Every node against the order (``latest_results``: node name -> its latest results), and
    the delivery as a whole: how many nodes came, and which packing-list serials did not."""
    nodes = tuple(compare_node(delivery, n, latest_results.get(n.name, ())) for n in node_records)
    whole: list[Mismatch] = []
    if len(node_records) != delivery.nodes.count:
        whole.append(
            Mismatch(
                "delivery",
                f"{len(node_records)} node(s) delivered, the order has {delivery.nodes.count}",
                Action.RMA if len(node_records) > delivery.nodes.count else None,
                ordered=str(delivery.nodes.count),
                found=str(len(node_records)),
            )
        )
    found = {n.serial for n in node_records if n.serial}
    for serial in delivery.nodes.serials:
        if serial not in found:
            whole.append(
                Mismatch(
                    "delivery",
                    f"serial {serial} is on the packing list but no node of the rack has it",
                    None,
                    serial=serial,
                    ordered=serial,
                    found="not delivered",
                )
            )
    return DeliveryConformance(nodes, tuple(whole))
