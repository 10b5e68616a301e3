"""Host hardware errors in the kernel log judged as their catalog says
(burnin/checks/host_error_catalog.py), on real lines from public reports (each case names its
source)."""

from __future__ import annotations

import pytest

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from tests.unit.burnin.checks.test_samples import PROFILE

# andikleen/mcelog#74 (EDAC decoding of an injected error, skx_edac)
EDAC_UE = (
    "[ 2071.146744] EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (channel:0 slot:0 "
    "page:0xe16677 offset:0x0 grain:32 -  err_code:0000:009f socket:0 imc:0 rank:0 bg:0 ba:3 row:dad3 col:3c0)\n"
)
# radiasoft/devops#134 (sb_edac scrubbing error; 'Feb 23 03:28:16 kernel:' as pasted)
EDAC_CE = (
    "Feb 23 03:28:16 kernel: mce: [Hardware Error]: Machine check events logged\n"
    "Feb 23 03:28:16 kernel: EDAC sbridge MC1: HANDLING MCE MEMORY ERROR\n"
    "Feb 23 03:28:16 kernel: EDAC sbridge MC1: CPU 1: Machine Check Event: 0 Bank 11: 8c00004f000800c2\n"
    "Feb 23 03:28:16 kernel: EDAC MC1: 1 CE memory scrubbing error on CPU_SrcID#1_Ha#0_Chan#0_DIMM#0 "
    "(channel:0 slot:0 page:0xee30a0 offset:0x0 grain:32 syndrome:0x0 -  area:DRAM err_code:0008:00c2 "
    "socket:1 ha:0 channel_mask:1 rank:0)\n"
)
# openstreetmap/operations#300 (i7core_edac: 4+2+6+1 corrected errors on one DIMM)
EDAC_CE_MANY = "".join(
    f"May  7 06:45:{12 + i} errol kernel: [21584690.5{i}] EDAC MC0: {n} CE error on CPU#0Channel#2_DIMM#0 "
    "(channel:2 slot:0 page:0x0 offset:0x0 grain:8 syndrome:0x0)\n"
    for i, n in enumerate((4, 2, 6, 1))
)
# kubernetes/node-problem-detector#846 (CPER records as the kernel prints them)
GHES_CORRECTED = (
    "kernel: {37}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 162\n"
    "kernel: {37}[Hardware Error]: It has been corrected by h/w and requires no further action\n"
    "kernel: {37}[Hardware Error]: event severity: corrected\n"
    "kernel: {37}[Hardware Error]:  Error 0, type: corrected\n"
    "kernel: {37}[Hardware Error]:   section_type: memory error\n"
    "kernel: {37}[Hardware Error]:   error_type: 2, single-bit ECC\n"
    "kernel: {37}[Hardware Error]:   DIMM location: CPU 2 DIMM 30\n"
)
GHES_RECOVERABLE = (
    "kernel: {3}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 4\n"
    "kernel: {3}[Hardware Error]: event severity: recoverable\n"
    "kernel: {3}[Hardware Error]:  Error 0, type: recoverable\n"
    "kernel: {3}[Hardware Error]:  fru_text: B1\n"
    "kernel: {3}[Hardware Error]:   section_type: memory error\n"
)
# yangxiaohua2009/custom-kernel#6 (BERT: a fatal error record from the previous boot)
BERT_FATAL = (
    "[    2.345569] BERT: Error records from previous boot:\n"
    "[    2.345575] [Hardware Error]: event severity: fatal\n"
    "[    2.345577] [Hardware Error]:  Error 0, type: fatal\n"
    "[    2.345580] [Hardware Error]:   section_type: Firmware Error Record Reference\n"
)
# linux-nvme/nvme-cli#151
NVME_REMOVED = (
    "[11457.533097] nvme nvme2: I/O 0 QID 0 timeout, reset controller\n"
    "[11483.115530] nvme nvme2: Device not ready; aborting reset\n"
    "[11508.697977] nvme nvme2: Removing after probe failure status: -19\n"
)
# oxidecomputer/propolis#1156 (a timeout the driver recovered)
NVME_TIMEOUT = (
    "[   89.895139] nvme nvme0: I/O 900 (I/O Cmd) QID 2 timeout, aborting\n"
    "[   89.896745] nvme nvme0: Abort status: 0x0\n"
    "[  120.103133] nvme nvme0: I/O 900 QID 2 timeout, reset controller\n"
    "[  120.151848] nvme nvme0: 2/0/0 default/read/poll queues\n"
)
# netdev, 'mlx5_vdpa' crash report: the HCA's firmware health dump
MLX5_HEALTH = (
    "[  445.937186] mlx5_core 0000:0d:00.0: poll_health:801:(pid 0): device's health compromised - reached miss count\n"
    "[  445.937212] mlx5_core 0000:0d:00.0: print_health_info:431:(pid 0): Health issue observed, firmware internal error, severity(3) ERROR:\n"
    "[  445.937221] mlx5_core 0000:0d:00.0: print_health_info:435:(pid 0): assert_var[0] 0x0521945b\n"
    "[  445.937228] mlx5_core 0000:0d:00.0: print_health_info:435:(pid 0): assert_var[1] 0x00000000\n"
)
MCE_UNCORRECTED = (  # the status of linux-edac's mce-inject examples: UC (bit 61) set
    "[  100.000000] mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 5: be00000000800400\n"
)


def judged(text: str):
    return judge(ALL_CHECKS["kernel_log"], CommandOutput(stdout=text), PROFILE)


def summary(text: str):
    result = judged(text)
    return result.verdict.value, sorted((f.severity.value, f.action.value) for f in result.findings)


def test_an_edac_uncorrected_error_fails_and_names_the_dimm() -> None:
    result = judged(EDAC_UE)
    assert result.verdict.value == "FAIL"
    (finding,) = result.findings
    assert (finding.severity.value, finding.action.value) == ("critical", "RMA")
    assert finding.subject.startswith("CPU_SrcID#0_MC#0_Chan#0_DIMM#0")
    assert "replace CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (channel 0 slot 0)" in finding.message


def test_an_edac_corrected_error_warns_on_its_dimm_once() -> None:
    result = judged(EDAC_CE)
    assert result.verdict.value == "WARN"
    assert sorted(f.message.split(":")[0] for f in result.findings) == [
        "corrected memory error(s) on CPU_SrcID#1_Ha#0_Chan#0_DIMM#0 (channel 0 slot 0)",
        "machine check events logged",
    ]


def test_corrected_errors_past_the_limit_on_one_dimm_fail() -> None:
    result = judged(EDAC_CE_MANY)  # 13 corrected errors on CPU#0Channel#2_DIMM#0
    assert summary(EDAC_CE_MANY) == ("FAIL", [("critical", "RMA")])
    assert "(x13)" in result.findings[0].message
    assert summary(EDAC_CE_MANY.split("\n", 2)[-1]) == ("WARN", [("warning", "MONITOR")])  # 7 of them


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GHES_CORRECTED, ("WARN", [("warning", "MONITOR")])),
        (GHES_RECOVERABLE, ("FAIL", [("critical", "REBOOT")])),
        (BERT_FATAL, ("FAIL", [("critical", "REBOOT")])),
        (NVME_REMOVED, ("FAIL", [("critical", "RESEAT"), ("warning", "MONITOR")])),
        (NVME_TIMEOUT, ("WARN", [("warning", "MONITOR")])),
        (MLX5_HEALTH, ("FAIL", [("critical", "REBOOT")])),
        (MCE_UNCORRECTED, ("FAIL", [("critical", "REBOOT")])),
        (MCE_UNCORRECTED.replace("be00", "9c00"), ("WARN", [("warning", "MONITOR")])),
    ],
    ids=[
        "ghes_corrected",
        "ghes_recoverable",
        "bert_fatal",
        "nvme_removed",
        "nvme_timeout",
        "mlx5",
        "mce_uc",
        "mce_ce",
    ],
)
def test_each_host_error_has_its_severity_and_action(text: str, expected) -> None:
    assert summary(text) == expected


def test_an_apei_record_names_the_part_its_own_lines_give() -> None:
    (finding,) = judged(GHES_RECOVERABLE).findings
    assert finding.subject == "B1" and "replace B1" in finding.message
    (finding,) = judged(GHES_CORRECTED).findings
    assert finding.subject == "CPU 2 DIMM 30"


def test_an_hca_hardware_syndrome_is_an_rma() -> None:
    text = "[  1.0] mlx5_core 0000:0d:00.0: print_health_info:440:(pid 0): synd 0x8: unrecoverable hardware error\n"
    assert summary(text) == ("FAIL", [("critical", "RMA")])
    firmware = text.replace("synd 0x8: unrecoverable hardware error", "synd 0x1: firmware internal error")
    assert summary(firmware) == ("FAIL", [("critical", "REBOOT")])


# leptonai/gpud pkg/pstore/testdata/dmesg-erst.txt (a crash kept by pstore across the reboot)
OOPS = (
    "<6>[  201.650687] sysrq: SysRq : Trigger a crash\n"
    "<1>[  201.654822] BUG: unable to handle kernel NULL pointer dereference at           (null)\n"
    "<1>[  201.662670] IP: [<ffffffffbd3d1956>] sysrq_handle_crash+0x16/0x20\n"
    "<4>[  201.670809] Oops: 0002 [#1] SMP\n"
)


def test_a_kernel_crash_is_a_node_to_reboot_once_whatever_its_number_of_lines() -> None:
    result = judged(OOPS)
    crashes = [f for f in result.findings if f.severity.value == "critical"]
    assert [(f.action.value, "NULL pointer" in f.evidence) for f in crashes] == [("REBOOT", True)]
    assert "(x" not in crashes[0].message


# mattshma/bigdata#133: the NVIDIA driver loaded while nouveau held the GPUs (its continuation
# lines have no stamp)
UNBOUND = (
    "[188497.595099] NVRM: No NVIDIA graphics adapter probed!\n"
    "[188549.976351] NVRM: The NVIDIA probe routine was not called for 3 device(s).\n"
    "[188549.977053] NVRM: This can occur when a driver such as: \n"
    "NVRM: nouveau, rivafb, nvidiafb or rivatv \n"
    "NVRM: was loaded and obtained ownership of the NVIDIA device(s).\n"
)


def test_gpus_the_nvidia_driver_was_not_bound_to_are_a_configuration_to_fix() -> None:
    assert summary(UNBOUND) == ("FAIL", [("critical", "RECONFIGURE")])
    (finding,) = judged(UNBOUND).findings
    assert "3 GPU(s)" in finding.message and "nouveau" in finding.message
