"""Host hardware error lines named and located (the kernel's wording, from the drivers each
pattern cites)."""

from __future__ import annotations

import pytest

from burnin.parsers.host_errors import IGNORED, HostError, classify_host_error


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x1 grain:32)",
            ("edac_ue", "CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (channel 0 slot 0)", 1),
        ),
        (
            "EDAC MC0: 4 CE error on CPU#0Channel#2_DIMM#0 (channel:2 slot:0 page:0x0)",
            ("edac_ce", "CPU#0Channel#2_DIMM#0 (channel 2 slot 0)", 4),
        ),
        (
            "EDAC MC0: 1 CE on mc#0csrow#2channel#1 (csrow:2 channel:1 page:0x9 offset:0x0 grain:64 syndrome:0x1)",
            ("edac_ce", "mc#0csrow#2channel#1 (csrow 2 channel 1)", 1),
        ),
        (
            "EDAC MC1: 1 UE memory read error on unknown memory (page:0x0 offset:0x0 grain:32)",
            ("edac_ue", None, 1),
        ),
        ("mce: [Hardware Error]: Machine check events logged", ("mce_logged", None, 1)),
        (
            "mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 1: b200000000000005",
            ("mce_uncorrected", "CPU 0 bank 1", 1),
        ),
        (
            "mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 5: 8c00004000010092",
            ("mce_corrected", "CPU 1 bank 5", 1),
        ),
        ("Kernel panic - not syncing: Fatal machine check", ("mce_uncorrected", None, 1)),
        # A kernel crash (https://www.kernel.org/doc/html/latest/admin-guide/bug-hunting.html):
        # the BUG line says what, the Oops line that it is one, the panic that it stopped the kernel.
        (
            "BUG: unable to handle kernel NULL pointer dereference at           (null)",
            ("kernel_crash", None, 1),
        ),
        ("BUG: unable to handle page fault for address: ffffffffc0a1b2c3", ("kernel_crash", None, 1)),
        ("Oops: 0002 [#1] SMP", ("kernel_crash", None, 1)),
        ("Kernel panic - not syncing: Fatal exception", ("kernel_crash", None, 1)),
        # The NVIDIA driver loaded but bound to no GPU (kernel-open/nvidia/nv.c's messages).
        ("NVRM: No NVIDIA graphics adapter probed!", ("nvidia_unbound", None, 1)),
        ("NVRM: The NVIDIA probe routine was not called for 3 device(s).", ("nvidia_unbound", "3 GPU(s)", 1)),
        ("NVRM: No NVIDIA GPU found.", ("nvidia_no_gpu", None, 1)),
        ("{1}[Hardware Error]: event severity: fatal", ("ghes_fatal", None, 1)),
        ("{2}[Hardware Error]:   DIMM location: CPU 2 DIMM 30", ("ghes_part", "CPU 2 DIMM 30", 1)),
        ("nvme nvme0: controller is down; will reset: CSTS=0x3, PCI_STATUS=0x10", ("nvme_down", "nvme0", 1)),
        ("nvme nvme1: I/O 263 QID 2 timeout, reset controller", ("nvme_timeout", "nvme1", 1)),
        (
            "mlx5_core 0000:08:00.0: print_health_info:429:(pid 912): assert_var[0] 0x08040700",
            ("mlx5_health_detail", None, 1),
        ),
        (
            "mlx5_core 0000:08:00.0: print_health_info:440:(pid 912): synd 0x1: firmware internal error",
            ("mlx5_health_detail", None, 1),
        ),
    ],
)
def test_a_host_error_is_named_with_its_part(message: str, expected) -> None:
    found = classify_host_error(message)
    assert found is not None
    assert (
        found.error,
        found.location if found.error != "mlx5_health_detail" else None,
        found.count,
    ) == expected


@pytest.mark.parametrize(
    "message",
    [
        "EDAC sbridge MC1: HANDLING MCE MEMORY ERROR",
        "mce: [Hardware Error]: TSC 0 ADDR ee30a0000",
        "{37}[Hardware Error]:   section_type: memory error",
        "BERT: Error records from previous boot:",
    ],
)
def test_a_reports_other_lines_are_ignored_not_unknown_errors(message: str) -> None:
    assert classify_host_error(message) == HostError(IGNORED)


@pytest.mark.parametrize(
    "message",
    [
        "EDAC MC: Ver: 3.0.0",
        "EDAC skx: ECC is disabled on imc 0",
        "nvme nvme0: pci function 0000:01:00.0",
        "nvme nvme0: 2/0/0 default/read/poll queues",
        "mlx5_core 0000:08:00.0: firmware version: 28.39.1002",
        "RAS: Correctable Errors collector initialized.",
        "sysrq: SysRq : Trigger a crash",
        "BUG: soft lockup - CPU#3 stuck for 22s!",
    ],
)
def test_healthy_lines_are_no_host_error(message: str) -> None:
    assert classify_host_error(message) is None


@pytest.mark.parametrize(
    "line, error, part",
    [
        (
            "amdgpu 0000:1C:00.0: {1}uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!",
            "amdgpu_ue",
            "0000:1c:00.0",
        ),
        (
            "amdgpu 0000:08:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=3",
            "amdgpu_ring_timeout",
            "0000:08:00.0",
        ),
        (
            "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, signaled seq=1, emitted seq=3",
            "amdgpu_ring_timeout",
            "ring gfx",
        ),
        ("amdgpu 0000:0a:00.0: amdgpu: GPU reset begin!", "amdgpu_reset", "0000:0a:00.0"),
        # A GPU the driver could not bring up (an MI300X's dmesg in
        # https://github.com/ROCm/legacy-rocm-build/issues/3856): amdgpu's own line, and the driver
        # core's for the failed probe, name the same GPU.
        ("amdgpu 0000:05:00.0: amdgpu: Fatal error during GPU init", "amdgpu_init_failed", "0000:05:00.0"),
        ("amdgpu: probe of 0000:05:00.0 failed with error -22", "amdgpu_init_failed", "0000:05:00.0"),
    ],
)
def test_amdgpu_ras_errors_ring_timeouts_and_resets(line: str, error: str, part: str) -> None:
    host = classify_host_error(line)
    assert host is not None and (host.error, host.location) == (error, part)


@pytest.mark.parametrize(
    "line",
    [
        "amdgpu 0000:e3:00.0: amdgpu: MEM ECC is active.",
        "amdgpu 0000:0a:00.0: amdgpu: GPU reset succeeded, trying to resume",
        "amdgpu 0000:0a:00.0: amdgpu: ring gfx_0.0.0 uses VM inv eng 0 on hub 0",
    ],
)
def test_amdgpu_lines_that_report_no_error(line: str) -> None:
    assert classify_host_error(line) is None
