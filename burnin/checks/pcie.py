"""The PCIe stage: link width at idle, link speed under load, AER counters across the load.

Both vendors' GPUs (sysfs is the kernel's; the load is burnin-stress, whose torch.cuda is HIP on
ROCm builds): NVIDIA's display and 3D controllers, AMD Instinct's processing accelerators (MI300X
is 1002:74a1, class 0x1200: https://pci-ids.ucw.cz/read/PC/1002/74a1; amdgpu binds every AMD
device of that class, drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c). Only the profile's vendor's count.

GPUs drop their link speed when idle (normal power saving), so only width is judged at idle;
speed is judged on the best reading taken while burnin-stress loads the GPUs. NICs and NVMe
drives do not downclock: both are judged on every reading. Switch ports may read "downgraded"
harmlessly, so bridges are not judged, only named in the evidence as the path to a device.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bringup.profiles.load import Profile
from burnin import onnode
from burnin.checks.base import Check, CommandOutput, section_mark, sections
from burnin.checks.load import stress_shell
from burnin.checks.registry import register
from burnin.parsers import ParseError, load_json
from burnin.parsers.kernel_log import parse_kernel_log
from burnin.parsers.sysfs import parse_aer_counters, parse_link_speed, parse_link_width, speed_to_gen
from burnin.result import Action, Finding, Result, critical, warning

NVIDIA, AMD, MELLANOX = "0x10de", "0x1002", "0x15b3"
# The PCI vendor and class prefixes of each GPU vendor's GPUs (a profile's gpu.vendor).
GPU_IDS = {"nvidia": (NVIDIA, ("0x0300", "0x0302")), "amd": (AMD, ("0x1200",))}
_COLLECT_DELIMITER = "BURNIN_PCIE_COLLECT"
_AER_FILES = {"aer_dev_correctable": "correctable", "aer_dev_nonfatal": "non-fatal", "aer_dev_fatal": "fatal"}


@dataclass(frozen=True)
class Link:
    bdf: str
    role: str  # "GPU 3", "mlx5_4", "nvme1"
    kind: str  # gpu | nic | nvme
    slot: str | None
    upstream: tuple[str, ...]
    speed: float | None
    width: int | None
    max_speed: float | None
    max_width: int | None
    aer: dict[str, dict[str, int]]
    serial: str | None = None  # a NIC's VPD serial (the idle reading): what an RMA desk asks for

    def where(self) -> str:
        slot = f", slot {self.slot}" if self.slot else ""
        serial = f", serial {self.serial}" if self.serial else ""
        return f"{self.role} ({self.bdf}{slot}{serial})"


def _kind(dev: dict[str, Any], gpu_vendor: str) -> str | None:
    cls, vendor = str(dev.get("class") or ""), str(dev.get("vendor") or "")
    gpu_pci_vendor, gpu_classes = GPU_IDS.get(gpu_vendor, ("", ()))
    if vendor == gpu_pci_vendor and cls[:6] in gpu_classes:
        return "gpu"
    if vendor == MELLANOX and cls[:4] == "0x02":
        return "nic"
    if cls[:8] == "0x010802":
        return "nvme"
    return None


def _links(doc: dict[str, Any], gpu_vendor: str) -> dict[str, Link]:
    devices = doc.get("devices")
    if not isinstance(devices, list):
        raise ParseError("no device list in the collector's JSON")
    typed = [(d, _kind(d, gpu_vendor)) for d in devices if isinstance(d, dict)]
    gpus = sorted(str(d.get("bdf")) for d, k in typed if k == "gpu")
    links = {}
    for dev, kind in typed:
        if kind is None:
            continue
        bdf = str(dev.get("bdf"))
        names = dev.get("names") or {}
        if kind == "gpu":
            # nvidia-smi and amd-smi number GPUs in PCI bus order (the real 8x MI300 `amd-smi xgmi`
            # of https://github.com/ROCm/amdsmi/blob/0ceca28f4139dced5e9b5739a3f393780d7add48/CHANGELOG.md)
            role = f"GPU {gpus.index(bdf)}"
        else:
            role = next(
                iter((names.get("infiniband") or []) + (names.get("nvme") or []) + (names.get("net") or [])),
                bdf,
            )
        aer = {label: parse_aer_counters(dev[f]) for f, label in _AER_FILES.items() if dev.get(f)}
        links[bdf] = Link(
            bdf,
            role,
            kind,
            dev.get("slot"),
            tuple(dev.get("upstream") or ()),
            parse_link_speed(dev.get("current_link_speed") or ""),
            _width(dev.get("current_link_width")),
            parse_link_speed(dev.get("max_link_speed") or ""),
            _width(dev.get("max_link_width")),
            aer,
            str(dev["serial"]) if dev.get("serial") else None,
        )
    return links


def _width(value: Any) -> int | None:
    """A link width from the collector; None when absent, a ParseError when absurd (x999)."""
    if value is None or str(value).strip() == "":
        return None
    return parse_link_width(str(value))


def _json_section(text: str, name: str) -> dict[str, Any]:
    try:
        doc = load_json(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"section {name}: not the collector's JSON ({exc.msg})") from None
    if not isinstance(doc, dict):
        raise ParseError(f"section {name}: not a JSON object")
    return doc


def _reading(link: Link) -> str:
    speed = f"{link.speed:g} GT/s" if link.speed is not None else "? GT/s"
    top = f"{link.max_speed:g} GT/s x{link.max_width}" if link.max_speed else f"x{link.max_width}"
    path = " <- ".join(link.upstream) if link.upstream else "root"
    return f"{link.bdf} {speed} x{link.width} (capable {top}); upstream {path}"


@register
class PcieLinks(Check):
    name = "pcie_links"
    stages = ("pcie",)
    vendors = ("nvidia", "amd")  # sysfs and burnin-stress (module docstring), whatever its text names
    reads = ("burnin PCIe collector (sysfs)",)
    judges = (
        "gpu.vendor",  # whose GPUs count as GPUs
        "gpu.count",
        "pcie.gpu.gen",
        "pcie.gpu.width",
        "pcie.nic.gen",
        "pcie.nic.width",
        "pcie.nvme.gen",
        "pcie.nvme.width",
    )
    description = "GPU, NIC and NVMe links: width at idle, speed under load, AER errors, kernel 'limited by'"

    def load_seconds(self, profile: Profile) -> float:
        return profile.diag.pcie_load_seconds

    def timeout(self, profile: Profile) -> int:
        return int(self.load_seconds(profile)) + 240  # plus a cold torch import and the inputs

    def command(self, profile: Profile) -> str:
        seconds = self.load_seconds(profile)
        collect = f"python3 - <<'{_COLLECT_DELIMITER}'\n{onnode.source('pcie_collect')}{_COLLECT_DELIMITER}"
        return "\n".join(
            [
                f"collect() {{\n{collect}\n}}",
                section_mark("idle"),
                "BURNIN_PCIE_VPD=1 collect",  # the cards' serials once, at idle
                f"( {stress_shell(seconds)} ) >/tmp/burnin-pcie-load.$$ 2>&1 &",
                "load=$!",
                # Several readings while the load runs: the GPUs speed up once it really starts.
                "i=0",
                "while kill -0 $load 2>/dev/null; do",
                "  sleep 3; i=$((i+1))",
                "  kill -0 $load 2>/dev/null || break",
                '  echo "@@burnin-section load$i"',
                "  collect",
                "done",
                "wait $load",
                section_mark("stress"),
                "cat /tmp/burnin-pcie-load.$$; rm -f /tmp/burnin-pcie-load.$$",
                section_mark("after"),
                "collect",
                section_mark("kernel"),
                "dmesg 2>/dev/null | grep -i 'limited by' || true",
            ]
        )

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        parts = sections(output.stdout)
        if "idle" not in parts:
            raise ParseError("no idle reading in the output")
        vendor = profile.gpu.vendor
        idle = _links(_json_section(parts["idle"], "idle"), vendor)
        loads = [
            _links(_json_section(text, name), vendor)
            for name, text in parts.items()
            if name.startswith("load")
        ]
        after = _links(_json_section(parts["after"], "after"), vendor) if "after" in parts else {}
        findings: list[Finding] = []
        # The command prints every mark, the kernel one last: an output that ends before it was
        # cut, and the AER counters or the kernel lines it lost may hold a failure.
        lost = [name for name in ("after", "kernel") if name not in parts]
        incomplete = f"the output ends before its {' and '.join(lost)} section: it was cut" if lost else ""
        links = {"gpu": profile.pcie.gpu, "nic": profile.pcie.nic, "nvme": profile.pcie.nvme}
        expected = {kind: (link.gen, link.width) for kind, link in links.items()}
        if not any(link.kind == "gpu" for link in idle.values()) and profile.gpu.count > 0:
            findings.append(critical(f"no {vendor.upper()} GPU on the PCIe bus", Action.RESEAT))
        readings = []
        for bdf, link in sorted(idle.items(), key=lambda kv: (kv[1].kind, kv[1].role)):
            gen, width = expected.get(link.kind, (None, None))
            under_load = [lo[bdf] for lo in loads if bdf in lo]
            best_speed = max((x.speed for x in [link, *under_load] if x.speed is not None), default=None)
            readings.append(
                {
                    "role": link.role,
                    "bdf": bdf,
                    "slot": link.slot,
                    "idle": _reading(link),
                    "best_speed_gts": best_speed,
                }
            )
            if width and link.width is not None and link.width < width:
                findings.append(
                    critical(
                        f"{link.where()} link is x{link.width}, expected x{width}"
                        + (
                            f" (the device can do x{link.max_width})"
                            if link.max_width and link.max_width >= width
                            else ""
                        ),
                        Action.RESEAT,
                        _reading(link),
                        link.role,
                    )
                )
            if gen is None:
                continue
            if link.kind == "gpu" and not under_load:
                incomplete = (
                    incomplete or "no link reading under load (the stress load did not run long enough)"
                )
                continue
            got_gen = speed_to_gen(best_speed) if best_speed is not None else None
            if got_gen is not None and got_gen < gen:
                when = "under load" if link.kind == "gpu" else "at idle and under load"
                findings.append(
                    critical(
                        f"{link.where()} link runs at Gen{got_gen} ({best_speed:g} GT/s) {when}, expected Gen{gen}",
                        Action.RESEAT,
                        _reading(under_load[-1] if under_load else link),
                        link.role,
                    )
                )
            if best_speed is None:
                incomplete = incomplete or f"{link.role}: link speed unreadable"
            if bdf in after:
                findings += _aer_findings(link, after[bdf])
        findings += _kernel_findings(parts.get("kernel", ""), idle)
        stress_error = _stress_error(parts.get("stress", ""))
        if stress_error and any(link.kind == "gpu" for link in idle.values()):
            incomplete = incomplete or f"the load did not run: {stress_error}"
        metrics = {"links": readings, "load_readings": len(loads)}
        return Result.judged(self.name, findings, metrics, incomplete=incomplete)


def _aer_findings(before: Link, after: Link) -> list[Finding]:
    findings = []
    for label, counters in after.aer.items():
        for name, value in counters.items():
            if not name.startswith("TOTAL"):
                continue
            grew = value - before.aer.get(label, {}).get(name, 0)
            if grew <= 0:
                continue
            evidence = f"{after.bdf} {label} {name} {before.aer.get(label, {}).get(name, 0)} -> {value}"
            if label == "correctable":
                findings.append(
                    warning(
                        f"{before.where()}: {grew} correctable AER error(s) during the load",
                        Action.MONITOR,
                        evidence,
                        after.role,
                    )
                )
            else:
                findings.append(
                    critical(
                        f"{before.where()}: {grew} {label} AER error(s) during the load",
                        Action.RESEAT,
                        evidence,
                        after.role,
                    )
                )
    return findings


def _kernel_findings(text: str, links: dict[str, Link]) -> list[Finding]:
    findings = []
    for event in parse_kernel_log(text):
        if event.kind != "pcie_limited":
            continue
        link = links.get(event.bdf or "")
        subject = link.where() if link else (event.bdf or "a PCIe device")
        speed = f"{event.speed_gts:g} GT/s" if event.speed_gts else "an unknown-speed"
        findings.append(
            warning(
                f"kernel: {subject} bandwidth limited by {speed} x{event.width} link at {event.limiting_bdf}",
                Action.RESEAT,
                event.raw,
                link.role if link else "",
            )
        )
    return findings


def _stress_error(text: str) -> str:
    start = text.find("{")
    if start < 0:
        return "no report from burnin-stress" if text.strip() else ""
    try:
        doc = load_json(text[start:])
    except json.JSONDecodeError:
        return "unreadable report from burnin-stress"
    return str(doc.get("error") or "") if isinstance(doc, dict) else ""
