"""Host hardware inventory checks of the preflight stage: DIMMs, CPUs and NVMe health.

What the node reports about itself against the profile's ``hardware`` figures: a
delivery with a DIMM missing, the wrong CPU or a worn or failing NVMe drive is caught before
any load runs. They sit in preflight, not a stage of their own: each reads firmware tables or a
log page in well under a second, read-only, like the other preflight checks. Each finding names
the part by its slot or serial, which is what a vendor's RMA desk asks for.
"""

from __future__ import annotations

import re

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, section_mark, sections
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.hardware import NvmeHealth, parse_dmidecode_memory, parse_lscpu, parse_smartctl_nvme
from burnin.result import Action, Finding, Result, critical, warning

GIB_MIB = 1024


@register
class MemoryInventory(Check):
    name = "memory_dimms"
    stages = ("preflight",)
    reads = ("dmidecode -t memory",)
    judges = ("hardware.dimm_count", "hardware.dimm_size_gib", "hardware.dimm_min_speed_mts")
    description = "every DIMM slot the profile expects is populated, at its size and speed (dmidecode)"
    timeout_s = 30

    def applies(self, profile: Profile) -> bool:
        return profile.hardware.judges_memory()

    def command(self, profile: Profile) -> str:
        return "dmidecode -t memory"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        hw = profile.hardware
        dimms = parse_dmidecode_memory(output.stdout)
        populated = [d for d in dimms if d.populated]
        findings: list[Finding] = []
        if hw.dimm_count is not None and len(populated) < hw.dimm_count:
            empty = [d for d in dimms if not d.populated]
            missing = hw.dimm_count - len(populated)
            for slot in empty[:missing] if len(empty) >= missing else empty:
                findings.append(
                    critical(
                        f"DIMM slot {slot.name} is empty: {len(populated)} of {hw.dimm_count} DIMMs present; "
                        "reseat the DIMM, and RMA it if it is still not seen",
                        Action.RESEAT,
                        f"Locator: {slot.locator} Size: No Module Installed",
                        slot.name,
                    )
                )
            if len(empty) < missing:
                findings.append(
                    critical(
                        f"{len(populated)} of {hw.dimm_count} DIMMs present and only {len(empty)} empty slot(s) "
                        "listed: the board reports fewer slots than the profile's DIMMs",
                        Action.RESEAT,
                        f"{len(dimms)} memory device records",
                    )
                )
        elif hw.dimm_count is not None and len(populated) > hw.dimm_count:
            findings.append(
                critical(
                    f"{len(populated)} DIMMs present, the profile has {hw.dimm_count}: another build than ordered",
                    Action.RECONFIGURE,
                    f"{len(populated)} populated memory devices",
                )
            )
        for d in populated:
            wrong_size = hw.dimm_size_gib is not None and d.size_mib != round(hw.dimm_size_gib * GIB_MIB)
            speed = d.configured_speed_mts or d.speed_mts
            slow = hw.dimm_min_speed_mts is not None and speed is not None and speed < hw.dimm_min_speed_mts
            if not (wrong_size or slow):
                continue  # the evidence is written for a finding only (32 good DIMMs a node)
            part = f"{d.name} (serial {d.serial})" if d.serial else d.name
            evidence = (
                f"Locator: {d.locator} Size: {d.size_mib // GIB_MIB} GB Speed: {d.speed_mts} "
                f"Configured: {d.configured_speed_mts} Part: {d.part_number} Serial: {d.serial}"
            )
            if wrong_size:
                findings.append(
                    critical(
                        f"DIMM {part} is {d.size_mib / GIB_MIB:g} GiB, the profile has {hw.dimm_size_gib:g} GiB",
                        Action.RMA,
                        evidence,
                        part,
                    )
                )
            if slow:
                findings.append(
                    critical(
                        f"DIMM {part} runs at {speed} MT/s, below {hw.dimm_min_speed_mts} MT/s: "
                        "a slower or mixed DIMM population, or a BIOS memory setting",
                        Action.RECONFIGURE,
                        evidence,
                        part,
                    )
                )
        metrics = {
            "dimms": len(populated),
            "slots": len(dimms),
            "memory_gib": sum(d.size_mib for d in populated) / GIB_MIB,
            "dimm_serials": [d.serial for d in populated if d.serial],
        }
        return Result.judged(self.name, findings, metrics)


@register
class CpuInventory(Check):
    name = "cpu_inventory"
    stages = ("preflight",)
    reads = ("lscpu",)
    judges = ("hardware.cpu_model", "hardware.cpu_cores")
    description = "the CPU model and the number of physical cores are the profile's (lscpu -J)"
    timeout_s = 20

    def applies(self, profile: Profile) -> bool:
        return profile.hardware.judges_cpu()

    def command(self, profile: Profile) -> str:
        return "lscpu -J"  # JSON: a cut output does not parse (the text has no end to miss)

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        hw = profile.hardware
        cpu = parse_lscpu(output.stdout)
        evidence = (
            f"Model name: {cpu.model_name}; Socket(s): {cpu.sockets}; Core(s) per socket: "
            f"{cpu.cores_per_socket}; Thread(s) per core: {cpu.threads_per_core}"
        )
        findings: list[Finding] = []
        if hw.cpu_model is not None and hw.cpu_model.lower() not in cpu.model_name.lower():
            findings.append(
                critical(
                    f"CPU is {cpu.model_name!r}, the profile has {hw.cpu_model!r}",
                    Action.RMA,
                    evidence,
                    "CPU",
                )
            )
        if hw.cpu_cores is not None and cpu.cores != hw.cpu_cores:
            findings.append(
                critical(
                    f"{cpu.cores} physical cores ({cpu.sockets} x {cpu.cores_per_socket}), the profile has "
                    f"{hw.cpu_cores}: a socket missing or cores disabled in the BIOS",
                    Action.RECONFIGURE,
                    evidence,
                    "CPU",
                )
            )
        metrics = {
            "cpu_model": cpu.model_name,
            "sockets": cpu.sockets,
            "cores": cpu.cores,
            "threads": cpu.cpus,
            "numa_nodes": cpu.numa_nodes,
        }
        return Result.judged(self.name, findings, metrics)


_SCAN_LINE = re.compile(r"^(/dev/\S+) -d (\S+) # ", re.MULTILINE)


@register
class NvmeHealthCheck(Check):
    name = "nvme_health"
    stages = ("preflight",)
    reads = ("smartctl -j",)
    judges = ("hardware.nvme_count", "hardware.nvme_min_capacity_gb", "hardware.nvme_max_percentage_used")
    description = (
        "every NVMe drive present, large enough, no critical warning, spare above threshold (smartctl -j)"
    )
    timeout_s = 60
    judge_any_rc = True  # smartctl's exit status has a bit per problem found: the JSON is judged

    def applies(self, profile: Profile) -> bool:
        return profile.hardware.nvme_count is not None

    def command(self, profile: Profile) -> str:
        # Without smartctl the scan prints nothing and the loop runs no drive: that output reads
        # as "0 drives found, reseat them" unless the missing tool ends the command first (127).
        return (
            "command -v smartctl >/dev/null || { echo 'smartctl: command not found' >&2; exit 127; }; "
            f"{section_mark('scan')}; smartctl --scan -d nvme; "
            "for d in $(smartctl --scan -d nvme | awk '{print $1}'); do "
            'echo "@@burnin-section ${d##*/}"; smartctl -j -a "$d"; done'
        )

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        hw = profile.hardware
        parts = sections(output.stdout)
        if "scan" not in parts:
            # One drive's smartctl -j on its own (`burnin evaluate` on a saved file): judged, not counted.
            drives = [parse_smartctl_nvme(output.stdout)]
            incomplete = "one drive's output alone: the number of drives is not judged"
        else:
            listed = _SCAN_LINE.findall(parts["scan"])
            if parts["scan"].strip() and not listed:
                raise ParseError("the 'smartctl --scan' section lists no device")
            drives = []
            for device, _ in listed:
                section = device.rsplit("/", 1)[-1]
                if section not in parts:
                    raise ParseError(f"no smartctl output for {device}: the output is cut short")
                drives.append(parse_smartctl_nvme(parts[section]))
            incomplete = ""
        findings: list[Finding] = []
        if hw.nvme_count is not None and "scan" in parts and len(drives) != hw.nvme_count:
            fewer = len(drives) < hw.nvme_count
            findings.append(
                critical(
                    f"{len(drives)} NVMe drive(s) found, the profile has {hw.nvme_count}"
                    + (": reseat the missing drive, RMA it if it is still not seen" if fewer else ""),
                    Action.RESEAT if fewer else Action.RECONFIGURE,
                    parts["scan"],
                )
            )
        unknown_capacity = []
        for drive in drives:
            findings.extend(_drive_findings(drive, hw.nvme_max_percentage_used))
            if hw.nvme_min_capacity_gb is None:
                continue
            if drive.capacity_bytes is None:
                unknown_capacity.append(drive.name)
            elif drive.capacity_bytes < hw.nvme_min_capacity_gb * 1e9:
                findings.append(
                    critical(
                        f"NVMe {drive.name} holds {drive.capacity_bytes / 1e9:.0f} GB, below "
                        f"{hw.nvme_min_capacity_gb:g} GB: another drive than ordered",
                        Action.RMA,
                        f"{drive.model} {drive.capacity_bytes} bytes",
                        drive.name,
                    )
                )
        if unknown_capacity and not incomplete:
            incomplete = f"smartctl reports no capacity for {', '.join(unknown_capacity)}"
        metrics = {
            "nvme_drives": len(drives),
            "nvme_serials": [d.serial for d in drives if d.serial],
            "max_percentage_used": max(d.percentage_used for d in drives) if drives else None,
            "max_temperature_c": max(d.temperature_c for d in drives) if drives else None,
            "media_errors": sum(d.media_errors for d in drives),
        }
        return Result.judged(self.name, findings, metrics, incomplete=incomplete)


def _drive_findings(drive: NvmeHealth, max_used: float) -> list[Finding]:
    evidence = (
        f"{drive.device} {drive.model} serial {drive.serial}: critical_warning {drive.critical_warning}, "
        f"available_spare {drive.available_spare_pct}% (threshold {drive.spare_threshold_pct}%), "
        f"percentage_used {drive.percentage_used}%, media_errors {drive.media_errors}"
    )
    findings = [
        critical(f"NVMe {drive.name}: critical warning: {what}", Action.RMA, evidence, drive.name)
        for what in drive.warnings()
    ]
    if drive.available_spare_pct < drive.spare_threshold_pct and not drive.critical_warning & 1:
        findings.append(
            critical(
                f"NVMe {drive.name}: available spare {drive.available_spare_pct}% is below its threshold "
                f"{drive.spare_threshold_pct}%",
                Action.RMA,
                evidence,
                drive.name,
            )
        )
    if drive.media_errors:
        findings.append(
            critical(
                f"NVMe {drive.name}: {drive.media_errors} media error(s) (unrecovered data errors)",
                Action.RMA,
                evidence,
                drive.name,
            )
        )
    if drive.percentage_used >= 100:
        findings.append(
            critical(f"NVMe {drive.name} is worn out (100% used)", Action.RMA, evidence, drive.name)
        )
    elif drive.percentage_used > max_used:
        findings.append(
            warning(
                f"NVMe {drive.name} has used {drive.percentage_used}% of its endurance (warn above {max_used:g}%)",
                Action.MONITOR,
                evidence,
                drive.name,
            )
        )
    return findings
