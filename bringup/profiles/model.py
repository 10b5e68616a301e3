"""The hardware profile as a typed model: every field's type, limits, default and source.

A profile (``inventories/profiles/<name>.yml``) says what a node of one kind must have and the
thresholds it is judged by (docs/design.md, idea 5). This module is the one place that says which keys
a profile has: checks read ``profile.ib.hca_count``, never a dotted string, and a default lives
here, in the field, with the source of its figure in the field's description (docs/reference.md holds
the public sources). ``bringup/schemas/profile.schema.json`` is this model's JSON Schema, shipped
for editors; ``python -m bringup.profiles.load --schema`` writes it.

Types are strict where a typo would otherwise pass as a number: ``count: true`` or
``rate_gbps: "400"`` are errors, not 1 and 400. Unknown keys are errors too, so a misspelt
threshold cannot silently fall back to its default. Loading, the file/field problem list and
``--set`` overrides are in ``bringup/profiles/load.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
)

from bringup.profiles.fields import (
    Bool,
    CaTypes,
    Fraction,
    NonNegativeInt,
    NonNegativeNumber,
    Percent,
    PositiveInt,
    PositiveNumber,
    Section,
    Str,
    StrList,
    regexes,
    strict,
    strict_list,
)

BOOT_MODES = ("uefi", "legacy")
LINK_LAYERS = ("InfiniBand", "Ethernet")
GPU_VENDORS = ("nvidia", "amd")  # which tools read the GPUs: nvidia-smi/DCGM/NCCL, or amd-smi
# The tests a `dcgmi diag -r 1..4` suite runs, by their DCGM 4.x names (burnin/parsers/dcgmi.py
# LEVEL_TESTS says which level runs which, and where that comes from).
DCGM_TESTS = (
    "software",
    "pcie",
    "memory",
    "diagnostic",
    "targeted_stress",
    "targeted_power",
    "memory_bandwidth",
    "memtest",
    "pulse_test",
)


class Gpu(Section):
    vendor: Annotated[Literal[GPU_VENDORS], strict(str, choices=GPU_VENDORS)] = Field(
        default="nvidia",
        description="Whose GPUs: the checks that read one vendor's tools run only on its profiles "
        "(burnin/checks/vendor.py). Default nvidia.",
    )
    model: Str = Field(
        description='Product name every GPU must report, as `nvidia-smi -q` prints "Product Name" '
        '(e.g. "NVIDIA H100 80GB HBM3" on HGX H100 SXM5); on AMD, as `amd-smi static` prints '
        'ASIC "MARKET_NAME" (e.g. "MI300X").'
    )
    count: PositiveInt = Field(description="GPUs per node (an HGX baseboard holds 8 SXM modules).")
    memory_gib: PositiveNumber = Field(
        description="Memory per GPU, GiB (H100 SXM: 81559 MiB total in nvidia-smi -q FB Memory Usage)."
    )
    nvlink_links_per_gpu: NonNegativeInt = Field(
        description="NVLink links each GPU must have active (H100 SXM: 18, NV18 in `nvidia-smi topo -m`). "
        "0: GPUs without NVLink; the nvlink check is skipped."
    )
    nvswitch: Bool = Field(
        description="GPUs talk over NVSwitch: the fabric manager must run, or CUDA init fails with "
        '"system not yet initialized" (docs/reference.md, GPU). Turns on the fabric manager check and role.'
    )
    multi_node_nvlink: Bool = Field(
        default=False,
        description="The GPUs join a multi-node NVLink domain beyond the node (GB200/GB300 NVL72: the rack's "
        "18 compute trays): every GPU must report a non-zero CliqueId and ClusterUUID (NVML "
        "nvmlGpuFabricInfo, docs/platforms.md); a GPU in no domain is a tray that did not register. "
        "Default false: an HGX node is its own NVLink domain (CliqueId 0).",
    )
    xgmi_bit_rate_gbps: PositiveNumber | None = Field(
        default=None,
        description="AMD: XGMI bit rate every GPU's links must run at, Gb/s per lane (`amd-smi xgmi` bit_rate; "
        "MI300X 32), judged by amd_xgmi_links. Unset: not judged.",
    )
    xgmi_max_bandwidth_gbps: PositiveNumber | None = Field(
        default=None,
        description="AMD: `amd-smi xgmi` max_bandwidth each GPU must show, Gb/s (MI300X 512). Unset: not judged.",
    )


class Link(Section):
    gen: PositiveInt = Field(
        description="PCIe generation the link must reach (5 = 32 GT/s). GPUs drop link speed at idle "
        "(power saving), so speed is judged under load (docs/reference.md, PCIe)."
    )
    width: PositiveInt = Field(description="PCIe lanes the link must have (16 = x16); judged at idle too.")


class OptionalLink(Section):
    gen: PositiveInt | None = Field(default=None, description="PCIe generation; unset: not judged.")
    width: PositiveInt | None = Field(default=None, description="PCIe lanes; unset: not judged.")


class Pcie(Section):
    gpu: OptionalLink = Field(
        default_factory=OptionalLink,
        description="Every GPU's link (H100 SXM: Gen5 x16). Unset: not judged, where no public figure "
        "exists (a GB200 reaches its Grace CPU over NVLink-C2C; docs/platforms.md).",
    )
    nic: OptionalLink = Field(
        default_factory=OptionalLink,
        description="Every network card's link (ConnectX-7: Gen5 x16). Unset: not judged.",
    )
    nvme: OptionalLink = Field(
        default_factory=OptionalLink,
        description="Every NVMe drive's link (U.2 data-centre drives: Gen4 x4, vendor datasheets); "
        "unset: not judged.",
    )
    gpu_nics: StrList = Field(
        default=[],
        description="Each GPU's own NIC, in GPU order, by its RDMA name (mlx5_0; '-' for a GPU without one): "
        "`nvidia-smi topo -m` must show it at PIX or PXB from its GPU (behind one PCIe switch), so "
        "GPUDirect RDMA does not cross the CPU (docs/burnin.md, gpu_nic_affinity). Empty: not judged.",
    )


class Ib(Section):
    hca_count: NonNegativeInt = Field(
        description="InfiniBand ports each node must have, of the link layer below (one NDR HCA per GPU "
        "on a rail-optimised fabric). 0: no InfiniBand; the ib checks and the ib stage are skipped."
    )
    rate_gbps: PositiveNumber = Field(
        description='Rate every port must run at, Gb/s (NDR: ibstat "Rate: 400").'
    )
    link_layer: Annotated[Literal[LINK_LAYERS], strict(str, choices=LINK_LAYERS)] = Field(
        description="Link layer of the ports judged; ports of the other layer on the same HCAs (a "
        "BlueField or CX Ethernet port) are listed but are not failures."
    )
    ca_types: CaTypes = []  # the compute fabric's HCAs; its description is with its type (fields.py)


def _pin(text: str, unset: str = "not pinned") -> Any:
    return Field(default=None, description=f"{text} Unset: {unset}.")


class Pins(Section):
    """Versions: what the checks require and what `bringup configure` installs (playbooks/roles/*)."""

    driver: Str = Field(
        description="NVIDIA data-centre driver version every node must run (e.g. 535.183.01, branch 535 LTS)."
    )
    fabric_manager: Str | None = _pin(
        "Fabric manager version; it must match the driver exactly.", unset="the driver's version"
    )
    cuda: Str | None = _pin("CUDA version the driver reports.")
    dcgm: Str | None = _pin("DCGM version (3.x and 4.x diag layouts are both parsed).")
    doca_ofed: Str | None = _pin(
        "DOCA-OFED / MLNX_OFED version; `ofed_info -s` may add a build suffix (24.04-0.6.6 -> 24.04-0.6.6.0)."
    )
    hca_firmware: Str | None = _pin("ConnectX firmware version every IB HCA must run (ibstat).")
    vbios: Str | None = _pin(
        "GPU VBIOS version (nvidia-smi -q); one VBIOS across a node is checked regardless."
    )
    dcgm_exporter: Str | None = _pin("NVIDIA/dcgm-exporter release (<dcgm>-<exporter> tag scheme).")
    container_toolkit: Str | None = _pin(
        "NVIDIA Container Toolkit version (1.16.2 fixes CVE-2024-0132, a container escape)."
    )
    nccl: Str | None = _pin("libnccl2 version, built for the pinned CUDA.")
    nccl_tests: Str | None = _pin("NVIDIA/nccl-tests version, packaged by the site against the pinned NCCL.")
    perftest: Str | None = _pin("perftest version (ib_write_bw, ib_read_bw).")
    infiniband_diags: Str | None = _pin("infiniband-diags version (ibstat, perfquery).")
    pciutils: Str | None = _pin("pciutils version (lspci -vv LnkCap/LnkSta).")
    stress_ng: Str | None = _pin("stress-ng version.")
    fio: Str | None = _pin("fio version.")
    sysbench: Str | None = _pin("sysbench version (memory bandwidth, the host stage).")


class Floors(Section):
    """Performance a node must reach; a figure below its floor fails the check."""

    ib_write_bw_fraction: Fraction = Field(
        description="ib_write_bw per direction must reach this fraction of ib.rate_gbps (0.97: one "
        "operator's fabric alert level, docs/reference.md, InfiniBand)."
    )
    ib_write_bw_bidir_gbps: PositiveNumber | None = Field(
        default=None,
        description="Bidirectional ib_write_bw floor, Gb/s (>= 720 with GPUDirect on NDR: another "
        "operator's floor, docs/reference.md, InfiniBand). Unset: only the per-direction floor applies.",
    )
    ib_gdr_write_fraction: Fraction = Field(
        default=0.95,
        description="With diag.ib_gdr, ib_write_bw from GPU memory per direction must reach this fraction "
        "of ib.rate_gbps (0.95: AzNHC's `check_ib_bw_gdr 380` on 400 Gb/s NDR, github.com/Azure/"
        "azurehpc-health-checks conf/nd96isr_h100_v5.conf). Default 0.95.",
    )
    nccl_busbw_single_node_gbps: PositiveNumber = Field(
        description="all_reduce_perf bus bandwidth within one node at the largest sizes, GB/s (8x H100 "
        "NVLink: 460, one cloud's floor, ~480 measured; docs/reference.md, NCCL)."
    )
    nccl_busbw_multi_node_gbps: PositiveNumber = Field(
        description="all_reduce_perf bus bandwidth across nodes at the largest sizes, GB/s (8x NDR ring: "
        "~390 possible; 360 leaves ~8% margin; docs/reference.md, NCCL)."
    )
    nccl_busbw_nvlink_domain_gbps: PositiveNumber | None = Field(
        default=None,
        description="NVL72 (gpu.multi_node_nvlink): the nccl stage's pass with multi-node NVLink on inside "
        "one NVLink domain, busbw at the largest sizes, GB/s, for a group of at least "
        "nccl_busbw_nvlink_domain_min_nodes trays (GB300: 823, NVIDIA's gate; docs/platforms.md). Unset, "
        "or a smaller domain: that pass is judged against nccl_busbw_multi_node_gbps.",
    )
    nccl_busbw_nvlink_domain_min_nodes: Annotated[int, Field(ge=2), strict(int, ge=2)] = Field(
        default=2,
        description="The fewest trays of one domain nccl_busbw_nvlink_domain_gbps covers: the size of the "
        "run its figure comes from (GB300: 3); the stage's trials inside a domain hold at least as many.",
    )
    nccl_busbw_steady_fraction: Fraction = Field(
        default=0.85,
        description="A soak iteration (after the first, a warm-up) whose bus bandwidth falls under this "
        "fraction of the soak's median is a WARN: unstable (0.85 on a dedicated fabric; the lab's TCP "
        "links on a shared machine waver more, and its demo sets 0.5).",
    )
    h2d_gbps: PositiveNumber | None = Field(
        default=None,
        description="Host<->device copy floor per GPU and direction, GB/s, for the link pcie.gpu names (48 on "
        "Gen5 x16, whose raw rate is 63 GB/s: one cloud's H100 nvbandwidth floor, docs/reference.md, GPU). "
        "Judged by copy_bandwidth; unset: only the fraction of the node's best applies.",
    )
    copy_fraction_of_best: Fraction = Field(
        default=0.8,
        description="A GPU's host<->device copy bandwidth must reach this fraction of the best GPU in the "
        "same node (default 0.8: healthy GPUs of one node spread up to ~9% in a real nvbandwidth run, "
        "github.com/NVIDIA/nvbandwidth/issues/15; a link trained to half its lanes moves half).",
    )
    d2d_gbps: PositiveNumber | None = Field(
        default=None,
        description="nvbandwidth GPU<->GPU copy floor, GB/s (335: one cloud's H100 floor). Not judged yet.",
    )
    matmul_tflops_fraction_of_best: Fraction = Field(
        default=0.9,
        description="A GPU's matmul TFLOP/s under load must reach this fraction of the best GPU in the "
        "same node (default 0.9: one tool passes a GPU within 10% of the best; docs/reference.md, GPU).",
    )
    matmul_tflops: PositiveNumber | None = Field(
        default=None,
        description="Absolute bf16 dense matmul floor, TFLOP/s (8192^3: ~790 measured on H100 SXM; "
        "docs/reference.md, GPU). Unset: only the fraction of the node's best applies.",
    )


class Diag(Section):
    """How long and how hard the burn-in stages load a node."""

    dcgm_level: Annotated[int, Field(ge=1, le=4), strict(int, ge=1, le=4)] = Field(
        description="`dcgmi diag -r N` level: 1 seconds, 2 about 2 min, 3 about 15 min (acceptance), "
        "4 up to hours (docs/reference.md, GPU)."
    )
    dcgm_not_applicable: Annotated[
        tuple[Annotated[Literal[DCGM_TESTS], strict(str, choices=DCGM_TESTS)], ...],
        BeforeValidator(strict_list),
    ] = Field(
        default=[],
        description="DCGM tests of the level that do not apply on this platform, so may be skipped "
        "(e.g. a test DCGM does not support on the GPU model: docs.nvidia.com/datacenter/dcgm/latest/"
        "user-guide/dcgm-diagnostics.html). Every other test of the level must have run on every "
        "GPU, or the result is UNKNOWN. Default none.",
    )
    stress_minutes: PositiveNumber = Field(
        default=10,
        description="Minutes of matmul load per GPU, comparing results bit for bit (silent data "
        'corruption shows when run "repeatedly, for minutes", docs/reference.md, GPU). Default 10.',
    )
    pcie_load_seconds: PositiveNumber = Field(
        default=20,
        description="Seconds of GPU load while PCIe link speeds are read: GPUs drop link speed at idle, "
        "so speed is only judged under load (docs/reference.md, PCIe). Default 20.",
    )
    ib_load_seconds: PositiveNumber = Field(
        default=60,
        description="Seconds each ib stage round loads every port at once (acceptance runs load for a "
        "day: docs/reference.md, Field lessons). Default 60; across profiles in one run the longest wins.",
    )
    ib_rounds: PositiveInt = Field(
        default=2,
        description="ib stage rounds: each port meets this many different partners, so a bad port is "
        "told from a bad partner. Default 2; across profiles in one run the most wins.",
    )
    ib_gdr: Bool = Field(
        default=False,
        description="The ib stage loads every HCA from its nearest GPU's memory (GPUDirect RDMA: "
        "ib_write_bw --use_cuda), judged against floors.ib_gdr_write_fraction. Default false.",
    )
    ib_gdr_dmabuf: Bool = Field(
        default=False,
        description="With ib_gdr, GPU memory is registered through dma_buf (--use_cuda_dmabuf), not "
        "nvidia-peermem. Default false.",
    )
    nccl_soak_minutes: NonNegativeNumber = Field(
        default=60,
        description="Minutes the nccl stage repeats its tests (at least once; 0 = once). NCCL hangs and "
        "stalls can take 12-24 h to show (docs/reference.md, Field lessons): raise it for acceptance. "
        "Default 60.",
    )
    nccl_group_size: NonNegativeInt = Field(
        default=0,
        description="Nodes per NCCL group: 0 = the whole run in one group; G = groups of G nodes.",
    )
    nccl_group_by_leaf: Bool = Field(
        default=False,
        description="The nccl soak groups are the nodes under one leaf switch (ibnetdiscover), so a bad "
        "leaf shows as one group; nodes of no known leaf soak apart. Default false.",
    )
    nccl_iteration_timeout_s: PositiveNumber = Field(
        default=600,
        description="An NCCL iteration with no progress for this many seconds (after its first result "
        "row) is a hang: the watchdog stops it. Default 600.",
    )
    rvs_confs: StrList = Field(
        default=[],
        description="AMD: ROCm Validation Suite configurations the gpu stage runs, one `rvs -c` each, under "
        "rvs_conf_dir (MI300X/gst_single.conf GEMM, iet_single.conf power, pebb_single.conf PCIe, "
        "pbqt_single.conf XGMI, babel.conf HBM). Empty: RVS does not run (docs/platforms.md).",
    )
    rvs_conf_dir: Str = Field(
        default="/opt/rocm/share/rocm-validation-suite/conf",
        description="Where rocm-validation-suite's confs are.",
    )
    rvs_timeout_minutes: PositiveNumber = Field(
        default=90,
        description="Minutes all rvs_confs may take; then the run is stopped, UNKNOWN. Default 90.",
    )
    nccl_tests: Annotated[StrList, Field(min_length=1)] = Field(
        default=["all_reduce_perf"],
        description="nccl-tests programs the nccl stage runs (also all_gather_perf, alltoall_perf). "
        "Default [all_reduce_perf].",
    )


class Host(Section):
    """The node as a Linux host: disks, clock, container runtime, kernel log."""

    disk_use_warn_pct: Percent = Field(
        default=85,
        description="A filesystem this full (%) is a warning: containers and checkpoints need room "
        "(operators' usual alert level). Default 85.",
    )
    disk_use_fail_pct: Percent = Field(
        default=95,
        description="A filesystem this full (%) fails the node: jobs that write logs or pull images "
        "fail. Default 95.",
    )
    max_clock_offset_s: PositiveNumber = Field(
        default=2,
        description="Seconds the node's clock may be off the controller's: skew broke HTTPS certificate "
        "checks on fresh nodes (docs/reference.md, Field lessons). Default 2, as the base role's "
        "base_max_clock_offset_s; `bringup configure` passes it on only when the profile sets it.",
    )
    zfs: Bool = Field(
        default=False,
        description="The node has a local ZFS pool: the zfs_pool check and the storage role run. Default false.",
    )
    container_image: Str = Field(
        default="nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04",
        description="Image the container runtime check starts with every GPU (`docker run --gpus all`); "
        "its CUDA must suit the driver (12.2 = driver 535's CUDA). Default the CUDA 12.2.2 base image.",
    )
    kernel_log_allowlist: Annotated[StrList, AfterValidator(regexes)] = Field(
        default=[],
        description="Extra regular expressions of kernel log lines known to be harmless at this site.",
    )


class Hardware(Section):
    """What the node itself must report: DIMMs (dmidecode), CPUs (lscpu), NVMe drives (smartctl).
    Each figure left unset is not judged; a check with none of its figures set does not run."""

    dimm_count: PositiveInt | None = Field(
        default=None, description="Populated DIMM slots (dmidecode -t memory); fewer = a DIMM missing."
    )
    dimm_size_gib: PositiveNumber | None = Field(default=None, description="Size of every DIMM, GiB.")
    dimm_min_speed_mts: PositiveInt | None = Field(
        default=None, description="Slowest configured speed a DIMM may run at, MT/s (DDR5-4800 = 4800)."
    )
    cpu_model: Str | None = Field(
        default=None, description="A substring of lscpu's 'Model name' (e.g. 'Xeon(R) Platinum 8480')."
    )
    cpu_cores: PositiveInt | None = Field(
        default=None, description="Physical cores, all sockets together (sockets x cores per socket)."
    )
    nvme_count: PositiveInt | None = Field(default=None, description="NVMe drives smartctl --scan lists.")
    nvme_min_capacity_gb: PositiveNumber | None = Field(
        default=None, description="Smallest capacity an NVMe drive may have, GB (10^9 bytes, as sold)."
    )
    nvme_max_percentage_used: Percent = Field(
        default=80,
        description="NVMe 'Percentage Used' (endurance consumed) above which a drive is a warning. "
        "Default 80: the drive is near its rated writes; 100 and above is worn out (NVMe spec).",
    )

    def judges_memory(self) -> bool:
        return any(v is not None for v in (self.dimm_count, self.dimm_size_gib, self.dimm_min_speed_mts))

    def judges_cpu(self) -> bool:
        return self.cpu_model is not None or self.cpu_cores is not None


class HostPerf(Section):
    """Host performance floors (the `host` stage): memory bandwidth (sysbench), local NVMe
    throughput, IOPS and latency (fio) and CPU thermal throttling under a sustained load. Each
    check runs only when its figures are set; docs/reference.md, "Host (node) tests"."""

    memory_bandwidth_gbps: PositiveNumber | None = Field(
        default=None,
        description="Floor of `sysbench memory` read bandwidth over every CPU thread, GB/s (10^9 B/s). "
        "Unset: memory_bandwidth does not run.",
    )
    memory_seconds: PositiveNumber = Field(
        default=10, description="Seconds sysbench reads memory. Default 10."
    )
    memory_block_mib: PositiveInt = Field(
        default=64,
        description="Each thread's buffer, MiB: larger than the last-level cache, so DRAM is measured, not "
        "cache (Xeon 8480: 105 MB L3 per socket, shared by 56 threads). Default 64.",
    )
    nvme_directory: Str = Field(
        default="/var/tmp",
        description="Directory on local NVMe where fio writes its scratch file (removed afterwards); never "
        "a raw device. Default /var/tmp; O_DIRECT fails on tmpfs, which fio reports as an error (UNKNOWN).",
    )
    nvme_file_gib: PositiveNumber = Field(
        default=4, description="Size of fio's scratch file, GiB. Default 4."
    )
    nvme_seconds: PositiveNumber = Field(
        default=10, description="Seconds of each fio job (sequential write, sequential read, 4k random read)."
    )
    nvme_seq_read_mbps: PositiveNumber | None = Field(
        default=None,
        description="Floor of fio sequential read (1 MiB blocks, queue depth 32), MB/s (10^6 B/s).",
    )
    nvme_seq_write_mbps: PositiveNumber | None = Field(
        default=None, description="Floor of fio sequential write (1 MiB blocks, queue depth 32), MB/s."
    )
    nvme_randread_iops: PositiveNumber | None = Field(
        default=None, description="Floor of fio 4 KiB random read IOPS (queue depth 64, one job)."
    )
    nvme_randread_p99_us: PositiveNumber | None = Field(
        default=None, description="Ceiling of the 4 KiB random read 99th-percentile completion latency, us."
    )
    cpu_load_seconds: PositiveNumber | None = Field(
        default=None,
        description="Seconds of load on every CPU (stress-ng) while the kernel's thermal throttle counters "
        "are watched. Unset: cpu_throttle does not run.",
    )
    cpu_min_load_mhz: PositiveNumber | None = Field(
        default=None,
        description="Lowest CPU clock under load (scaling_cur_freq), MHz; below it is a warning. Unset: "
        "clocks are recorded, not judged.",
    )

    def judges_memory(self) -> bool:
        return self.memory_bandwidth_gbps is not None

    def judges_nvme(self) -> bool:
        return any(
            v is not None
            for v in (
                self.nvme_seq_read_mbps,
                self.nvme_seq_write_mbps,
                self.nvme_randread_iops,
                self.nvme_randread_p99_us,
            )
        )


class Health(Section):
    """`burnin health`, the in-service check Slurm runs on the node (docs/in-service.md)."""

    budget_s: PositiveNumber = Field(
        default=10,
        description="Seconds all its checks together may take; a check still running then is UNKNOWN, "
        "never a pass. Default 10: it must end well inside HealthCheckInterval, and Slurm's "
        "epilog/prolog wait on it (docs/in-service.md).",
    )
    unknown_streak: NonNegativeInt = Field(
        default=3,
        description="Drain the node when one check is UNKNOWN this many runs in a row (a hung nvidia-smi: "
        "NVIDIA's health validation takes UNKNOWN out of service), with its own reason. Default 3: a "
        "tool that is slow once is not drained, one that stays wedged is within 3 intervals. 0: never "
        "(docs/in-service.md).",
    )
    drain_on_unknown: Bool = Field(
        default=False,
        description="Drain the node when a check is UNKNOWN (could not run, timed out, unparseable) and "
        "none failed. Default false: a check that cannot look is not proof of a fault, and a "
        "wedged tool would otherwise drain the whole fleet at once; the verdict still shows in the "
        "node's metrics.",
    )
    breaker_share: Fraction = Field(
        default=0.10,
        description="The fleet-wide circuit breaker (with `burnin health --breaker-db`): the share of a Slurm "
        "partition that may drain for one check within breaker_window_s; the next drain trips it, and "
        "that check drains nothing more until `burnin breaker reset` (docs/in-service.md).",
    )
    breaker_min_nodes: PositiveInt = Field(
        default=2,
        description="The circuit breaker lets at least this many nodes drain for one check in a window, "
        "however small the partition (8 nodes x 10% rounds to 0).",
    )
    breaker_window_s: PositiveNumber = Field(
        default=600,
        description="The circuit breaker's window in seconds: drains older than this no longer count.",
    )


class Watch(Section):
    """`burnin watch`: error-counter rises over a reading interval, as rates (docs/in-service.md)."""

    ib_symbol_errors_per_hour: NonNegativeNumber = Field(
        default=120,
        description="IB symbol errors per hour a port may gain; over it the node drains. The IBTA ceiling "
        "(BER 10^-12): https://docs.oracle.com/cd/E19654-01/820-7751-12/z40004881932077.html",
    )
    ib_link_recoveries_per_hour: NonNegativeNumber = Field(
        default=300,
        description="IB link error recoveries per hour a port may gain; over it the node drains. NVSentinel's "
        "5/min: https://github.com/NVIDIA/NVSentinel (docs/nic-health-monitor/link-counter-detection.md)",
    )
    ib_link_downs: NonNegativeInt = Field(
        default=0, description="IB link downs a port may gain per reading (any ends its jobs: NVSentinel)."
    )
    aer_uncorrectable: NonNegativeInt = Field(
        default=0, description="Uncorrectable PCIe AER errors a device may gain per reading."
    )
    nvlink_replay_errors: NonNegativeInt = Field(
        default=0,
        description="NVLink replay errors a link may gain per reading (`nvidia-smi nvlink -e`); more drains. "
        "DCGM's health watch fails on any: https://github.com/NVIDIA/DCGM (modules/health/DcgmHealthWatch.cpp)",
    )
    nvlink_recovery_errors: NonNegativeInt = Field(
        default=0,
        description="NVLink recovery errors a link may gain per reading; more drains (DCGM's health watch "
        "fails on any, as for replays).",
    )
    nvlink_crc_errors_per_second: NonNegativeNumber = Field(
        default=100,
        description="NVLink CRC errors per second a link may gain before the node drains; fewer are a "
        "warning. DCGM's figure from the driver team ('CRC errors only matter at rates of 100+ per second'): "
        "https://github.com/NVIDIA/DCGM (DcgmGpuHardwareLimits.h)",
    )


class Provisioning(Section):
    nic: Str | None = Field(
        default=None,
        description="Which NIC PXE-boots, when the host/group var provisioning_nic does not say: "
        "onboard (default), slot:N[:PORT], fqdd:NIC.Slot.3-1-1 or mac:AA:BB:...",
    )


class Profile(Section):
    """A validated hardware profile. ``path`` is where it was read from (not part of the YAML)."""

    model_config = ConfigDict(
        title="Hardware profile",
        json_schema_extra={
            "$comment": "Generated by `python -m bringup.profiles.load --schema`; do not edit."
        },
    )

    name: Str = Field(description="The profile's name: its file name without .yml.")
    description: Str = Field(description="The hardware in one line.")
    boot_mode: Annotated[Literal[BOOT_MODES], strict(str, choices=BOOT_MODES)] = Field(
        description="How the nodes' firmware boots from the network (HGX platforms ship UEFI-only)."
    )
    gpu: Gpu
    pcie: Pcie = Field(default_factory=Pcie)
    ib: Ib
    pins: Pins
    floors: Floors
    diag: Diag
    host: Host = Field(default_factory=Host)
    hardware: Hardware = Field(default_factory=Hardware)
    host_perf: HostPerf = Field(default_factory=HostPerf)
    provisioning: Provisioning = Field(default_factory=Provisioning)
    health: Health = Field(default_factory=Health)
    watch: Watch = Field(default_factory=Watch)

    _path: Path | None = PrivateAttr(default=None)

    @property
    def path(self) -> Path | None:
        return self._path

    def at(self, path: Path | None) -> Profile:
        """This profile, recorded as read from ``path``."""
        copy = self.model_copy()
        copy._path = path
        return copy
