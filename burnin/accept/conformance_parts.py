"""The order comparison, one part of a node at a time (pure): CPU, memory, GPUs, NICs, NVMe,
power supplies, fans, BMC and BIOS firmware, Bios attributes. Each adds its ``PartRow`` and
its ``Mismatch``es to a ``Collected``; burnin/accept/conformance.py says which sources each reads."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from bringup.inventory.delivery import OrderProfile, version_at_least
from burnin.accept.conformance_model import Collected, Mismatch, ResultRecord
from burnin.accept.missing_parts import PciPart, describe, missing_gpus, missing_hcas, pci_parts
from burnin.result import Action

BAD_HEALTH = frozenset({"Warning", "Critical"})
FAILED_STATES = frozenset({"UnavailableOffline", "Disabled", "Deferring", "Quiesced"})


# -- small helpers ------------------------------------------------------------------------------------


def latest(results: Iterable[ResultRecord]) -> dict[str, ResultRecord]:
    """The newest result per check: the highest stored id (a later row wins a tie, as when
    results not yet stored carry no id)."""
    ordered = sorted(enumerate(results), key=lambda p: (getattr(p[1], "id", None) or 0, p[0]))
    return {r.check: r for _, r in ordered}


def _metric(results: Mapping[str, ResultRecord], check: str, key: str) -> Any:
    result = results.get(check)
    return (result.metrics or {}).get(key) if result is not None else None


def _has(text: Any, wanted: str) -> bool:
    return isinstance(text, str) and wanted.lower() in text.lower()


def _version(text: Any) -> str | None:
    """The version inside a vendor's string: 'iLO 5 v2.55' -> 2.55, 'U46 v1.56 (11/29/2021)' ->
    1.56, '7.10.30.00' as it is."""
    if not isinstance(text, str) or not text.strip():
        return None
    match = re.search(r"\bv(\d+(?:\.\d+)*)", text) or re.search(r"\d+(?:\.\d+)+", text)
    return match.group(1) if match and match.groups() else (match.group(0) if match else text.strip())


def _reseat_subjects(result: ResultRecord | None) -> list[str]:
    """The slots a check's RESEAT findings name (memory_dimms: 'CPU0_DIMM_C2 (P0_...)')."""
    findings = getattr(result, "findings", None) or []
    return [
        str(f.get("subject")).split(" (")[0]
        for f in findings
        if isinstance(f, dict) and f.get("action") == Action.RESEAT.value and f.get("subject")
    ]


def _gib(value: float) -> str:
    return f"{value:g} GiB"


def _unhealthy(item: Mapping[str, Any]) -> str | None:
    """Why a part the BMC reports is broken ('health Critical, UnavailableOffline'), or None."""
    bad = []
    if item.get("health") in BAD_HEALTH:
        bad.append(f"health {item['health']}")
    if item.get("state") in FAILED_STATES:
        bad.append(str(item["state"]))
    return ", ".join(bad) or None


def _where(item: Mapping[str, Any], key: str = "slot") -> dict[str, str]:
    return {"slot": str(item.get(key) or ""), "serial": str(item.get("serial") or "")}


# -- one section each -------------------------------------------------------------------------------


def _pci(results: Mapping[str, ResultRecord]) -> list[PciPart]:
    """The PCI tree the pcie stage read (burnin/accept/missing_parts.py)."""
    return pci_parts(_metric(results, "pcie_links", "links"))


def _lost_text(lost: list[PciPart], tool: str) -> str:
    return f": the PCI tree still shows {describe(lost)}, which {tool} does not list" if lost else ""


def _lost_where(lost: list[PciPart]) -> dict[str, str]:
    """The slot and serial of the parts the OS lost, for the reason and the RMA bundle."""
    if not lost:
        return {}
    return {
        "slot": "; ".join(p.where() for p in lost),
        "serial": "; ".join(p.serial for p in lost if p.serial),
    }


def cpu(
    order: OrderProfile, hw: Mapping[str, Any], results: Mapping[str, ResultRecord], out: Collected
) -> None:
    want = order.cpu
    if want.model is None and want.sockets is None and want.cores is None:
        return
    inv = hw.get("inventory") or {}
    cpus = [c for c in inv.get("processors") or [] if c.get("present")] if "processors" in inv else None
    lscpu = results.get("cpu_inventory")
    ordered = ", ".join(
        x
        for x in (
            want.model,
            f"{want.sockets} sockets" if want.sockets else "",
            f"{want.cores} cores" if want.cores else "",
        )
        if x
    )
    if cpus is None and lscpu is None:
        why = (inv.get("not_reported") or {}).get("processors", "no Redfish Processors and no lscpu result")
        out.unknown("cpu", ordered, why)
        return
    if cpus is not None:
        models = [c.get("model") for c in cpus]
        sockets, cores = len(cpus), sum(c.get("cores") or 0 for c in cpus)
    else:
        assert lscpu is not None
        models = [lscpu.metrics.get("cpu_model")] * int(lscpu.metrics.get("sockets") or 0)
        sockets, cores = int(lscpu.metrics.get("sockets") or 0), int(lscpu.metrics.get("cores") or 0)
    ok = True
    if want.model is not None:
        for cpu, model in zip(cpus or [{}] * len(models), models, strict=True):
            if not _has(model, want.model):
                ok = False
                out.add(
                    "cpu",
                    f"{cpu.get('socket') or 'CPU'} is {model!r}, the order has {want.model!r}",
                    Action.RMA,
                    ordered=want.model,
                    found=str(model),
                    **_where(cpu, "socket"),
                )
    if want.sockets is not None and sockets != want.sockets:
        ok = False
        out.add(
            "cpu",
            f"{sockets} CPU socket(s) populated, the order has {want.sockets}",
            Action.RMA,
            ordered=str(want.sockets),
            found=str(sockets),
        )
    if want.cores is not None and cores != want.cores:
        ok = False
        out.add(
            "cpu",
            f"{cores} cores in all, the order has {want.cores}",
            Action.RMA,
            ordered=str(want.cores),
            found=str(cores),
        )
    for cpu in cpus or []:
        if why := _unhealthy(cpu):
            ok = False
            out.add("cpu", f"{cpu.get('socket')}: {why}", Action.RMA, **_where(cpu, "socket"))
    found = f"{', '.join(sorted({str(m) for m in models}))}, {sockets} sockets, {cores} cores"
    out.row("cpu", ordered, found, ok)


def memory(
    order: OrderProfile, hw: Mapping[str, Any], results: Mapping[str, ResultRecord], out: Collected
) -> None:
    want = order.memory
    if all(v is None for v in (want.total_gib, want.dimm_count, want.dimm_size_gib, want.dimm_speed_mts)):
        return
    ordered = ", ".join(
        x
        for x in (
            f"{want.dimm_count} DIMMs" if want.dimm_count else "",
            f"{_gib(want.dimm_size_gib)} each" if want.dimm_size_gib else "",
            f"{want.dimm_speed_mts} MT/s" if want.dimm_speed_mts else "",
            f"{_gib(want.total_gib)} in all" if want.total_gib else "",
        )
        if x
    )
    inv = hw.get("inventory") or {}
    dimms = inv.get("memory") if "memory" in inv else None
    dmi_count = _metric(results, "memory_dimms", "dimms")
    if dimms is None and dmi_count is None:
        why = (inv.get("not_reported") or {}).get("memory", "no Redfish Memory and no dmidecode result")
        out.unknown("memory", ordered, why)
        return
    ok = True
    present = [d for d in dimms or [] if d.get("present")]
    counts = {}
    if dimms is not None:
        counts["Redfish"] = len(present)
    if dmi_count is not None:
        counts["dmidecode"] = int(dmi_count)
    if want.dimm_count is not None and any(n != want.dimm_count for n in counts.values()):
        ok = False
        empty = [str(d.get("slot")) for d in dimms or [] if not d.get("present")]
        if not empty:  # a BMC that lists populated slots only (iDRAC): dmidecode names the empty one
            empty = _reseat_subjects(results.get("memory_dimms"))
        seen = ", ".join(f"{n} ({src})" for src, n in counts.items())
        fewer = min(counts.values()) < want.dimm_count
        out.add(
            "memory",
            f"{seen} DIMMs populated, the order has {want.dimm_count}"
            + (f"; empty: {', '.join(empty)}" if empty and fewer else ""),
            Action.RESEAT if fewer else Action.RMA,  # a missing DIMM: reseat, then RMA
            slot=", ".join(empty) if fewer else "",
            ordered=str(want.dimm_count),
            found=seen,
        )
    for dimm in present:
        size, speed = dimm.get("size_gib"), dimm.get("speed_mts")
        if want.dimm_size_gib is not None and size is not None and size != want.dimm_size_gib:
            ok = False
            out.add(
                "memory",
                f"DIMM {dimm.get('slot')} is {_gib(size)}, the order has {_gib(want.dimm_size_gib)}",
                Action.RMA,
                ordered=_gib(want.dimm_size_gib),
                found=_gib(size),
                **_where(dimm),
            )
        if want.dimm_speed_mts is not None and speed is not None and speed < want.dimm_speed_mts:
            ok = False
            out.add(
                "memory",
                f"DIMM {dimm.get('slot')} runs at {speed} MT/s, the order has {want.dimm_speed_mts}",
                Action.RECONFIGURE,
                ordered=str(want.dimm_speed_mts),
                found=str(speed),
                **_where(dimm),
            )
        if why := _unhealthy(dimm):
            ok = False
            out.add("memory", f"DIMM {dimm.get('slot')}: {why}", Action.RMA, **_where(dimm))
    total = (
        sum(d.get("size_gib") or 0 for d in present)
        if dimms is not None
        else _metric(results, "memory_dimms", "memory_gib")
    )
    if want.total_gib is not None and total is not None and total != want.total_gib and ok:
        ok = False
        out.add(
            "memory",
            f"{_gib(total)} of memory, the order has {_gib(want.total_gib)}",
            Action.RMA,
            ordered=_gib(want.total_gib),
            found=_gib(total),
        )
    found = ", ".join(f"{n} DIMMs ({src})" for src, n in counts.items()) + (
        f", {_gib(total)}" if total else ""
    )
    out.row("memory", ordered, found, ok)


def gpu(order: OrderProfile, results: Mapping[str, ResultRecord], out: Collected) -> None:
    want = order.gpu
    if want.model is None and want.count is None and want.min_vbios is None:
        return
    ordered = ", ".join(
        x
        for x in (
            f"{want.count}x" if want.count else "",
            want.model or "",
            f"VBIOS >= {want.min_vbios}" if want.min_vbios else "",
        )
        if x
    )
    gpus = _metric(results, "gpu_versions", "gpu_list")
    if not isinstance(gpus, list):
        out.unknown("gpu", ordered, "no gpu_versions result listing the GPUs (nvidia-smi -q)")
        return
    ok = True
    if want.count is not None and len(gpus) != want.count:
        ok = False
        fewer = len(gpus) < want.count
        lost = missing_gpus([str(g.get("bus_id") or "") for g in gpus], _pci(results)) if fewer else []
        out.add(
            "gpu",
            f"{len(gpus)} GPUs, the order has {want.count}" + _lost_text(lost, "nvidia-smi"),
            Action.RESEAT if fewer else Action.RMA,
            ordered=str(want.count),
            found=str(len(gpus)),
            **_lost_where(lost),
        )
    for gpu in gpus:
        slot = f"GPU {gpu.get('index')} ({gpu.get('bus_id')})"
        where = {"slot": slot, "serial": str(gpu.get("serial") or "")}
        if want.model is not None and not _has(gpu.get("product"), want.model):
            ok = False
            out.add(
                "gpu",
                f"{slot} is {gpu.get('product')!r}, the order has {want.model!r}",
                Action.RMA,
                ordered=want.model,
                found=str(gpu.get("product")),
                **where,
            )
        vbios = gpu.get("vbios")
        if want.min_vbios is not None and not (
            isinstance(vbios, str) and version_at_least(vbios, want.min_vbios)
        ):
            ok = False
            out.add(
                "gpu",
                f"{slot} VBIOS {vbios}, the order's minimum is {want.min_vbios}",
                Action.UPDATE_FIRMWARE,
                ordered=f">= {want.min_vbios}",
                found=str(vbios),
                **where,
            )
    products = sorted({str(g.get("product")) for g in gpus})
    vbioses = sorted({str(g.get("vbios")) for g in gpus})
    out.row("gpu", ordered, f"{len(gpus)}x {', '.join(products)}, VBIOS {', '.join(vbioses)}", ok)


def nics(order: OrderProfile, results: Mapping[str, ResultRecord], out: Collected) -> None:
    hcas = _metric(results, "ib_ports", "hca_list")
    for nic in order.nics:
        part = f"nic {nic.model}"
        ordered = ", ".join(
            x
            for x in (
                f"{nic.count}x" if nic.count else "",
                nic.model,
                f"firmware >= {nic.min_firmware}" if nic.min_firmware else "",
            )
            if x
        )
        if not isinstance(hcas, list):
            out.unknown(part, ordered, "no ib_ports result listing the HCAs (ibstat)")
            continue
        found = [h for h in hcas if _has(h.get("ca_type"), nic.model) or _has(h.get("name"), nic.model)]
        ok = True
        if nic.count is not None and len(found) != nic.count:
            ok = False
            fewer = len(found) < nic.count
            names = [str(h.get("name") or "") for h in hcas]
            lost = missing_hcas(names, _pci(results)) if fewer else []
            out.add(
                part,
                f"{len(found)} {nic.model} adapter(s), the order has {nic.count}"
                + _lost_text(lost, "ibstat"),
                Action.RESEAT if fewer else Action.RMA,
                ordered=str(nic.count),
                found=str(len(found)),
                **_lost_where(lost),
            )
        for hca in found:
            where = {
                "slot": str(hca.get("name") or ""),
                "serial": f"node GUID {hca['node_guid']}" if hca.get("node_guid") else "",
            }
            fw = hca.get("firmware")
            if nic.min_firmware is not None and not (
                isinstance(fw, str) and version_at_least(fw, nic.min_firmware)
            ):
                ok = False
                out.add(
                    part,
                    f"{hca.get('name')} firmware {fw}, the order's minimum is {nic.min_firmware}",
                    Action.UPDATE_FIRMWARE,
                    ordered=f">= {nic.min_firmware}",
                    found=str(fw),
                    **where,
                )
        firmware = sorted({str(h.get("firmware")) for h in found})
        out.row(part, ordered, f"{len(found)}x, firmware {', '.join(firmware) or '-'}", ok)


def nvme(
    order: OrderProfile, hw: Mapping[str, Any], results: Mapping[str, ResultRecord], out: Collected
) -> None:
    want = order.nvme
    if want.count is None and want.model is None and want.min_capacity_gb is None:
        return
    ordered = ", ".join(
        x
        for x in (
            f"{want.count}x" if want.count else "",
            want.model or "",
            f">= {want.min_capacity_gb:g} GB" if want.min_capacity_gb else "",
        )
        if x
    )
    inv = hw.get("inventory") or {}
    drives = [d for d in inv.get("drives") or [] if d.get("protocol") == "NVMe" or d.get("unreadable")]
    smart_count = _metric(results, "nvme_health", "nvme_drives")
    if not drives and smart_count is None:
        why = (inv.get("not_reported") or {}).get(
            "drives", "no NVMe drive in Redfish Storage and no smartctl result"
        )
        out.unknown("nvme", ordered, why)
        return
    ok = True
    counts = {}
    if drives:
        counts["Redfish"] = sum(1 for d in drives if d.get("present") is not False)
    if smart_count is not None:
        counts["smartctl"] = int(smart_count)
    if want.count is not None and any(n != want.count for n in counts.values()):
        ok = False
        seen = ", ".join(f"{n} ({src})" for src, n in counts.items())
        out.add(
            "nvme",
            f"{seen} NVMe drives, the order has {want.count}",
            Action.RESEAT if min(counts.values()) < want.count else Action.RMA,
            ordered=str(want.count),
            found=seen,
        )
    for drive in drives:
        if drive.get("unreadable"):
            ok = False
            out.mismatches.append(
                Mismatch(
                    "nvme",
                    f"drive {drive.get('slot')}: the BMC links it but cannot show it",
                    None,
                    slot=str(drive.get("slot")),
                )
            )
            continue
        if want.model is not None and not _has(drive.get("model"), want.model):
            ok = False
            out.add(
                "nvme",
                f"drive {drive.get('slot')} is {drive.get('model')!r}, the order has {want.model!r}",
                Action.RMA,
                ordered=want.model,
                found=str(drive.get("model")),
                **_where(drive),
            )
        cap = drive.get("capacity_gb")
        if want.min_capacity_gb is not None and cap is not None and cap < want.min_capacity_gb * 0.99:
            ok = False
            out.add(
                "nvme",
                f"drive {drive.get('slot')} holds {cap:g} GB, the order has {want.min_capacity_gb:g}",
                Action.RMA,
                ordered=f">= {want.min_capacity_gb:g} GB",
                found=f"{cap:g} GB",
                **_where(drive),
            )
        if why := _unhealthy(drive) or ("failure predicted" if drive.get("failure_predicted") else None):
            ok = False
            out.add("nvme", f"drive {drive.get('slot')}: {why}", Action.RMA, **_where(drive))
    found = ", ".join(f"{n} ({src})" for src, n in counts.items())
    out.row("nvme", ordered, found, ok)


def psu(order: OrderProfile, hw: Mapping[str, Any], out: Collected) -> None:
    want = order.psu
    inv = hw.get("inventory") or {}
    supplies = inv.get("power_supplies") if "power_supplies" in inv else None
    ordered = ", ".join(x for x in (f"{want.count}x" if want.count else "", want.redundancy or "") if x)
    if supplies is None:
        if want.count is not None or want.redundancy is not None:
            out.unknown(
                "psu", ordered, (inv.get("not_reported") or {}).get("power_supplies", "not discovered")
            )
        return
    ok = True
    present = [p for p in supplies if p.get("present")]
    healthy = [p for p in present if _unhealthy(p) is None]
    if want.count is not None and len(present) != want.count:
        ok = False
        absent = [str(p.get("slot")) for p in supplies if not p.get("present")]
        out.add(
            "psu",
            f"{len(present)} power supplies present, the order has {want.count}"
            + (f"; absent: {', '.join(absent)}" if absent else ""),
            Action.RESEAT if len(present) < want.count else Action.RMA,
            slot=", ".join(absent),
            ordered=str(want.count),
            found=str(len(present)),
        )
    for supply in present:
        if why := _unhealthy(supply):
            ok = False
            out.add(
                "psu",
                f"power supply {supply.get('slot')} failed: {why}",
                Action.RMA,
                ordered="healthy",
                found=why,
                **_where(supply),
            )
    for group in inv.get("power_redundancy") or []:
        if group.get("health") in BAD_HEALTH:
            ok = False
            out.add(
                "psu",
                f"power redundancy {group.get('name') or ''} is {group.get('health')}".replace("  ", " "),
                Action.RMA,
                ordered=want.redundancy or "redundant",
                found=str(group.get("health")),
            )
    if want.count is not None or want.redundancy is not None or not ok:
        out.row("psu", ordered or "healthy", f"{len(present)} present, {len(healthy)} healthy", ok)


def fans(hw: Mapping[str, Any], out: Collected) -> None:
    """Not in the order, but a dead fan on arrival is an RMA all the same."""
    for fan in (hw.get("inventory") or {}).get("fans") or []:
        if fan.get("present") and (why := _unhealthy(fan)):
            out.add("fan", f"fan {fan.get('name')}: {why}", Action.RMA, slot=str(fan.get("name") or ""))
            out.row("fan", "healthy", f"{fan.get('name')}: {why}", False)


def firmware(order: OrderProfile, hw: Mapping[str, Any], out: Collected) -> None:
    for part, minimum, raw in (
        ("bmc", order.bmc.min_version, (hw.get("bmc") or {}).get("firmware_version")),
        ("bios", order.bios.min_version, (hw.get("system") or {}).get("bios_version")),
    ):
        if minimum is None:
            continue
        found = _version(raw)
        if found is None:
            out.unknown(part, f">= {minimum}", "the BMC reports no version")
        elif version_at_least(found, minimum):
            out.row(part, f">= {minimum}", raw, True)
        else:
            out.row(part, f">= {minimum}", raw, False)
            out.add(
                part,
                f"{part.upper()} firmware {raw}, the order's minimum is {minimum}",
                Action.UPDATE_FIRMWARE,
                ordered=f">= {minimum}",
                found=str(raw),
            )


def _same(found: Any, wanted: Any) -> bool:
    if isinstance(found, str) or isinstance(wanted, str):
        return str(found).strip().lower() == str(wanted).strip().lower()
    return found == wanted


def bios_attributes(order: OrderProfile, hw: Mapping[str, Any], out: Collected) -> None:
    wanted = order.bios.attributes
    if not wanted:
        return
    inv = hw.get("inventory") or {}
    found = inv.get("bios_attributes") if "bios_attributes" in inv else None
    for name, value in wanted.items():
        part = f"bios {name}"
        if found is None:
            out.unknown(part, value, (inv.get("not_reported") or {}).get("bios_attributes", "not discovered"))
        elif name not in found:
            out.row(part, value, "absent", False)
            out.add(
                part,
                f"Bios attribute {name} is not among the BMC's attributes (want {value})",
                Action.RECONFIGURE,
                ordered=str(value),
                found="absent",
            )
        elif not _same(found[name], value):
            out.row(part, value, found[name], False)
            out.add(
                part,
                f"Bios attribute {name} is {found[name]}, the order wants {value}",
                Action.RECONFIGURE,
                ordered=str(value),
                found=str(found[name]),
            )
        else:
            out.row(part, value, found[name], True)
