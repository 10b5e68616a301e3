"""Every check, by name. One module per domain; each check = command() + evaluate()."""

from __future__ import annotations

from burnin.checks import copy_bandwidth, gpu, host, host_perf, ib, inventory, kernel, nccl_local, pcie
from burnin.checks.base import Check

_CHECKS: list[Check] = [
    # preflight: cheap, read-only, seconds
    gpu.GpuInventory(),
    gpu.GpuEcc(),
    gpu.GpuMemoryHealth(),
    gpu.GpuVersions(),
    gpu.Nvlink(),
    gpu.FabricManager(),
    kernel.KernelLog(),
    ib.IbPorts(),
    host.OfedVersion(),
    host.DiskUsage(),
    host.ZfsPool(),
    host.ClockOffset(),
    host.ContainerRuntime(),
    host.BmcEventLog(),
    inventory.MemoryInventory(),
    inventory.CpuInventory(),
    inventory.NvmeHealthCheck(),
    # host: minutes of memory, disk and CPU load against the profile's host_perf floors
    host_perf.MemoryBandwidth(),
    host_perf.NvmePerf(),
    host_perf.CpuThrottle(),
    # gpu: minutes to hours of load
    gpu.DcgmDiag(),
    gpu.GpuStress(),
    nccl_local.NcclLocal(),
    copy_bandwidth.CopyBandwidthCheck(),
    # pcie: links at idle and under load
    pcie.PcieLinks(),
]

ALL_CHECKS: dict[str, Check] = {c.name: c for c in _CHECKS}
