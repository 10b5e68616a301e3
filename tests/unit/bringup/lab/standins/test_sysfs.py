"""The fake PCI sysfs tree of a lab node, built in a tmp dir and read the way the product's
collector reads /sys: listdir of bus/pci/devices, realpath up the bridge chain, attribute files
in the kernel's formats, kernel-name subdirectories, slots, and the faults' changes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bringup.lab.standins import catalog, dispatch, sysfs

BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
SPEED = re.compile(r"^(2\.5|5\.0|8\.0|16\.0|32\.0|64\.0) GT/s PCIe\n$")
KINDS = {  # (vendor, device, class) -> count in an HGX H100 host
    ("0x10de", "0x2330", "0x030200"): 8,  # H100 SXM
    ("0x15b3", "0x1021", "0x020700"): 8,  # ConnectX-7, InfiniBand
    ("0x144d", "0xa824", "0x010802"): 2,  # NVMe
    ("0x10de", "0x22a3", "0x068000"): 4,  # NVSwitch
}


def read(path: Path) -> str:
    return path.read_text()


class Tree:
    """The built tree seen through /sys/bus/pci/devices, like the collector sees it."""

    def __init__(self, root: Path, faults: tuple[str, ...] = ()):
        self.path = sysfs.build_fake_sysfs(root, faults)
        self.devices = self.path / "bus/pci/devices"

    def bdfs(self) -> list[str]:
        return sorted(os.listdir(self.devices))

    def attr(self, bdf: str, name: str) -> str:
        return read(self.devices / bdf / name)

    def ids(self, bdf: str) -> tuple[str, str, str]:
        return tuple(self.attr(bdf, f).strip() for f in ("vendor", "device", "class"))  # type: ignore[return-value]

    def chain(self, bdf: str) -> list[str]:
        """Upstream bridges, nearest first (parent directory names that are BDFs)."""
        parents = Path(os.path.realpath(self.devices / bdf)).parents
        return [p.name for p in parents if BDF.match(p.name)]

    def of_kind(self, kind: tuple[str, str, str]) -> list[str]:
        return [b for b in self.bdfs() if self.ids(b) == kind]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    """A healthy node's tree, built once: the tests only read it."""
    return Tree(tmp_path_factory.mktemp("sysfs"))


GPU = ("0x10de", "0x2330", "0x030200")
NIC = ("0x15b3", "0x1021", "0x020700")
NVME = ("0x144d", "0xa824", "0x010802")


def test_device_counts_and_ids(tree):
    for kind, count in KINDS.items():
        assert len(tree.of_kind(kind)) == count, kind
    bridges = [b for b in tree.bdfs() if tree.ids(b)[2] == "0x060400"]
    assert {tree.ids(b)[:2] for b in bridges} == {("0x8086", "0x352a"), ("0x1000", "0xc030")}
    assert all(BDF.match(b) for b in tree.bdfs())
    # GPUs at the bus ids of the recorded nvidia-smi -q, in its order
    assert tree.of_kind(GPU) == [f"0000:{b}:00.0" for b in ("53", "64", "75", "86", "97", "a8", "b9", "ca")]


def test_entries_are_relative_links_that_resolve_into_the_bridge_chain(tree):
    for bdf in tree.bdfs():
        link = tree.devices / bdf
        assert link.is_symlink() and os.readlink(link).startswith("../../../devices/pci0000:")
        real = Path(os.path.realpath(link))
        assert real.name == bdf and real.is_relative_to(tree.path / "devices")
        top = real.relative_to(tree.path / "devices").parts[0]
        assert top == f"pci{tree.chain(bdf)[-1][:7] if tree.chain(bdf) else bdf[:7]}"
    for rail, gpu in enumerate(tree.of_kind(GPU)):
        nic = tree.of_kind(NIC)[rail]
        gpu_chain, nic_chain = tree.chain(gpu), tree.chain(nic)
        # GPU and NIC of a rail: own downstream ports of one switch, under one root port
        assert len(gpu_chain) == len(nic_chain) == 3
        assert gpu_chain[0] != nic_chain[0] and gpu_chain[1:] == nic_chain[1:]
        dsp, usp, rp = gpu_chain
        assert tree.ids(dsp)[:2] == tree.ids(usp)[:2] == ("0x1000", "0xc030")
        assert tree.ids(rp)[:2] == ("0x8086", "0x352a")
        assert tree.chain(rp) == []  # the root port sits on its host bridge
        assert int(nic[5:7], 16) == int(gpu[5:7], 16) + 1
    for nvme in tree.of_kind(NVME):
        assert len(tree.chain(nvme)) == 3 and tree.chain(nvme)[1] in {
            tree.chain(g)[1] for g in tree.of_kind(GPU)
        }


def test_link_files_are_in_kernel_format_with_idle_values(tree):
    for bdf in tree.bdfs():
        for name in ("current_link_speed", "max_link_speed"):
            assert SPEED.match(tree.attr(bdf, name)), (bdf, name)
        for name in ("current_link_width", "max_link_width"):
            assert re.fullmatch(r"(1|2|4|8|16)\n", tree.attr(bdf, name)), (bdf, name)

    def link(bdf):
        return tuple(
            tree.attr(bdf, f).strip()
            for f in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
        )

    for gpu in tree.of_kind(GPU):  # idle power saving: slow but full width, and so its port
        assert link(gpu) == link(tree.chain(gpu)[0]) == ("2.5 GT/s PCIe", "16", "32.0 GT/s PCIe", "16")
    for nic in tree.of_kind(NIC):
        assert link(nic) == link(tree.chain(nic)[0]) == ("32.0 GT/s PCIe", "16", "32.0 GT/s PCIe", "16")
    for nvme in tree.of_kind(NVME):
        assert link(nvme) == ("16.0 GT/s PCIe", "4", "16.0 GT/s PCIe", "4")
        assert link(tree.chain(nvme)[0]) == ("16.0 GT/s PCIe", "4", "32.0 GT/s PCIe", "4")  # benign
    assert tree.attr("0000:53:00.0", "numa_node") == "0\n" and tree.attr("0000:ca:00.0", "numa_node") == "1\n"


def test_aer_counters_in_kernel_format_all_zero(tree):
    expected = {
        "aer_dev_correctable": [*sysfs.AER_CORRECTABLE, "TOTAL_ERR_COR"],
        "aer_dev_nonfatal": [*sysfs.AER_UNCORRECTABLE, "TOTAL_ERR_NONFATAL"],
        "aer_dev_fatal": [*sysfs.AER_UNCORRECTABLE, "TOTAL_ERR_FATAL"],
    }
    assert sysfs.AER_CORRECTABLE[:3] == ("RxErr", "BadTLP", "BadDLLP")
    assert sysfs.AER_UNCORRECTABLE[-1] == "PoisonTLPBlocked" and len(sysfs.AER_UNCORRECTABLE) == 18
    for bdf in tree.bdfs():
        for name, keys in expected.items():
            text = tree.attr(bdf, name)
            assert text.endswith("\n")
            pairs = [line.split(" ") for line in text.splitlines()]
            assert [k for k, _ in pairs] == keys
            assert {v for _, v in pairs} == {"0"}
    root_ports = [b for b in tree.bdfs() if tree.ids(b)[:2] == ("0x8086", "0x352a")]
    assert len(root_ports) == 9
    for rp in root_ports:
        assert tree.attr(rp, "aer_rootport_total_err_cor") == "0\n"


def test_aer_text_counts():
    text = sysfs.aer_text(sysfs.AER_CORRECTABLE, "ERR_COR", {"BadTLP": 3, "RxErr": 1})
    assert text.splitlines()[:2] == ["RxErr 1", "BadTLP 3"] and text.endswith("TOTAL_ERR_COR 4\n")


def test_kernel_names_and_infiniband_ports(tree):
    nics = tree.of_kind(NIC)
    assert [os.listdir(tree.devices / n / "infiniband") for n in nics] == [[f"mlx5_{i}"] for i in range(8)]
    assert [os.listdir(tree.devices / n / "net") for n in nics] == [[f"ibp{int(n[5:7], 16)}s0"] for n in nics]
    assert [os.listdir(tree.devices / n / "nvme") for n in tree.of_kind(NVME)] == [["nvme0"], ["nvme1"]]
    for gpu in tree.of_kind(GPU):
        assert not {"infiniband", "net", "nvme"} & set(os.listdir(tree.devices / gpu))
    port = tree.devices / nics[0] / "infiniband/mlx5_0/ports/1"
    assert [read(port / f) for f in ("state", "phys_state", "rate", "link_layer")] == [
        "4: ACTIVE\n",
        "5: LinkUp\n",
        "400 Gb/sec (4X NDR)\n",
        "InfiniBand\n",
    ]
    ib = tree.devices / nics[0] / "infiniband/mlx5_0"
    assert read(ib / "node_guid") == read(ib / "sys_image_guid") == "a088:c203:00e3:142a\n"
    assert read(ib / "ports/1/gids/0") == "fe80:0000:0000:0000:a088:c203:00e3:142a\n"


def test_a_numbered_node_differs_only_in_its_guid_files(tmp_path):
    """tree_entries(node=N) renumbers node_guid, sys_image_guid and GID 0 of each HCA, nothing else;
    build_fake_sysfs takes N from the root's identity file."""
    recorded = {e.path: e.data for e in sysfs.tree_entries(())}
    numbered = {e.path: e.data for e in sysfs.tree_entries((), node=7)}
    assert recorded.keys() == numbered.keys()
    changed = {p: (recorded[p], v) for p, v in numbered.items() if recorded[p] != v}
    assert sorted({p.split("/infiniband/")[1].split("/", 1)[1] for p in changed}) == [
        "node_guid",
        "ports/1/gids/0",
        "sys_image_guid",
    ]
    assert len(changed) == 3 * 8
    for old, new in changed.values():  # bytes 3-4 (03 00 in the recording) now say node 7
        assert "a088:c203:00" in old and new == old.replace("a088:c203:00", "a088:c200:07")
    (tmp_path / "etc/bringup-lab").mkdir(parents=True)
    (tmp_path / "etc/bringup-lab/identity.json").write_text('{"name": "node07", "index": 6}')
    built = sysfs.build_fake_sysfs(tmp_path, ())
    [guid] = built.glob("bus/pci/devices/*/infiniband/mlx5_0/node_guid")
    assert read(guid) == "a088:c200:07e3:142a\n"


def test_slots_address_gpus_and_nics(tree):
    slots = tree.path / "bus/pci/slots"
    addresses = {read(slots / s / "address").strip() for s in os.listdir(slots)}
    endpoints = tree.of_kind(GPU) + tree.of_kind(NIC)
    assert addresses == {b.rsplit(".", 1)[0] for b in endpoints}
    assert len(os.listdir(slots)) == 16


def test_files_are_writable_for_the_stress_stand_in(tree):
    speed = tree.devices / "0000:53:00.0" / "current_link_speed"
    assert os.stat(speed).st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    ("faults", "changed"),
    [
        (
            ("pcie-nic-downtrained",),
            {
                ("0000:98:00.0", "current_link_speed"): "16.0 GT/s PCIe\n",
                ("0000:98:00.0", "current_link_width"): "8\n",
                ("0000:96:01.0", "current_link_speed"): "16.0 GT/s PCIe\n",
                ("0000:96:01.0", "current_link_width"): "8\n",
            },
        ),
        (
            ("pcie-gpu-downtrained",),
            {("0000:64:00.0", "current_link_width"): "8\n", ("0000:63:00.0", "current_link_width"): "8\n"},
        ),
        (
            ("ib-port-down",),
            {
                ("0000:ba:00.0", "infiniband/mlx5_6/ports/1/state"): "1: DOWN\n",
                ("0000:ba:00.0", "infiniband/mlx5_6/ports/1/phys_state"): "2: Polling\n",
                ("0000:ba:00.0", "infiniband/mlx5_6/ports/1/rate"): "40 Gb/sec (4X QDR)\n",
            },
        ),
        (("gpu-hw-slowdown", "nvlink-down"), {}),  # faults of other tools leave the tree healthy
    ],
)
def test_faults_change_exactly_their_files(faults, changed):
    def files(entries: list[sysfs.Entry]) -> dict[tuple[str, str], str]:
        """(BDF, path below the device) -> content, for the files under devices/."""
        out = {}
        for e in entries:
            parts = e.path.split("/")
            if e.type == "file" and parts[0] == "devices":
                i = max(i for i, p in enumerate(parts[:-1]) if BDF.match(p))
                out[(parts[i], "/".join(parts[i + 1 :]))] = e.data
        return out

    healthy = files(sysfs.tree_entries(()))
    faulty = files(sysfs.tree_entries(faults))
    assert healthy.keys() == faulty.keys() and len(healthy) > 700
    assert {k: v for k, v in faulty.items() if healthy[k] != v} == changed
    if "pcie-nic-downtrained" in faults:  # the NIC whose link is slow is mlx5_4 and keeps its max
        assert faulty[("0000:98:00.0", "max_link_width")] == "16\n"
        assert faulty[("0000:98:00.0", "infiniband/mlx5_4/ports/1/state")] == "4: ACTIVE\n"


def test_catalog_sysfs_faults_are_known_faults():
    assert set(catalog()["sysfs"]) <= set(catalog()["faults"])


def test_rebuild_replaces_the_tree_and_bad_overrides_are_refused(tmp_path):
    first = sysfs.build_fake_sysfs(tmp_path, ("pcie-nic-downtrained",))
    (first / "leftover").write_text("x")
    again = sysfs.build_fake_sysfs(tmp_path, ())
    assert again == first and not (again / "leftover").exists()
    assert read(again / dispatch.sysfs_attr_path("0000:98:00.0", "current_link_width")) == "16\n"
    with pytest.raises(ValueError, match="no device 0000:01:00.0"):
        sysfs.build_fake_sysfs(tmp_path, ("x",), {"x": {"0000:01:00.0": {"current_link_width": "8"}}})
    with pytest.raises(ValueError, match="no file"):
        sysfs.build_fake_sysfs(tmp_path, ("x",), {"x": {"0000:53:00.0": {"curent_link_width": "8"}}})


def test_a_platforms_pci_section_shapes_the_tree():
    """A platform's `pci` (standins/catalog_file.py): its GPU buses, ids, and no NVSwitch board."""
    pci = {"gpu_buses": ["0x0c", "0x22"], "gpu_id": ["0x1002", "0x74a1", "0x038000"], "nvswitches": 0}
    devices = sysfs.hgx_h100_devices(pci)
    gpus = [d for d in devices if d.kind == "gpu"]
    assert [d.bdf for d in gpus] == ["0000:0c:00.0", "0000:22:00.0"]
    assert (
        sysfs.device_files(gpus[0])["vendor"] == "0x1002"
        and sysfs.device_files(gpus[1])["device"] == "0x74a1"
    )
    assert [d.kind for d in devices].count("nic") == 2 and "nvswitch" not in {d.kind for d in devices}
    assert [d.numa_node for d in gpus] == [0, 1]
    with pytest.raises(ValueError, match="pci.gpu_buses"):
        sysfs.hgx_h100_devices({"gpu_buses": ["0x01"]})  # no room for its root port and switch
