"""NVIDIA Xid catalog (Ampere and newer), selected rows, as data.

Source: NVIDIA "Analyzing Xid catalog" (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html),
via the machine-generated mirror in leptonai/gpud components/accelerator/nvidia/xid/catalog_generated.go
@4a8de33a3f02e207f39e9023d67125592d599731 (generated 2025-10-29), as transcribed in
tests/fixtures/samples/xid_catalog_nvidia_selected.md. NVIDIA revises the catalog per driver branch:
re-verify against the live catalog before release.

``bucket`` is NVIDIA's immediate resolution: RESTART_APP (workload only), RESET_GPU (drain +
GPU reset or reboot), RESTART_BM (reboot the node: GPU lost from PCIe), CHECK_MECHANICALS,
IGNORE (usually sympathetic to another Xid), CONTACT_SUPPORT, or a multi-step WORKFLOW_*.
"""

from __future__ import annotations

from typing import NamedTuple


class XidInfo(NamedTuple):
    mnemonic: str
    bucket: str  # NVIDIA's immediate action
    description: str
    investigatory: str  # NVIDIA's investigatory action ('' when none)


XID_CATALOG: dict[int, XidInfo] = {
    8: XidInfo(
        "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "RESTART_APP", "GPU stopped processing", "CONTACT_SUPPORT"
    ),
    13: XidInfo(
        "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY",
        "RESTART_APP",
        "Graphics Engine Exception",
        "WORKFLOW_XID_13",
    ),
    31: XidInfo(
        "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "RESTART_APP", "GPU memory page fault", "WORKFLOW_XID_31"
    ),
    32: XidInfo(
        "ROBUST_CHANNEL_PBDMA_ERROR",
        "RESTART_APP",
        "Invalid or corrupted push buffer stream",
        "CHECK_APP/CUDA",
    ),
    38: XidInfo(
        "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "IGNORE", "Driver firmware error", "CONTACT_SUPPORT"
    ),
    43: XidInfo(
        "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "IGNORE", "GPU stopped processing", "CONTACT_SUPPORT"
    ),
    44: XidInfo(
        "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW",
        "IGNORE",
        "Graphics Engine fault during context switch",
        "CONTACT_SUPPORT",
    ),
    45: XidInfo(
        "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL",
        "WORKFLOW_XID_45",
        "Preemptive cleanup, due to previous errors",
        "Solo: RESTART_FM; not solo: IGNORE (follow the other Xid)",
    ),
    46: XidInfo("ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "RESET_GPU", "GPU stopped processing", "CONTACT_SUPPORT"),
    48: XidInfo("ROBUST_CHANNEL_GPU_ECC_DBE", "WORKFLOW_XID_48", "Double Bit ECC Error", "WORKFLOW_XID_48"),
    54: XidInfo(
        "SILENT_RUNNING_PWR_REDUCED_CLOCKING",
        "CHECK_MECHANICALS",
        "Auxiliary power is not connected to the GPU board",
        "CONTACT_SUPPORT",
    ),
    61: XidInfo("PMU_BREAKPOINT", "CONTACT_SUPPORT", "Unused", ""),
    62: XidInfo(
        "PMU_HALT_ERROR", "RESET_GPU", "Internal micro-controller halt (newer drivers)", "CONTACT_SUPPORT"
    ),
    63: XidInfo("INFOROM_DRAM_RETIREMENT_EVENT", "IGNORE", "GPU memory remapping event", "IGNORE"),
    64: XidInfo(
        "INFOROM_DRAM_RETIREMENT_FAILURE", "RESET_GPU", "GPU memory remapping failure", "CONTACT_SUPPORT"
    ),
    68: XidInfo("ROBUST_CHANNEL_NVDEC0_ERROR", "RESTART_APP", "NVDEC0 Exception", "CONTACT_SUPPORT"),
    69: XidInfo(
        "ROBUST_CHANNEL_GR_CLASS_ERROR", "RESTART_APP", "Graphics Engine class error", "CHECK_APP/CUDA"
    ),
    74: XidInfo("NVLINK_ERROR", "WORKFLOW_NVLINK_ERR", "NVLINK Error", "CONTACT_SUPPORT"),
    79: XidInfo(
        "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS",
        "RESTART_BM",
        "GPU has fallen off the bus",
        "CONTACT_SUPPORT",
    ),
    92: XidInfo("EXCESSIVE_SBE_INTERRUPTS", "IGNORE", "High single-bit ECC error rate", "CONTACT_SUPPORT"),
    94: XidInfo(
        "ROBUST_CHANNEL_CONTAINED_ERROR", "RESTART_APP", "Contained memory error", "IGNORE (sympathetic)"
    ),
    95: XidInfo(
        "ROBUST_CHANNEL_UNCONTAINED_ERROR", "RESET_GPU", "Uncontained memory error", "IGNORE (sympathetic)"
    ),
    109: XidInfo(
        "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "RESET_GPU", "Context Switch Timeout Error", "CONTACT_SUPPORT"
    ),
    110: XidInfo("SEC_FAULT_ERROR", "RESET_GPU", "Security Fault Error", "INVESTIGATE_SW"),
    119: XidInfo("GSP_RPC_TIMEOUT", "RESET_GPU", "GSP RPC Timeout", "INVESTIGATE_SW"),
    120: XidInfo("GSP_ERROR", "RESET_GPU", "GSP Error", "INVESTIGATE_SW"),
    121: XidInfo("C2C_ERROR", "IGNORE", "C2C Error", "CONTACT_SUPPORT"),
    136: XidInfo("ALI_TRAINING_FAIL", "RESET_GPU", "Link Training Failed", "INVESTIGATE_LINK_SI"),
    137: XidInfo("NVLINK_PRIV_ERR", "IGNORE", "NVLink Privilege Error", "XID_137_FLOW"),
    140: XidInfo("UNRECOVERABLE_ECC_ERROR_ESCAPE", "RESET_GPU", "ECC Unrecovered Error", "CONTACT_SUPPORT"),
    143: XidInfo("GPU_INIT_ERROR", "RESET_GPU", "GPU Initialization Error", "CONTACT_SUPPORT"),
    144: XidInfo("NVLINK_SAW_ERROR", "WORKFLOW_NVLINK5_ERR", "NVLINK: SAW Error", "WORKFLOW_NVLINK5_ERR"),
    145: XidInfo("NVLINK_RLW_ERROR", "WORKFLOW_NVLINK5_ERR", "NVLINK: RLW Error", "WORKFLOW_NVLINK5_ERR"),
    146: XidInfo("NVLINK_TLW_ERROR", "WORKFLOW_NVLINK5_ERR", "NVLINK: TLW Error", "WORKFLOW_NVLINK5_ERR"),
    147: XidInfo("NVLINK_TREX_ERROR", "WORKFLOW_NVLINK5_ERR", "NVLINK: TREX Error", "WORKFLOW_NVLINK5_ERR"),
    148: XidInfo(
        "NVLINK_NVLPW_CTRL_ERROR", "WORKFLOW_NVLINK5_ERR", "NVLINK: NVLPW_CTRL Error", "WORKFLOW_NVLINK5_ERR"
    ),
    149: XidInfo("NVLINK_NETIR_ERROR", "WORKFLOW_NVLINK5_ERR", "NVLINK: NETIR Error", "WORKFLOW_NVLINK5_ERR"),
    150: XidInfo("NVLINK_MSE_ERROR", "WORKFLOW_NVLINK5_ERR", "NVLINK: MSE Error", "WORKFLOW_NVLINK5_ERR"),
    154: XidInfo(
        "GPU_RECOVERY_ACTION_CHANGED",
        "XID_154",
        "GPU Recovery Action Changed",
        "N/A: informational only, about another Xid",
    ),
    155: XidInfo("NVLINK_SW_DEFINED_ERROR", "RESET_GPU", "NVLINK: SW Defined Error", "INVESTIGATE_SW_USER"),
    156: XidInfo("RESOURCE_RETIREMENT_EVENT", "RESET_GPU", "Resource Retirement Event", "IGNORE"),
    158: XidInfo("GPU_FATAL_TIMEOUT", "RESET_GPU", "GPU Fatal Timeout", "CONTACT_SUPPORT"),
}
