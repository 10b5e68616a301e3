"""A fake PCI sysfs tree of an HGX H100 node, for lab nodes that have no GPU, NIC or PCIe switch.

install_standins writes it into the node root as a tar; the node's init unpacks it into a tmpfs
and mounts that over /sys/devices and /sys/bus/pci (nodes.NODE_INIT), so plain reads see an
8-GPU host: ``os.listdir('/sys/bus/pci/devices')``, ``os.path.realpath`` of an entry
to walk up the bridge chain, the kernel's attribute files and the ``infiniband/``, ``net/`` and
``nvme/`` subdirectories that name a device's kernel objects, and ``/sys/bus/pci/slots/*/address``.

Topology (one PCIe switch per rail, as on HGX H100 boards): root port -> Broadcom PEX890xx
switch (upstream port, internal bus) -> downstream ports to the GPU and its ConnectX-7; rails 0
and 4 also hold an NVMe drive; the four NVSwitches sit behind a switch of their own. GPU BDFs and
order are those of the recorded ``nvidia-smi -q`` (samples/nvidia_smi_q_8xh100_535_183.txt), NICs
sit on the next bus (mlx5_0..7 in rail order), and the InfiniBand values match the derived ibstat
sample, GUIDs renumbered for the node as the stand-in tools do (dispatch.rewrite_guids). Idle
state: GPU links at 2.5 GT/s (power saving; the stress stand-in raises them), NICs 32 GT/s x16,
NVMe 16 GT/s x4 behind benignly slower switch ports, every AER counter 0.

Faults change files through the catalog's ``sysfs`` section ({fault: {BDF: {file: value}}}), so
this module knows no fault by name. File formats are the kernel's (drivers/pci/pci-sysfs.c,
drivers/pci/pcie/aer.c, drivers/infiniband/core/sysfs.c).
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from bringup.lab.standins.catalog_file import catalog
from bringup.lab.standins.dispatch import SYSFS_SUBPATH, node_number, rewrite_guids, sysfs_attr_path

SYSFS_TAR_SUBPATH = SYSFS_SUBPATH + ".tar"  # what install writes; the node unpacks it at SYSFS_SUBPATH

GEN5, GEN4, GEN1 = "32.0 GT/s PCIe", "16.0 GT/s PCIe", "2.5 GT/s PCIe"

# drivers/pci/pcie/aer.c: the named counters, in the kernel's order, then a TOTAL_ line.
AER_CORRECTABLE = (
    "RxErr",
    "BadTLP",
    "BadDLLP",
    "Rollover",
    "Timeout",
    "NonFatalErr",
    "CorrIntErr",
    "HeaderOF",
)
AER_UNCORRECTABLE = (
    "Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP",
    "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr",
    "PoisonTLPBlocked",
)  # fmt: skip

# GPU buses of the recorded nvidia-smi -q, in nvidia-smi index order.
GPU_BUSES = (0x53, 0x64, 0x75, 0x86, 0x97, 0xA8, 0xB9, 0xCA)
NVME_RAILS = (0, 4)  # rails whose switch also holds an NVMe drive (nvme0, nvme1)
NVSWITCH_ROOT_BUS = 0xE0
# ConnectX-7 Node GUIDs of the derived ibstat sample, mlx5_0..7.
IB_NODE_GUIDS = (
    "a088c20300e3142a", "a088c20300e312f2", "a088c20300e31372", "a088c20300e04776",
    "a088c20300e0476e", "a088c20300e313f2", "a088c20300e313fa", "a088c20300e0478e",
)  # fmt: skip
IB_FIRMWARE = "28.39.1002"

# vendor, device, class of each kind (pci.ids; NVSwitch ids from the recorded dmesg probe line;
# the root port id is an Intel Sapphire Rapids one, illustrative).
IDS = {
    "root-port": ("0x8086", "0x352a", "0x060400"),
    "switch-upstream": ("0x1000", "0xc030", "0x060400"),
    "switch-downstream": ("0x1000", "0xc030", "0x060400"),
    "gpu": ("0x10de", "0x2330", "0x030200"),
    "nic": ("0x15b3", "0x1021", "0x020700"),
    "nvme": ("0x144d", "0xa824", "0x010802"),
    "nvswitch": ("0x10de", "0x22a3", "0x068000"),
}


@dataclass(frozen=True)
class Link:
    speed: str
    width: int
    max_speed: str
    max_width: int


@dataclass(frozen=True)
class PciDevice:
    bdf: str  # 0000:53:00.0
    parent: str | None  # upstream bridge's BDF; None = a root port on its host bridge
    kind: str  # a key of IDS
    link: Link
    numa_node: int
    rail: int | None = None
    slot: str | None = None  # name under /sys/bus/pci/slots
    # Relative path -> content of extra files and directories (content None = an empty dir):
    # infiniband/mlx5_0/..., net/ibp84s0, nvme/nvme0.
    extra: Mapping[str, str | None] = field(default_factory=dict)
    ids: tuple[str, str, str] | None = None  # (vendor, device, class) other than IDS[kind]


def _bdf(bus: int, dev: int = 0, fn: int = 0) -> str:
    return f"0000:{bus:02x}:{dev:02x}.{fn}"


def _ib_files(name: str, guid: str) -> dict[str, str | None]:
    # drivers/infiniband/core/sysfs.c: GUIDs as four groups of 4 hex digits; GID 0 of a port is the
    # link-local subnet prefix + the port GUID (on a ConnectX, port 1's GUID is the node GUID).
    node_guid = ":".join(guid[i : i + 4] for i in range(0, 16, 4))
    port = f"infiniband/{name}/ports/1"
    return {
        f"infiniband/{name}/fw_ver": IB_FIRMWARE,
        f"infiniband/{name}/hca_type": "MT4129",
        f"infiniband/{name}/node_guid": node_guid,
        f"infiniband/{name}/sys_image_guid": node_guid,
        f"{port}/gids/0": "fe80:0000:0000:0000:" + node_guid,
        f"{port}/state": "4: ACTIVE",
        f"{port}/phys_state": "5: LinkUp",
        f"{port}/rate": "400 Gb/sec (4X NDR)",
        f"{port}/link_layer": "InfiniBand",
    }


def hgx_h100_devices(pci: Mapping[str, Any] | None = None) -> list[PciDevice]:
    """Every PCI function of the fake node, parents before children.

    ``pci`` is a platform's ``pci`` section (catalog_file.py): ``gpu_buses`` (hex, in the GPU
    index order of its recordings), ``gpu_id`` (vendor, device, class), ``nvswitches`` (how many
    NVSwitches sit behind their own switch: 4 on HGX H100, 0 where the GPUs have none on the
    board). The rails keep the HGX shape: a switch per GPU with its NIC. None: HGX H100.
    """
    pci = pci or {}
    gpu_buses = tuple(int(b, 16) for b in pci["gpu_buses"]) if "gpu_buses" in pci else GPU_BUSES
    if any(not 3 <= b <= 0xFD for b in gpu_buses) or len(gpu_buses) > len(IB_NODE_GUIDS):
        raise ValueError(
            f"pci.gpu_buses: 1 to {len(IB_NODE_GUIDS)} buses in 0x03..0xfd, got {pci['gpu_buses']}"
        )
    gpu_ids = tuple(pci["gpu_id"]) if "gpu_id" in pci else None
    x16 = Link(GEN5, 16, GEN5, 16)
    devices: list[PciDevice] = []
    for rail, gpu_bus in enumerate(gpu_buses):
        root = gpu_bus - 3  # host bridge bus; root port 01.0 -> switch upstream -> internal bus
        numa = 0 if rail < len(gpu_buses) // 2 else 1
        rp, usp = _bdf(root, 1), _bdf(root + 1)
        dsp_gpu, dsp_nic = _bdf(root + 2, 0), _bdf(root + 2, 1)
        nic_bus = gpu_bus + 1
        idle_gpu = Link(GEN1, 16, GEN5, 16)  # both ends of the link read the same status
        devices += [
            PciDevice(rp, None, "root-port", x16, numa, rail),
            PciDevice(usp, rp, "switch-upstream", x16, numa, rail),
            PciDevice(dsp_gpu, usp, "switch-downstream", idle_gpu, numa, rail),
            PciDevice(_bdf(gpu_bus), dsp_gpu, "gpu", idle_gpu, numa, rail, slot=str(rail + 1), ids=gpu_ids),
            PciDevice(dsp_nic, usp, "switch-downstream", x16, numa, rail),
            PciDevice(
                _bdf(nic_bus),
                dsp_nic,
                "nic",
                x16,
                numa,
                rail,
                slot=str(rail + 11),
                extra={**_ib_files(f"mlx5_{rail}", IB_NODE_GUIDS[rail]), f"net/ibp{nic_bus}s0": None},
            ),
        ]
        if rail in NVME_RAILS:
            dsp_nvme = _bdf(root + 2, 2)
            devices += [
                PciDevice(dsp_nvme, usp, "switch-downstream", Link(GEN4, 4, GEN5, 4), numa, rail),
                PciDevice(
                    _bdf(gpu_bus + 2),
                    dsp_nvme,
                    "nvme",
                    Link(GEN4, 4, GEN4, 4),
                    numa,
                    rail,
                    extra={f"nvme/nvme{NVME_RAILS.index(rail)}": None},
                ),
            ]
    nvswitches = int(pci.get("nvswitches", 4))
    if not nvswitches:
        return devices
    rp, usp = _bdf(NVSWITCH_ROOT_BUS, 1), _bdf(NVSWITCH_ROOT_BUS + 1)
    devices += [PciDevice(rp, None, "root-port", x16, 0), PciDevice(usp, rp, "switch-upstream", x16, 0)]
    for i in range(nvswitches):  # link figures of the NVSwitch management port are illustrative
        dsp = _bdf(NVSWITCH_ROOT_BUS + 2, i)
        devices += [
            PciDevice(dsp, usp, "switch-downstream", Link(GEN4, 4, GEN5, 4), 0),
            PciDevice(_bdf(NVSWITCH_ROOT_BUS + 3 + i), dsp, "nvswitch", Link(GEN4, 4, GEN4, 4), 0),
        ]
    return devices


def device_dir(devices: Mapping[str, PciDevice], bdf: str) -> str:
    """The device's path under the tree: devices/pci0000:50/0000:50:01.0/.../<bdf>."""
    chain = []
    dev: PciDevice | None = devices[bdf]
    while dev is not None:
        chain.append(dev.bdf)
        dev = devices[dev.parent] if dev.parent else None
    root_bus = chain[-1][:7]  # "0000:50" of the root port's BDF
    return "/".join(["devices", f"pci{root_bus}", *reversed(chain)])


def aer_text(names: Sequence[str], total: str, counts: Mapping[str, int] | None = None) -> str:
    counts = counts or {}
    lines = [f"{name} {counts.get(name, 0)}" for name in names]
    lines.append(f"TOTAL_{total} {sum(counts.values())}")
    return "\n".join(lines) + "\n"


def device_files(dev: PciDevice) -> dict[str, str | None]:
    """Relative path -> content of a device's attribute files (None = directory)."""
    vendor, device, pci_class = dev.ids or IDS[dev.kind]
    files: dict[str, str | None] = {
        "vendor": vendor,
        "device": device,
        "class": pci_class,
        "numa_node": str(dev.numa_node),
        "current_link_speed": dev.link.speed,
        "current_link_width": str(dev.link.width),
        "max_link_speed": dev.link.max_speed,
        "max_link_width": str(dev.link.max_width),
        "aer_dev_correctable": aer_text(AER_CORRECTABLE, "ERR_COR"),
        "aer_dev_nonfatal": aer_text(AER_UNCORRECTABLE, "ERR_NONFATAL"),
        "aer_dev_fatal": aer_text(AER_UNCORRECTABLE, "ERR_FATAL"),
    }
    if dev.kind == "root-port":
        for name in (
            "aer_rootport_total_err_cor",
            "aer_rootport_total_err_fatal",
            "aer_rootport_total_err_nonfatal",
        ):
            files[name] = "0"
    files.update(dev.extra)
    return files


Overrides = Mapping[str, Mapping[str, Mapping[str, str]]]


@dataclass(frozen=True)
class Entry:
    """One node of the tree: a directory, a file with its content, or a symlink to `data`."""

    path: str  # relative to the tree
    type: str  # "dir" | "file" | "link"
    data: str = ""


def tree_entries(
    faults: Sequence[str] = (),
    overrides: Overrides | None = None,
    node: int | None = None,
    platform: str | None = None,
) -> list[Entry]:
    """The whole tree for a node with these faults, parents before children (pure).

    ``overrides`` is the catalog's ``sysfs`` section: for each active fault, BDF -> file -> new
    content. Values get the kernel's trailing newline. ``node`` is the node's number: the HCA
    GUIDs in every file are renumbered for it (None: as recorded). ``platform``: whose PCI tree
    (its catalog's ``pci`` section; None: HGX H100).
    """
    if overrides is None:
        overrides = catalog(platform).get("sysfs", {})
    devices = {d.bdf: d for d in hgx_h100_devices(catalog(platform).get("pci"))}
    changes: dict[str, dict[str, str]] = {}
    for fault in faults:
        for bdf, files in overrides.get(fault, {}).items():
            if bdf not in devices:
                raise ValueError(f"sysfs override for fault {fault}: no device {bdf} in the fake tree")
            changes.setdefault(bdf, {}).update(files)

    entries: dict[str, Entry] = {}

    def add_dirs(path: str) -> None:
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            entries.setdefault(sub, Entry(sub, "dir"))

    add_dirs("bus/pci/devices")
    add_dirs("bus/pci/slots")
    for bdf, dev in devices.items():
        rel = device_dir(devices, bdf)
        files = device_files(dev)
        unknown = set(changes.get(bdf, {})) - set(files)
        if unknown:
            raise ValueError(f"sysfs override for {bdf}: no file(s) {', '.join(sorted(unknown))}")
        files.update(changes.get(bdf, {}))
        add_dirs(rel)
        for name, content in files.items():
            path = f"{rel}/{name}"
            if content is None:
                add_dirs(path)
            else:
                add_dirs(path.rsplit("/", 1)[0])
                if node is not None:
                    content = rewrite_guids(content, node)
                entries[path] = Entry(path, "file", content if content.endswith("\n") else content + "\n")
        # /sys/bus/pci/devices/<bdf> -> ../../../devices/pci.../<bdf>, relative like the kernel's
        link = sysfs_attr_path(bdf).replace(os.sep, "/")
        entries[link] = Entry(link, "link", "../../../" + rel)
        if dev.slot is not None:
            add_dirs(f"bus/pci/slots/{dev.slot}")
            address = f"bus/pci/slots/{dev.slot}/address"
            entries[address] = Entry(address, "file", bdf.rsplit(".", 1)[0] + "\n")  # domain:bus:device
    return list(entries.values())


def build_fake_sysfs(
    root: Path, faults: Sequence[str] = (), overrides: Overrides | None = None, platform: str | None = None
) -> Path:
    """(Re)build the tree as plain files under ``root``/etc/bringup-lab/sysfs; returns its path.

    What a node's init unpacks from `fake_sysfs_tar` (tests and tools read it without a node),
    for the node the root's identity file names (dispatch.node_number).
    Files are 0644 (the kernel's are mostly 0444) so the stress stand-in can change link speeds.
    """
    entries = tree_entries(faults, overrides, node_number(root), platform)
    tree = Path(root) / SYSFS_SUBPATH
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    for entry in entries:
        path = tree / entry.path
        if entry.type == "dir":
            path.mkdir(exist_ok=True)
        elif entry.type == "link":
            path.symlink_to(entry.data)
        else:
            path.write_text(entry.data)
            path.chmod(0o644)
    return tree


def fake_sysfs_tar(
    faults: Sequence[str] = (),
    overrides: Overrides | None = None,
    node: int | None = None,
    platform: str | None = None,
) -> bytes:
    """The tree as an uncompressed tar (root-owned, 0644/0755), built in memory.

    A node's init unpacks it into a tmpfs (nodes.NODE_INIT): a thousand small files are written
    in milliseconds there, against most of a second on the node's overlay disk.
    """
    if overrides is None:  # the catalog's faults: a rebuilt node reuses its build
        return _catalog_tar(tuple(faults), node, platform)
    return _tar(faults, overrides, node, platform)


@lru_cache(maxsize=64)
def _catalog_tar(faults: tuple[str, ...], node: int | None, platform: str | None) -> bytes:
    return _tar(faults, catalog(platform).get("sysfs", {}), node, platform)


def _tar(faults: Sequence[str], overrides: Overrides, node: int | None, platform: str | None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for entry in tree_entries(faults, overrides, node, platform):
            info = tarfile.TarInfo(entry.path)
            info.uid = info.gid = 0
            info.mtime = 0
            if entry.type == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif entry.type == "link":
                info.type, info.mode, info.linkname = tarfile.SYMTYPE, 0o777, entry.data
                tar.addfile(info)
            else:
                data = entry.data.encode()
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def install_fake_sysfs(
    root: Path, faults: Sequence[str] = (), overrides: Overrides | None = None, platform: str | None = None
) -> Path:
    """Write the node's tree as etc/bringup-lab/sysfs.tar under ``root``; returns its path.

    The GUIDs are those of the node the root's identity file names (dispatch.node_number).
    """
    path = Path(root) / SYSFS_TAR_SUBPATH
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(fake_sysfs_tar(faults, overrides, node_number(root), platform))
    tmp.replace(path)
    return path
