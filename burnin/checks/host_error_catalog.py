"""What each host hardware error in the kernel log means and needs, with its public source, as
the Xid rules are for GPUs (burnin/checks/kernel.py). The keys are the errors
burnin.parsers.host_errors names.

A memory error names the DIMM to replace when the line says which (its label, or the
csrow/channel/slot); corrected memory errors warn until one DIMM reaches ``CE_LIMIT``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from burnin.parsers.kernel_log import HostErrorEvent
from burnin.result import Action, Finding, Severity

_RAS = "https://www.kernel.org/doc/html/latest/admin-guide/ras.html"
_MCELOG = "https://mcelog.org/config.html"
_MCE = "https://www.kernel.org/doc/html/latest/arch/x86/x86_64/machinecheck.html"
_ACPI = "https://uefi.org/specs/ACPI/6.5/18_Platform_Error_Interfaces.html"
_NVME = "https://github.com/torvalds/linux/blob/master/drivers/nvme/host/pci.c"
_MLX5 = "https://docs.nvidia.com/networking/display/MLNXOFEDv495100/Reset+Flow"
_OOPS = "https://www.kernel.org/doc/html/latest/admin-guide/bug-hunting.html"
_AMDGPU_RAS = "https://docs.kernel.org/gpu/amdgpu/ras.html"
_AMDGPU_JOB = "https://github.com/torvalds/linux/blob/master/drivers/gpu/drm/amd/amdgpu/amdgpu_job.c"
_AMDGPU_RESET = "https://github.com/torvalds/linux/blob/master/drivers/gpu/drm/amd/amdgpu/amdgpu_device.c"
_AMDGPU_KMS = "https://github.com/torvalds/linux/blob/master/drivers/gpu/drm/amd/amdgpu/amdgpu_kms.c"
_NV_PROBE = "https://github.com/NVIDIA/open-gpu-kernel-modules/blob/main/kernel-open/nvidia/nv.c"


@dataclass(frozen=True)
class HostErrorRule:
    what: str  # how a finding names it
    severity: Severity
    action: Action
    advice: str
    source: str  # the public page that says what it means


# Corrected errors on one DIMM that make it a replacement: mcelog's default per-DIMM trigger,
# 'ce-error-threshold = 10 / 24h' ("reasonable for server quality DIMMs", mcelog.org/config.html).
CE_LIMIT = 10

HOST_ERRORS: dict[str, HostErrorRule] = {
    "edac_ue": HostErrorRule(
        "uncorrected memory error",
        Severity.CRITICAL,
        Action.RMA,
        "replace the DIMM (reseat it first if it was just serviced)",
        _RAS,  # "Uncorrected Error (UE)": the data is lost
    ),
    "edac_ce": HostErrorRule(
        "corrected memory error(s)",
        Severity.WARNING,
        Action.MONITOR,
        f"ECC corrected them; {CE_LIMIT} on one DIMM make it a replacement",
        _RAS,
    ),
    "edac_ce_limit": HostErrorRule(
        "corrected memory errors past the limit",
        Severity.CRITICAL,
        Action.RMA,
        f"{CE_LIMIT} or more on one DIMM: replace it",
        _MCELOG,
    ),
    "mce_logged": HostErrorRule(
        "machine check events logged",
        Severity.WARNING,
        Action.MONITOR,
        "corrected CPU/memory errors: decode them with rasdaemon (ras-mc-ctl --errors) or mcelog",
        _MCE,
    ),
    "mce_corrected": HostErrorRule(
        "corrected machine check",
        Severity.WARNING,
        Action.MONITOR,
        "decode it with rasdaemon or mcelog",
        _MCE,
    ),
    "mce_uncorrected": HostErrorRule(
        "uncorrected machine check",
        Severity.CRITICAL,
        Action.REBOOT,
        "decode the bank with rasdaemon or mcelog and replace the CPU or DIMM it names",
        _MCE,
    ),
    "ghes_fatal": HostErrorRule(
        "fatal hardware error record (APEI)",
        Severity.CRITICAL,
        Action.REBOOT,
        "the firmware reported a fatal error: replace the part the record names",
        _ACPI,  # Error Severity 1: fatal
    ),
    "ghes_recoverable": HostErrorRule(
        "uncorrected (recoverable) hardware error record (APEI)",
        Severity.CRITICAL,
        Action.REBOOT,
        "uncorrected, though the OS survived it: replace the part the record names",
        _ACPI,  # Error Severity 0: recoverable
    ),
    "ghes_corrected": HostErrorRule(
        "corrected hardware error record (APEI)", Severity.WARNING, Action.MONITOR, "watch for repeats", _ACPI
    ),
    "kernel_crash": HostErrorRule(
        "kernel crash (Oops/panic)",
        Severity.CRITICAL,
        Action.REBOOT,
        "the kernel is no longer trustworthy after an Oops: reboot; the same crash again, or crashes in "
        "unrelated code, point at the hardware (memory, CPU): run the host stage",
        _OOPS,
    ),
    "nvidia_unbound": HostErrorRule(
        "the NVIDIA driver is not bound",
        Severity.CRITICAL,
        Action.RECONFIGURE,
        "another driver owns them (nouveau, or vfio-pci): blacklist it (or clear the GPUs' driver_override) "
        "and reload the nvidia module, as the driver's own message says",
        _NV_PROBE,
    ),
    "nvidia_no_gpu": HostErrorRule(
        "no GPU the NVIDIA driver supports",
        Severity.CRITICAL,
        Action.REBOOT,
        "reboot; if none comes back, a GPU lspci does not list is reseated, one it lists that this driver "
        "branch does not support needs another driver",
        _NV_PROBE,
    ),
    "nvme_timeout": HostErrorRule(
        "NVMe I/O timeout (controller reset or command aborted)",
        Severity.WARNING,
        Action.MONITOR,
        "the driver recovered it; repeats mean a failing drive or slot",
        _NVME,
    ),
    "nvme_down": HostErrorRule(
        "NVMe controller down or removed",
        Severity.CRITICAL,
        Action.RESEAT,
        "reseat the drive; RMA it if it recurs",
        _NVME,
    ),
    "mlx5_health": HostErrorRule(
        "ConnectX firmware health error",
        Severity.CRITICAL,
        Action.REBOOT,
        "the driver's reset flow restarts the HCA; reboot, update its firmware, RMA it if it recurs",
        _MLX5,
    ),
    # AMD GPUs (amdgpu): the driver recovers a RAS uncorrectable error and a hung ring by resetting
    # the GPU (AMD on MI300X: "GPU recovery resets triggered by uncorrectable errors",
    # https://github.com/ROCm/legacy-rocm-build/issues/3766).
    "amdgpu_ue": HostErrorRule(
        "AMD GPU uncorrectable hardware error (RAS)",
        Severity.CRITICAL,
        Action.RESET_GPU,
        "the data is lost and the driver resets the GPU: amd-smi metric --ecc names the block; an "
        "uncorrectable error again, or one in UMC (HBM), is an RMA",
        _AMDGPU_RAS,
    ),
    "amdgpu_ring_timeout": HostErrorRule(
        "AMD GPU ring timeout (a job hung)",
        Severity.CRITICAL,
        Action.RESET_GPU,
        "the driver resets the GPU; a hang again under the burn-in load points at the GPU",
        _AMDGPU_JOB,
    ),
    # A GPU amdgpu could not bring up is missing from the node. AMD's first step when the hardware
    # errs at init: reseat it (https://github.com/ROCm/legacy-rocm-build/issues/1552, an MI50's
    # 'Fatal error during GPU init').
    "amdgpu_init_failed": HostErrorRule(
        "AMD GPU failed to initialise (amdgpu probe failed)",
        Severity.CRITICAL,
        Action.RESEAT,
        "the driver gave up on the GPU, the node runs without it: reseat it; the same error after a reseat "
        "points at its firmware (IFWI), then an RMA",
        _AMDGPU_KMS,
    ),
    "amdgpu_reset": HostErrorRule(
        "AMD GPU reset",
        Severity.WARNING,
        Action.MONITOR,
        "the driver reset the GPU: the lines before it say why (a RAS error, a ring timeout)",
        _AMDGPU_RESET,
    ),
}
# The lines a report's verdict line brings along: they say where, not what.
PARTS = {"ghes_part": "the part an APEI record names", "mlx5_health_detail": "an HCA health dump's line"}
# ConnectX health syndromes that are the hardware's own failure (health.c hsynd_str: 0x8
# unrecoverable hardware error, 0xb HW fatal error, 0xf ECC error detected): RMA, not a reboot.
MLX5_HARDWARE_SYNDROMES = frozenset({0x8, 0xB, 0xF})


def host_error_findings(events: list[HostErrorEvent]) -> list[Finding]:
    """One finding per error and part, in the order first seen: a DIMM's corrected errors summed
    (its count against CE_LIMIT), an APEI record with the part its own lines name, an HCA's
    health dump as one finding whatever its number of lines."""
    drafts: dict[tuple, list] = {}  # key -> [rule key, part, count, evidence, syndromes]
    records: dict[str | None, tuple] = {}  # GHES record -> the key of its severity's draft
    for e in events:
        if e.error == "ghes_part":
            if (key := records.get(e.record)) is not None and drafts[key][1] is None:
                drafts[key][1] = e.location
            continue
        error = "mlx5_health" if e.error == "mlx5_health_detail" else e.error
        if error not in HOST_ERRORS:
            continue
        part = e.device if error.startswith(("mlx5", "nvme")) else e.location
        part = (e.device or part) if error.startswith("amdgpu") else part
        if error in _NODE_WIDE:  # one report however many lines: the part a line names is kept
            key: tuple = (error,)
        else:
            key = (error, part, e.record) if error.startswith("ghes") else (error, part)
        draft = drafts.setdefault(key, [error, part, 0, e.raw, set()])
        draft[1] = draft[1] or part
        if e.error != "mlx5_health_detail" or draft[2] == 0:
            draft[2] += e.count
        if m := re.match(r"synd 0x([0-9a-fA-F]+)$", e.detail):
            draft[4].add(int(m.group(1), 16))
        if error.startswith("ghes"):
            records[e.record] = key
    return [_finding(*draft) for draft in drafts.values()]


# Errors one report prints in several lines: an HCA's health dump, a crash's BUG, Oops and panic
# lines, the NVIDIA driver's lines on the GPUs it did not get.
_ONE_REPORT = frozenset({"mlx5_health", "kernel_crash", "nvidia_unbound", "nvidia_no_gpu"})
_NODE_WIDE = frozenset({"kernel_crash", "nvidia_unbound", "nvidia_no_gpu"})  # about the node, not a part


def _finding(error: str, part: str | None, count: int, evidence: str, syndromes: set[int]) -> Finding:
    if error == "edac_ce" and count >= CE_LIMIT:
        error = "edac_ce_limit"
    rule = HOST_ERRORS[error]
    action = rule.action
    advice = rule.advice
    if error == "mlx5_health" and syndromes & MLX5_HARDWARE_SYNDROMES:
        action, advice = Action.RMA, "a hardware syndrome: RMA the HCA"
    if part and error.startswith(("edac", "ghes")):
        advice = advice.replace("the DIMM", part).replace("the part the record names", part)
        advice = advice.replace("replace it", f"replace {part}")
    elif error.startswith("edac") and action is Action.RMA and not part:
        advice += "; the line names no DIMM: find it with ras-mc-ctl --errors"
    where = f" on {part}" if part else ""
    times = f" (x{count})" if count > 1 and error not in _ONE_REPORT else ""
    subject = "" if error in _NODE_WIDE else part or ""
    return Finding(f"{rule.what}{where}{times}: {advice}", rule.severity, action, evidence.strip(), subject)
