"""Which part the OS lost, from the PCI tree (pure).

When nvidia-smi lists fewer GPUs, or ibstat fewer HCAs, than the order, the count alone does not
tell a technician which card to reseat. The pcie stage reads the PCI tree from sysfs
(burnin/onnode/pcie_collect.py, judged by burnin/checks/pcie.py, which keeps each GPU, NIC and
NVMe link's address and physical slot in its ``links`` metric). A device the PCI tree still
shows but the OS tool does not list is the lost one: its PCI address and slot name it. A card
gone from the bus altogether leaves no trace there, and nothing is named.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# nvidia-smi prints an 8-digit PCI domain (00000000:97:00.0); sysfs and lspci print 4 digits.
_BDF = re.compile(r"^(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$")
_NVME = re.compile(r"^nvme\d+$")


@dataclass(frozen=True)
class PciPart:
    """One GPU, NIC or NVMe function of the PCI tree."""

    address: str  # 0000:97:00.0
    kind: str  # gpu | nic | nvme
    role: str  # 'GPU 4' (PCI order), the HCA's kernel name 'mlx5_4', 'nvme1'
    slot: str = ""  # the physical slot sysfs names, '' when none
    serial: str = ""

    def where(self) -> str:
        """'PCI 0000:97:00.0, slot 5' (what the summary's Slot line and the finding name)."""
        return f"PCI {self.address}" + (f", slot {self.slot}" if self.slot else "")


def canonical_bdf(text: str) -> str:
    """'00000000:97:00.0' or '97:00.0' -> '0000:97:00.0'; anything else as given, lower case."""
    m = _BDF.match(text.strip())
    if not m:
        return text.strip().lower()
    domain = int(m.group(1) or "0", 16)
    return f"{domain:04x}:{m.group(2)}:{m.group(3)}.{m.group(4)}".lower()


def kind_of(role: str) -> str:
    """The pcie_links metric names a GPU 'GPU n', an NVMe drive by its controller 'nvmeN' and a
    NIC by its kernel name (mlx5_4, or its netdev or address)."""
    if role.startswith("GPU "):
        return "gpu"
    return "nvme" if _NVME.match(role) else "nic"


def pci_parts(links: Any) -> list[PciPart]:
    """The pcie_links result's ``links`` metric as parts ([] when it is not a list)."""
    if not isinstance(links, list):
        return []
    out = []
    for link in links:
        if not isinstance(link, Mapping) or not link.get("bdf"):
            continue
        role = str(link.get("role") or "")
        out.append(
            PciPart(
                canonical_bdf(str(link["bdf"])),
                kind_of(role),
                role,
                str(link.get("slot") or ""),
                str(link.get("serial") or ""),
            )
        )
    return out


def missing_gpus(listed_bus_ids: Iterable[str], pci: Sequence[PciPart]) -> list[PciPart]:
    """The GPUs of the PCI tree whose address the OS's list (nvidia-smi's bus ids) lacks."""
    listed = {canonical_bdf(b) for b in listed_bus_ids if b}
    return [p for p in pci if p.kind == "gpu" and p.address not in listed]


def missing_hcas(listed_names: Iterable[str], pci: Sequence[PciPart]) -> list[PciPart]:
    """The NICs of the PCI tree named by an RDMA device name (mlx5_N) that ibstat's list lacks."""
    listed = set(listed_names)
    return [p for p in pci if p.kind == "nic" and p.role.startswith("mlx") and p.role not in listed]


def describe(parts: Sequence[PciPart]) -> str:
    """'GPU 4 at PCI 0000:97:00.0, slot 5; ...'."""
    return "; ".join(f"{p.role} at {p.where()}" + (f", serial {p.serial}" if p.serial else "") for p in parts)
