"""`lspci -vv` judged offline (an operator's or a vendor's paste): each GPU, NIC and NVMe link's
width and speed against the profile's PCIe links, per device, naming the slot.

The thresholds are the pcie_links check's (``profile.pcie.gpu`` / ``nic`` / ``nvme``). One
snapshot cannot tell idle from load, and GPUs drop their link speed when idle, so a GPU's speed
below the profile is a note, not a failure (the pcie stage judges it under load); its width, and a
NIC's or NVMe drive's width and speed, are judged as read. Bridges and switch ports may read
"downgraded" harmlessly and are not judged. A grep'd excerpt without the device header (``lspci
-vv -s 03:00.0 | grep Lnk``) is judged against its own LnkCap width: losing lanes is the fault.
"""

from __future__ import annotations

from typing import Any

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.lspci import LspciDevice, parse_lspci_vv
from burnin.parsers.sysfs import speed_to_gen
from burnin.result import Action, Finding, Result, critical, info

NVIDIA, MELLANOX = "10de", "15b3"
_GPU_CLASSES = ("3D controller", "VGA compatible controller")
_NIC_CLASSES = ("Infiniband controller", "Ethernet controller", "Network controller")


def _kind(dev: LspciDevice) -> str | None:
    """gpu | nic | nvme | None (not judged); 'excerpt' for a header-less LnkCap/LnkSta excerpt."""
    if dev.bdf is None:
        return "excerpt"
    desc, cls = dev.description or "", dev.class_name or ""
    if cls in _GPU_CLASSES and (dev.vendor_id == NVIDIA or "NVIDIA" in desc):
        return "gpu"
    if cls in _NIC_CLASSES and (dev.vendor_id == MELLANOX or "Mellanox" in desc or "ConnectX" in desc):
        return "nic"
    if cls.startswith("Non-Volatile memory controller"):
        return "nvme"
    return None


def _where(dev: LspciDevice, kind: str) -> str:
    slot = dev.physical_slot or (str(dev.slot_number) if dev.slot_number is not None else None)
    label = {"gpu": "GPU", "nic": "NIC", "nvme": "NVMe", "excerpt": "device"}[kind]
    parts = [p for p in (dev.bdf, f"slot {slot}" if slot else None) if p]
    serial = f" (serial {dev.serial})" if dev.serial else ""  # the card's VPD: what an RMA desk asks for
    return f"{label} {' '.join(parts) if parts else '(no header in the excerpt)'}{serial}"


def _reading(dev: LspciDevice) -> str:
    def fmt(
        speed: float | None, width: int | None, state_s: str | None = None, state_w: str | None = None
    ) -> str:
        s = f"{speed:g}GT/s" if speed is not None else "unknown"
        return f"Speed {s}{f' ({state_s})' if state_s else ''}, Width x{width}{f' ({state_w})' if state_w else ''}"

    return (
        f"LnkCap: {fmt(dev.link_cap_speed_gts, dev.link_cap_width)}; LnkSta: "
        f"{fmt(dev.link_sta_speed_gts, dev.link_sta_width, dev.link_sta_speed_state, dev.link_sta_width_state)}"
    )


def _expected(kind: str, dev: LspciDevice, profile: Profile) -> tuple[int | None, int | None]:
    if kind == "gpu":
        return profile.pcie.gpu.gen, profile.pcie.gpu.width
    if kind == "nic":
        return profile.pcie.nic.gen, profile.pcie.nic.width
    if kind == "nvme":
        return profile.pcie.nvme.gen, profile.pcie.nvme.width
    return speed_to_gen(dev.link_cap_speed_gts), dev.link_cap_width  # an excerpt: its own capability


_WIDTHS = {0, 1, 2, 4, 8, 12, 16, 32}  # lane counts links train at (0: the link is down)


def _check_values(dev: LspciDevice) -> None:
    """A width or speed no PCIe link reports (x999, 999GT/s) is not lspci output: a ParseError."""
    for width in (dev.link_cap_width, dev.link_sta_width):
        if width is not None and width not in _WIDTHS:
            raise ParseError(f"{dev.bdf or 'a device'}: link width x{width} is not a PCIe width")
    for speed in (dev.link_cap_speed_gts, dev.link_sta_speed_gts):
        if speed is not None and speed_to_gen(speed) is None:
            raise ParseError(f"{dev.bdf or 'a device'}: link speed {speed:g}GT/s is not a PCIe speed")


def judge_device(dev: LspciDevice, kind: str, profile: Profile) -> list[Finding]:
    _check_values(dev)
    gen, width = _expected(kind, dev, profile)
    where, reading = _where(dev, kind), _reading(dev)
    findings: list[Finding] = []
    if width and dev.link_sta_width is not None and dev.link_sta_width < width:
        can = f" (the device can do x{dev.link_cap_width})" if (dev.link_cap_width or 0) >= width else ""
        findings.append(
            critical(
                f"{where} link is x{dev.link_sta_width}, expected x{width}{can}",
                Action.RESEAT,
                reading,
                where,
            )
        )
    got = speed_to_gen(dev.link_sta_speed_gts)
    if gen and got is not None and got < gen:
        text = f"{where} link runs at Gen{got} ({dev.link_sta_speed_gts:g} GT/s), expected Gen{gen}"
        if kind in ("gpu", "excerpt"):
            # GPUs lower their link speed when idle: one snapshot cannot tell a fault from power saving.
            findings.append(
                info(
                    f"{text}: GPUs slow their link at idle; judge it under load (pcie stage)", reading, where
                )
            )
        else:
            findings.append(critical(text, Action.RESEAT, reading, where))
    return findings


@register
class LspciLinks(Check):
    name = "pcie_lspci"
    stages = ()  # no stage: judged offline only (burnin evaluate); the pcie stage reads sysfs (pcie_links)
    reads = ("lspci -vv",)
    judges = (
        "pcie.gpu.gen",
        "pcie.gpu.width",
        "pcie.nic.gen",
        "pcie.nic.width",
        "pcie.nvme.gen",
        "pcie.nvme.width",
    )
    description = "lspci -vv: each GPU, NIC and NVMe link's width (and NIC/NVMe speed) against the profile"
    whole_at_line_ends = True  # a list with no count and no end (burnin.checks.base.judge)

    def command(self, profile: Profile) -> str:
        return "lspci -vv"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        devices = parse_lspci_vv(output.stdout)
        judged = [(d, k) for d in devices if (k := _kind(d)) is not None and d.link_sta_width is not None]
        if not judged:
            raise ParseError("no GPU, NIC or NVMe device with a LnkSta line in the lspci output")
        findings: list[Finding] = []
        links: list[dict[str, Any]] = []
        for dev, kind in judged:
            findings += judge_device(dev, kind, profile)
            links.append({"device": _where(dev, kind), "kind": kind, "reading": _reading(dev)})
        return Result.judged(self.name, findings, {"links": links, "devices": len(devices)})
