"""Host hardware errors in a kernel message: memory (EDAC), CPU machine checks (MCE), firmware
error records (APEI/GHES, BERT), kernel crashes (Oops, panic), NVMe controllers, ConnectX health,
AMD GPUs' RAS errors, ring timeouts and resets (pure).

``classify_host_error`` names what a message reports as one of the keys of ``HOST_ERRORS``
(the check's catalog, burnin/checks/host_error_catalog.py), with the part it names. The
wording each pattern reads is the kernel's own:

- EDAC: ``edac_raw_mc_handle_error`` in drivers/edac/edac_mc.c prints
  ``EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (channel:0 slot:0 ...)``;
  older drivers ``EDAC MC0: 4 CE error on CPU#0Channel#2_DIMM#0 (channel:2 slot:0 ...)``
  (https://www.kernel.org/doc/html/latest/admin-guide/ras.html).
- MCE: arch/x86/kernel/cpu/mce/core.c, ``mce: [Hardware Error]: Machine check events logged``
  (corrected events queued for mcelog/rasdaemon) and ``CPU 1: Machine Check: 0 Bank 5:
  8c00004000010092`` (the bank's MCi_STATUS: bit 61 UC is an uncorrected error, Intel SDM
  vol. 3B 16.3.2.2; ``Machine Check Exception`` is the exception itself).
- APEI/GHES: drivers/firmware/efi/cper.c, ``{37}[Hardware Error]: event severity: corrected``
  (ACPI 6.5 18.3.2.7.1: recoverable, fatal, corrected, none) and the record's ``DIMM location:``
  or ``fru_text:`` line naming the part.
- NVMe: drivers/nvme/host/pci.c, ``nvme nvme0: I/O 263 QID 2 timeout, reset controller``,
  ``controller is down; will reset: CSTS=0x3``, ``Device not ready; aborting reset``,
  ``Removing after probe failure status: -19``.
- A kernel crash: ``BUG: unable to handle kernel NULL pointer dereference`` (or ``... page fault for
  address``, ``... kernel paging request``), ``Oops: 0002 [#1] SMP`` (arch/x86/kernel/dumpstack.c
  ``__die``) and ``Kernel panic - not syncing: ...`` (kernel/panic.c), as
  https://www.kernel.org/doc/html/latest/admin-guide/bug-hunting.html describes an Oops.
- The NVIDIA driver without its GPUs: kernel-open/nvidia/nv.c (NVIDIA/open-gpu-kernel-modules)
  prints ``NVRM: The NVIDIA probe routine was not called for 3 device(s).`` when another driver
  (nouveau, vfio-pci) owns them, ``No NVIDIA graphics adapter probed!`` (older drivers) when it
  is bound to none, and ``NVRM: No NVIDIA GPU found.`` when it finds none it supports.
- amdgpu (drivers/gpu/drm/amd/amdgpu in the kernel): amdgpu_ras.c, ``amdgpu 0000:1c:00.0:
  uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!``; amdgpu_job.c
  ``amdgpu_job_timedout``, ``ring gfx_0.0.0 timeout, signaled seq=..., emitted seq=...`` (older
  kernels behind ``[drm:amdgpu_job_timedout [amdgpu]] *ERROR*``); amdgpu_device.c, ``GPU reset begin!``;
  amdgpu_kms.c, ``Fatal error during GPU init`` when amdgpu_device_init fails, and the driver
  core's ``amdgpu: probe of 0000:05:00.0 failed with error -22`` (drivers/base/dd.c) after it.
- mlx5: drivers/net/ethernet/mellanox/mlx5/core/health.c, ``print_health_info``: ``Health issue
  observed, firmware internal error, severity(3) ERROR:``, ``assert_var[0] 0x...``, ``synd 0x1:
  firmware internal error``, ``ext_synd 0x035e``; ``poll_health``: ``device's health compromised
  - reached miss count``.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class HostError(NamedTuple):
    error: str  # a key of burnin/checks/host_error_catalog.py HOST_ERRORS, or IGNORED
    location: str | None = None  # the part: a DIMM label, 'csrow 2 channel 1', 'CPU 1 bank 5'
    count: int = 1  # errors this line reports ('EDAC MC0: 4 CE ...')
    record: str | None = None  # a GHES record's number '{37}', to join its lines
    detail: str = ""


IGNORED = "ignored"  # a line of a report whose verdict another line carries (MCE TSC, GHES status)

_EDAC = re.compile(
    r"\bEDAC (?:\S+ )?MC\d+: (?:(?P<n>\d+) )?(?P<kind>CE|UE)\b(?P<what>[^(]*?)"
    r"(?: on (?P<loc>[^(]+?))?\s*(?:\((?P<detail>[^)]*)\))?\s*$"
)
_EDAC_NOISE = re.compile(
    r"\bEDAC \S+ MC\d+: (?:HANDLING MCE|CPU \d+: Machine Check Event|TSC|ADDR|MISC|PROCESSOR)"
)
_MCE_BANK = re.compile(
    r"CPU (?P<cpu>\d+): Machine Check(?P<exc> Exception)?: \w+ Bank (?P<bank>\d+): (?P<status>[0-9a-fA-F]{16})"
)
_GHES_SEVERITY = re.compile(r"^(?P<rec>\{\d+\})?\[Hardware Error\]: event severity: (?P<sev>\w+)")
_GHES_PART = re.compile(
    r"^(?P<rec>\{\d+\})?\[Hardware Error\]:\s+(?:DIMM location|fru_text): (?P<part>.+?)\s*$"
)
_NVME = re.compile(r"^nvme (?P<dev>nvme\d+): (?P<rest>.*)$")
_AMDGPU = re.compile(
    r"^amdgpu (?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): (?:amdgpu: )?(?P<rest>.*)$"
)
_AMDGPU_UE = re.compile(r"^(?:\{\d+\})?uncorrectable hardware error\((?P<event>\w+)\) detected")
_AMDGPU_RING = re.compile(r"\bring (?P<ring>\S+) timeout, signaled seq=\d+, emitted seq=\d+")
_AMDGPU_PROBE = re.compile(
    r"^amdgpu: probe of (?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) failed"
)
_MLX5 = re.compile(r"^mlx5_core (?P<bdf>[0-9a-fA-F:.]+): (?P<rest>.*)$")
_MLX5_SYND = re.compile(r"\bsynd 0x(?P<synd>[0-9a-fA-F]+)\b")
# The lines of a kernel crash that say it is one: what the CPU could not do, the Oops itself, and a
# panic (other than the machine check's, above).
_CRASH = re.compile(
    r"^(?:BUG: unable to handle (?:kernel NULL pointer dereference|page fault|kernel paging request)"
    r"|Oops: [0-9a-fx]+ \[#\d+\]|Oops: general protection fault|general protection fault(?:, probably for)?:?"
    r"|Kernel panic - not syncing: )"
)


def _edac(m: re.Match[str]) -> HostError:
    loc = (m["loc"] or "").strip()
    if loc in ("", "unknown memory", "any memory"):
        loc = ""
    detail = m["detail"] or ""
    # The slot the label sits in, from the detail: 'channel:2 slot:0' or 'csrow:2 channel:1'.
    slot = " ".join(f"{k} {v}" for k, v in re.findall(r"\b(csrow|channel|slot):(\d+)", detail))
    where = f"{loc} ({slot})" if loc and slot else (loc or slot or None)
    kind = "edac_ue" if m["kind"] == "UE" else "edac_ce"
    return HostError(kind, where, int(m["n"] or 1), detail=f"{m['kind']}{m['what']}".strip())


def _ghes(message: str) -> HostError | None:
    if m := _GHES_SEVERITY.match(message):
        sev = m["sev"].lower()
        key = {"fatal": "ghes_fatal", "recoverable": "ghes_recoverable", "corrected": "ghes_corrected"}
        return HostError(key.get(sev, IGNORED), record=m["rec"], detail=f"event severity: {sev}")
    if m := _GHES_PART.match(message):
        return HostError("ghes_part", m["part"], record=m["rec"])
    return HostError(IGNORED)


def _mce(message: str) -> HostError:
    if "Machine check events logged" in message:
        return HostError("mce_logged")
    if m := _MCE_BANK.search(message):
        uncorrected = bool(m["exc"]) or bool(int(m["status"], 16) >> 61 & 1)
        where = f"CPU {m['cpu']} bank {m['bank']}"
        return HostError("mce_uncorrected" if uncorrected else "mce_corrected", where, detail=m["status"])
    if "Processor context corrupt" in message or "Fatal machine check" in message:
        return HostError("mce_uncorrected", detail=message)
    return HostError(IGNORED)


def _nvme(m: re.Match[str]) -> HostError | None:
    rest = m["rest"]
    if "controller is down; will reset" in rest or "Device not ready; aborting reset" in rest:
        return HostError("nvme_down", m["dev"], detail=rest)
    if "Removing after probe failure" in rest or "Disabling device after reset failure" in rest:
        return HostError("nvme_down", m["dev"], detail=rest)
    if re.search(r"\btimeout, (?:reset controller|aborting)\b", rest):
        return HostError("nvme_timeout", m["dev"], detail=rest)
    return None


def _mlx5(m: re.Match[str]) -> HostError | None:
    rest = m["rest"]
    if "Health issue observed" in rest or "health compromised" in rest:
        return HostError("mlx5_health", m["bdf"], detail=rest)
    if s := _MLX5_SYND.search(rest):
        return HostError("mlx5_health_detail", m["bdf"], detail=f"synd 0x{s['synd']}")
    # The dump's other lines ('assert_var[0] 0x...', 'severity 3 (ERROR)', 'fw_ver ...').
    if "print_health_info" in rest or re.search(r"\b(?:assert_var\[\d+\]|(?:ext_synd|fw_syndrome)\b)", rest):
        return HostError("mlx5_health_detail", m["bdf"], detail=rest)
    return None


def _amdgpu(message: str) -> HostError | None:
    m = _AMDGPU.match(message)
    rest, bdf = (m["rest"], m["bdf"].lower()) if m else (message, None)
    if ue := _AMDGPU_UE.match(rest):
        return HostError("amdgpu_ue", bdf, detail=ue["event"])
    if ring := _AMDGPU_RING.search(rest):
        # The older line names no device: the ring names the part.
        return HostError("amdgpu_ring_timeout", bdf or f"ring {ring['ring']}", detail=f"ring {ring['ring']}")
    if rest.startswith("GPU reset begin!"):
        return HostError("amdgpu_reset", bdf, detail=rest)
    if rest.startswith("Fatal error during GPU init"):
        return HostError("amdgpu_init_failed", bdf, detail=rest)
    if probe := _AMDGPU_PROBE.match(message):
        return HostError("amdgpu_init_failed", probe["bdf"].lower(), detail=message)
    return None


_UNPROBED = re.compile(r"^NVRM: The NVIDIA probe routine was not called for (?P<n>\d+) device\(s\)")


def _nvrm(message: str) -> HostError | None:
    if m := _UNPROBED.match(message):
        return HostError("nvidia_unbound", f"{m['n']} GPU(s)", detail=message)
    if message.startswith("NVRM: No NVIDIA graphics adapter probed"):
        return HostError("nvidia_unbound", detail=message)
    if message.startswith("NVRM: No NVIDIA GPU found"):
        return HostError("nvidia_no_gpu", detail=message)
    return None


def classify_host_error(message: str) -> HostError | None:
    """What host hardware error ``message`` (prefixes removed) reports; None for none."""
    if "EDAC" in message:
        if m := _EDAC.search(message):
            return _edac(m)
        if _EDAC_NOISE.search(message):
            return HostError(IGNORED)
        return None
    if "amdgpu" in message and (amd := _amdgpu(message)) is not None:
        return amd
    if "[Hardware Error]" in message:
        return _mce(message) if message.startswith("mce:") else _ghes(message)
    if message.startswith("BERT: Error records from previous boot"):  # the records follow
        return HostError(IGNORED)
    if "Fatal machine check" in message:
        return HostError("mce_uncorrected", detail=message)
    if _CRASH.match(message):
        return HostError("kernel_crash", detail=message)
    if message.startswith("NVRM: "):
        return _nvrm(message)
    if message.startswith("nvme ") and (m := _NVME.match(message)):
        return _nvme(m)
    if message.startswith("mlx5_core ") and (m := _MLX5.match(message)):
        return _mlx5(m)
    return None
