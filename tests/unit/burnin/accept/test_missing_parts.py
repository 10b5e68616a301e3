"""The parts the OS lost, from the two lists: what the OS tool lists and what the PCI tree shows."""

from __future__ import annotations

from burnin.accept.missing_parts import (
    PciPart,
    canonical_bdf,
    describe,
    missing_gpus,
    missing_hcas,
    pci_parts,
)

LINKS = [
    {"role": "GPU 0", "bdf": "0000:53:00.0", "slot": "1"},
    {"role": "GPU 1", "bdf": "0000:97:00.0", "slot": "5"},
    {"role": "mlx5_0", "bdf": "0000:54:00.0", "slot": "11"},
    {"role": "nvme0", "bdf": "0000:55:00.0", "slot": None},
    {"role": "GPU 2"},  # no address: not a part that can be named
]


def test_the_pcie_links_record_reads_as_parts_of_each_kind():
    assert pci_parts(LINKS) == [
        PciPart("0000:53:00.0", "gpu", "GPU 0", "1"),
        PciPart("0000:97:00.0", "gpu", "GPU 1", "5"),
        PciPart("0000:54:00.0", "nic", "mlx5_0", "11"),
        PciPart("0000:55:00.0", "nvme", "nvme0", ""),
    ]
    assert pci_parts(None) == [] and pci_parts("x") == []


def test_nvidia_smi_bus_ids_compare_with_sysfs_addresses():
    assert canonical_bdf("00000000:97:00.0") == "0000:97:00.0"
    assert canonical_bdf("97:00.0") == "0000:97:00.0"
    assert canonical_bdf("00000001:CA:00.0") == "0001:ca:00.0"
    pci = pci_parts(LINKS)
    (lost,) = missing_gpus(["00000000:53:00.0"], pci)
    assert lost.where() == "PCI 0000:97:00.0, slot 5"
    assert missing_gpus(["00000000:53:00.0", "00000000:97:00.0"], pci) == []
    assert describe([lost]) == "GPU 1 at PCI 0000:97:00.0, slot 5"


def test_an_hca_is_compared_by_its_rdma_name():
    pci = pci_parts(LINKS)
    assert [p.address for p in missing_hcas([], pci)] == ["0000:54:00.0"]
    assert missing_hcas(["mlx5_0"], pci) == []
    assert missing_gpus([], []) == []  # no PCI tree: nothing named
