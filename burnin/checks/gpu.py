"""GPU checks of the preflight: inventory, ECC, memory health, versions, NVLink, fabric manager.
Each GPU's NVLink fabric registration is burnin/checks/gpu_fabric.py.
The gpu stage's checks under load (DCGM diagnostics, the stress load) are burnin/checks/gpu_load.py.

Thresholds come from the profile; the figures behind the fixed ones are in docs/reference.md, GPU.
"""

from __future__ import annotations

import statistics
from collections import Counter
from functools import lru_cache

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, Service
from burnin.checks.gpu_identity import link_findings, mig_finding, model_findings
from burnin.checks.gpu_smi_failure import smi_failure_result
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.nvidia_smi import (
    NO_LINKS_ABSENT,
    NO_LINKS_MIG,
    GpuQuery,
    NvlinkStatus,
    SmiQuery,
    parse_nvlink_status,
    parse_query,
)
from burnin.result import Action, Finding, Result, critical, info, warning

SMI_QUERY = "nvidia-smi -q"
# Its XML form, read into the same query by burnin/parsers/nvidia_smi_xml.py: a saved output the
# operator hands in (`burnin evaluate`); the checks themselves run the text form.
SMI_QUERY_XML = "nvidia-smi -q -x (XML)"

# Lifetime ECC limits one cloud fails a GPU at (docs/reference.md, GPU): DRAM correctable, SRAM correctable.
DRAM_CORRECTABLE_LIMIT = 20_000_000
SRAM_CORRECTABLE_LIMIT = 10_000


def _where(index: int, gpu: GpuQuery) -> str:
    # The serial names the board for an RMA; the index and bus address can change with a reseat.
    serial = f", serial {gpu.serial}" if gpu.serial else ""
    return f"GPU {index} ({gpu.bdf or gpu.bus_id}{serial})"


def _query(output: CommandOutput) -> SmiQuery:
    q = _parse_query_cached(output.stdout)
    if not q.gpus and not q.attached_gpus:
        raise ParseError("nvidia-smi -q listed no GPU block")
    # nvidia-smi prints one block per GPU it counts in "Attached GPUs" (a GPU off the bus is in
    # neither), so blocks that disagree with the count mean output cut short (5 of 8 blocks,
    # still ending with a newline) or more than one output run together: nothing to judge.
    if q.attached_gpus is None:
        raise ParseError("no 'Attached GPUs' line: not a whole nvidia-smi -q output")
    if q.problems:
        raise ParseError(f"{'; '.join(q.problems)}: the output was cut short or is not one nvidia-smi -q")
    return q


@lru_cache(maxsize=16)
def _parse_query_cached(text: str) -> SmiQuery:
    """Five checks judge the same `nvidia-smi -q` of a node: parse it once (parsers are pure)."""
    return parse_query(text)


class SmiQueryCheck(Check):
    """A preflight check that reads `nvidia-smi -q` (run once per node, shared)."""

    stages = ("preflight",)
    reads = ("nvidia-smi -q", SMI_QUERY_XML)
    timeout_s = 90  # nvidia-smi -q on 8 GPUs takes seconds; a wedged driver takes forever

    def command(self, profile: Profile) -> str:
        return SMI_QUERY


@register
class GpuInventory(SmiQueryCheck):
    name = "gpu_inventory"
    service = Service.ALWAYS
    # A -d view shows the GPU count too (its blocks, 'Attached GPUs'), so it is judged here as well.
    reads = ("nvidia-smi -q", SMI_QUERY_XML, "nvidia-smi -q -d", "nvidia-smi (error answer)")
    judges = ("gpu.count", "gpu.model", "pcie.gpu.gen", "pcie.gpu.width")
    description = (
        "GPU count and model as the profile says, each GPU's PCIe link as wide and able to reach the "
        "generation the profile says; no GPU waiting for a reset; none in MIG mode (a warning)"
    )

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        if failed := smi_failure_result(self.name, output):
            return failed  # nvidia-smi answered only an error (burnin/checks/gpu_smi_failure.py)
        if output.rc not in (0, None) and "fallen off the bus" in (output.stdout + output.stderr):
            return Result.judged(
                self.name,
                [
                    critical(
                        "a GPU has fallen off the bus (nvidia-smi)",
                        Action.REBOOT,
                        (output.stdout + output.stderr).strip()[-300:],
                    )
                ],
            )
        q = _query(output)
        want_count, want_model = profile.gpu.count, profile.gpu.model
        findings: list[Finding] = []
        if len(q.gpus) != want_count:
            attached = f" (nvidia-smi says {q.attached_gpus} attached)" if q.attached_gpus is not None else ""
            findings.append(
                critical(
                    f"{len(q.gpus)} GPU(s) found, the profile has {want_count}{attached}",
                    Action.RESEAT,
                    f"Attached GPUs : {q.attached_gpus}",
                )
            )
        for i, gpu in enumerate(q.gpus):
            if gpu.product_name is not None and gpu.product_name != want_model:
                findings.append(
                    critical(
                        f"{_where(i, gpu)} is {gpu.product_name!r}, the profile wants {want_model!r}",
                        Action.RMA,
                        f"Product Name : {gpu.product_name}",
                        f"GPU {i}",
                    )
                )
            findings += link_findings(_where(i, gpu), f"GPU {i}", gpu.pcie, profile)
            if gpu.mig_mode_current == "Enabled":
                findings.append(mig_finding(_where(i, gpu), f"GPU {i}", "MIG Mode Current : Enabled"))
            if gpu.reset_required:
                findings.append(
                    critical(
                        f"{_where(i, gpu)} reports a reset is required",
                        Action.RESET_GPU,
                        "GPU Reset Status: Reset Required : Yes",
                        f"GPU {i}",
                    )
                )
        metrics = {
            "gpus": len(q.gpus),
            "models": sorted({g.product_name or "?" for g in q.gpus}),
            "uuids": [g.uuid for g in q.gpus],
            "serials": [g.serial for g in q.gpus],
        }
        # What a -d view does not print is not judged, and said (docs/burnin.md).
        shown = {
            "gpu.model": any(g.product_name for g in q.gpus),
            "pcie.gpu.gen": any(g.pcie.gen_max for g in q.gpus),
            "pcie.gpu.width": any(g.pcie.width_current for g in q.gpus),
        }
        return Result.judged(
            self.name,
            findings,
            metrics,
            incomplete="; ".join(q.problems),
            not_covered=[field for field, seen in shown.items() if not seen],
        )


@register
class GpuEcc(SmiQueryCheck):
    name = "gpu_ecc"
    service = Service.ALWAYS
    description = "ECC enabled (current and pending); no uncorrected errors; lifetime counts under limits"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        if failed := smi_failure_result(self.name, output):
            return failed  # nvidia-smi answered only an error (burnin/checks/gpu_smi_failure.py)
        q = _query(output)
        findings: list[Finding] = []
        unreadable = []
        for i, gpu in enumerate(q.gpus):
            where, subject = _where(i, gpu), f"GPU {i}"
            if gpu.ecc_mode_current is None:
                unreadable.append(subject)
            for label, mode in (("current", gpu.ecc_mode_current), ("pending", gpu.ecc_mode_pending)):
                if mode is not None and mode.lower() != "enabled":
                    findings.append(
                        critical(
                            f"{where}: ECC mode {label} is {mode} (enable it: nvidia-smi -e 1, reboot)",
                            Action.RECONFIGURE,
                            f"ECC Mode {label.title()} : {mode}",
                            subject,
                        )
                    )
            for kind in ("dram_uncorrectable", "sram_uncorrectable"):
                value = gpu.ecc_volatile.get(kind)
                if value:
                    findings.append(
                        critical(
                            f"{where}: {value} volatile {kind.replace('_', ' ')} ECC error(s)",
                            Action.RESET_GPU,
                            f"Volatile {kind} : {value}",
                            subject,
                        )
                    )
            agg = gpu.ecc_aggregate
            if agg.get("sram_uncorrectable"):
                findings.append(
                    critical(
                        f"{where}: {agg['sram_uncorrectable']} lifetime SRAM uncorrectable error(s)",
                        Action.RMA,
                        f"Aggregate sram_uncorrectable : {agg['sram_uncorrectable']}",
                        subject,
                    )
                )
            for kind, limit in (
                ("sram_correctable", SRAM_CORRECTABLE_LIMIT),
                ("dram_correctable", DRAM_CORRECTABLE_LIMIT),
            ):
                value = agg.get(kind)
                if value is not None and value >= limit:
                    findings.append(
                        critical(
                            f"{where}: {value} lifetime {kind.replace('_', ' ')} errors (limit {limit})",
                            Action.RMA,
                            f"Aggregate {kind} : {value}",
                            subject,
                        )
                    )
        incomplete = f"ECC mode not reported for {', '.join(unreadable)}" if unreadable else ""
        metrics = {
            "volatile_uncorrectable": sum(
                (g.ecc_volatile.get("dram_uncorrectable") or 0)
                + (g.ecc_volatile.get("sram_uncorrectable") or 0)
                for g in q.gpus
            )
        }
        return Result.judged(self.name, findings, metrics, incomplete=incomplete)


@register
class GpuMemoryHealth(SmiQueryCheck):
    name = "gpu_memory"
    service = Service.ALWAYS
    reads = ("nvidia-smi -q", SMI_QUERY_XML, "nvidia-smi -q -d")
    description = "row remapping (pending or failed) and retired pages"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        if failed := smi_failure_result(self.name, output):
            return failed  # nvidia-smi answered only an error (burnin/checks/gpu_smi_failure.py)
        q = _query(output)
        findings: list[Finding] = []
        for i, gpu in enumerate(q.gpus):
            where, subject = _where(i, gpu), f"GPU {i}"
            rows = gpu.remapped_rows
            if rows is not None:
                line = (
                    f"Remapped Rows: correctable {rows.correctable}, uncorrectable {rows.uncorrectable}, "
                    f"pending {rows.pending}, failure {rows.failure}"
                )
                if rows.failure:
                    findings.append(
                        critical(
                            f"{where}: row remapping failed (no spare rows left)", Action.RMA, line, subject
                        )
                    )
                elif rows.pending:
                    findings.append(
                        critical(
                            f"{where}: a row remap is pending: reset the GPU to apply it",
                            Action.RESET_GPU,
                            line,
                            subject,
                        )
                    )
                elif rows.uncorrectable:
                    findings.append(
                        info(
                            f"{where}: {rows.uncorrectable} row(s) remapped for uncorrectable errors",
                            line,
                            subject,
                        )
                    )
            pages = gpu.retired_pages
            if pages is not None:
                line = f"Retired Pages: SBE {pages.sbe}, DBE {pages.dbe}, pending {pages.pending}"
                if pages.pending:
                    findings.append(
                        critical(
                            f"{where}: a page retirement is pending: reboot to apply it",
                            Action.REBOOT,
                            line,
                            subject,
                        )
                    )
                elif pages.dbe:
                    findings.append(
                        critical(
                            f"{where}: {pages.dbe} page(s) retired for double-bit errors",
                            Action.RMA,
                            line,
                            subject,
                        )
                    )
        return Result.judged(self.name, findings, {"gpus": len(q.gpus)}, incomplete="; ".join(q.problems))


@register
class GpuVersions(SmiQueryCheck):
    name = "gpu_versions"
    reads = ("nvidia-smi -q", SMI_QUERY_XML, "nvidia-smi -q -d")  # a -d view prints the driver version too
    judges = ("pins.driver", "pins.vbios")
    description = "driver (and VBIOS, when pinned) versions match the profile; one VBIOS across the node"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        if failed := smi_failure_result(self.name, output):
            return failed  # nvidia-smi answered only an error (burnin/checks/gpu_smi_failure.py)
        q = _query(output)
        findings: list[Finding] = []
        driver_pin, vbios_pin = profile.pins.driver, profile.pins.vbios
        if q.driver_version is None:
            raise ParseError("no Driver Version in nvidia-smi -q")
        if driver_pin and q.driver_version != str(driver_pin):
            findings.append(
                critical(
                    f"driver {q.driver_version} installed, the profile pins {driver_pin}",
                    Action.RECONFIGURE,
                    f"Driver Version : {q.driver_version}",
                )
            )
        vbios = Counter(g.vbios_version for g in q.gpus)
        for i, gpu in enumerate(q.gpus):
            if vbios_pin and gpu.vbios_version != str(vbios_pin):
                findings.append(
                    critical(
                        f"{_where(i, gpu)}: VBIOS {gpu.vbios_version}, the profile pins {vbios_pin}",
                        Action.RECONFIGURE,
                        f"VBIOS Version : {gpu.vbios_version}",
                        f"GPU {i}",
                    )
                )
        if len(vbios) > 1 and not vbios_pin:
            # The odd ones out, each named by its serial (the board an RMA or a flash is about).
            usual = vbios.most_common(1)[0][0]
            for i, gpu in enumerate(q.gpus):
                if gpu.vbios_version != usual:
                    findings.append(
                        warning(
                            f"{_where(i, gpu)}: VBIOS {gpu.vbios_version}, its {vbios[usual]} siblings run "
                            f"{usual} ({len(vbios)} versions in the node: {dict(vbios)})",
                            Action.MONITOR,
                            f"VBIOS Version : {gpu.vbios_version}",
                            f"GPU {i}",
                        )
                    )
        metrics = {
            "driver": q.driver_version,
            "cuda": q.cuda_version,
            "vbios": sorted(v or "?" for v in vbios),
            # Per GPU, for the order comparison (burnin/accept/conformance.py): an old VBIOS
            # or a wrong model is named by the GPU's serial.
            "gpu_list": [
                {
                    "index": i,
                    "bus_id": g.bus_id,
                    "serial": g.serial,
                    "product": g.product_name,
                    "vbios": g.vbios_version,
                }
                for i, g in enumerate(q.gpus)
            ],
        }
        unseen = ["pins.vbios"] if vbios_pin and not any(g.vbios_version for g in q.gpus) else []
        return Result.judged(self.name, findings, metrics, not_covered=unseen)


@register
class Nvlink(Check):
    name = "nvlink"
    stages = ("preflight",)
    reads = ("nvidia-smi nvlink -s",)
    judges = ("gpu.count", "gpu.model", "gpu.nvlink_links_per_gpu")
    description = (
        "every NVLink of every GPU active and at full speed; the GPUs it lists are the profile's model"
    )
    timeout_s = 60

    def applies(self, profile: Profile) -> bool:
        return profile.gpu.nvlink_links_per_gpu > 0

    def command(self, profile: Profile) -> str:
        return "nvidia-smi nvlink -s"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        if failed := smi_failure_result(self.name, output):
            return failed  # nvidia-smi answered only an error (burnin/checks/gpu_smi_failure.py)
        want = profile.gpu.nvlink_links_per_gpu
        status = parse_nvlink_status(output.stdout)
        findings: list[Finding] = []
        named = model_findings([(f"GPU {g.index}", g.name) for g in status.gpus], profile.gpu.model)
        if status.all_inactive and not any(g.links or g.no_links for g in status.gpus) and not named:
            # The profile's GPUs with every link down: the fabric (fabric manager, NVSwitch tray).
            # On another model the part is wrong: its GPUs are judged one by one below.
            return Result.judged(
                self.name,
                [
                    critical(
                        "all NVLinks are inactive (fabric manager down, or the NVSwitch tray): reboot, then check the tray",
                        Action.REBOOT,
                        output.stdout.strip()[-300:],
                    )
                ],
                {"active_links": 0},
            )
        if not status.gpus:
            raise ParseError("no GPU in nvidia-smi nvlink -s")
        if not any(g.links or g.all_inactive or g.no_links for g in status.gpus):
            # `nvidia-smi -L` and gpu-burn name GPUs in the same lines: without one link line
            # this is a GPU list, not a node whose every NVLink is down.
            raise ParseError("GPUs listed but no NVLink line: not the output of nvidia-smi nvlink -s")
        _refuse_a_cut_last_gpu(status, want)
        speeds = [link.speed_gbps for g in status.gpus for link in g.links if link.speed_gbps]
        typical = statistics.median(speeds) if speeds else None
        active = 0
        unread: list[str] = []  # GPUs whose links nvidia-smi could not list (MIG mode)
        for g in status.gpus:
            up = [link for link in g.links if not link.inactive and link.speed_gbps]
            active += len(up)
            subject = f"GPU {g.index}"
            if g.no_links == NO_LINKS_MIG:
                unread.append(subject)
                findings.append(
                    mig_finding(
                        subject, subject, f"GPU {g.index}: {g.name}: Nvlink queries are not supported"
                    )
                )
                continue
            if g.no_links == NO_LINKS_ABSENT:
                findings.append(
                    critical(
                        f"{subject} has no NVLink, the profile wants {want} per GPU: not the profile's part",
                        Action.RMA,
                        f"GPU {g.index}: {g.name}: Device does not have or support Nvlink",
                        subject,
                    )
                )
                continue
            if g.all_inactive or len(up) < want:
                # Slots numbered past the profile's links are idle, not down: NVML's bound is 36
                # indices, 18 of them a B200/B300's links, the rest rejected by its state query
                # (https://github.com/NVIDIA/TensorRT-LLM/pull/19210).
                down = sorted(
                    {
                        link.number
                        for link in g.links
                        if (link.inactive or not link.speed_gbps) and link.number < want
                    }
                )
                findings.append(
                    critical(
                        f"{subject}: {len(up)} of {want} NVLinks active"
                        + (f" (down: {', '.join(map(str, down))})" if down else ""),
                        Action.RMA,
                        f"GPU {g.index}: {g.name}",
                        subject,
                    )
                )
            slow = [link for link in up if typical and link.speed_gbps < 0.5 * typical]
            if slow:
                evidence = "; ".join(f"Link {link.number}: {link.speed_gbps} GB/s" for link in slow[:6])
                findings.append(
                    critical(
                        f"{subject}: {len(slow)} NVLink(s) degraded (typical {typical:g} GB/s)",
                        Action.RMA,
                        evidence,
                        subject,
                    )
                )
        # The output names each GPU: a model other than the profile's is judged here too (docs/burnin.md,
        # "A PASS covers what the output shows").
        findings += named
        # Another count than the profile's: the others' links were never seen (output cut between
        # two GPUs, or a GPU gone, which gpu_inventory judges), or this is not the node the
        # profile describes: not a pass.
        seen, count = len(status.gpus), profile.gpu.count
        incomplete = "; ".join(
            why
            for why in (
                f"nvidia-smi nvlink -s lists {seen} GPU(s), the profile has {count}" if seen != count else "",
                f"the NVLinks of {', '.join(unread)} cannot be read in MIG mode" if unread else "",
            )
            if why
        )
        return Result.judged(
            self.name, findings, {"active_links": active, "link_gbps": typical}, incomplete=incomplete
        )


def _refuse_a_cut_last_gpu(status: NvlinkStatus, want: int) -> None:
    """nvlink -s lists every link of a GPU, an inactive one too ('Link 3: <inactive>'): an output
    that ends in a GPU listing fewer links than the GPUs before it (or, alone, than the
    profile), or on a link line with no whole value, was cut there (docs/burnin.md, "A cut output")."""
    last = status.gpus[-1]
    if last.all_inactive or last.no_links:  # a whole sentence in place of its links
        return
    expected = max(len(g.links) for g in status.gpus[:-1]) if len(status.gpus) > 1 else want
    if len(last.links) < expected:
        raise ParseError(
            f"the output ends in GPU {last.index}'s links ({len(last.links)} of {expected}): it was cut"
        )
    if last.links and not (last.links[-1].speed_gbps or last.links[-1].inactive):
        raise ParseError(f"the output ends in GPU {last.index}'s link {last.links[-1].number}: it was cut")


@register
class FabricManager(Check):
    name = "fabric_manager"
    stages = ("preflight",)
    service = Service.ALWAYS
    judges = ("gpu.nvswitch", "gpu.multi_node_nvlink")
    description = "nvidia-fabricmanager running (NVSwitch systems: without it CUDA cannot start)"
    timeout_s = 20
    judge_any_rc = True  # systemctl is-active exits 3 for inactive: that is the answer

    def applies(self, profile: Profile) -> bool:
        # An NVL72 tray's fabric is managed from the switch trays; the tray runs IMEX instead
        # (https://docs.nvidia.com/multi-node-nvlink-systems/mnnvl-user-guide/mnnvl-user-guide.pdf).
        return profile.gpu.nvswitch and not profile.gpu.multi_node_nvlink

    def command(self, profile: Profile) -> str:
        return "systemctl is-active nvidia-fabricmanager"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        lines = output.stdout.strip().splitlines()
        state = lines[-1].strip() if lines else ""
        if state not in (
            "active",
            "inactive",
            "failed",
            "activating",
            "deactivating",
            "unknown",
            "reloading",
        ):
            raise ParseError(f"not a systemctl is-active answer: {state[:60]!r}")
        findings = []
        if state != "active":
            findings.append(
                critical(
                    f"nvidia-fabricmanager is {state}: CUDA fails with 'system not yet initialized' until it runs",
                    Action.RECONFIGURE,
                    f"systemctl is-active nvidia-fabricmanager: {state}",
                )
            )
        return Result.judged(self.name, findings, {"state": state})
