"""The tools `burnin evaluate` knows (pure): the lines each prints, weighted. burnin.evaluate.recognise
scores a text against them.

Weights: 3 is a line only that tool prints, 2 a characteristic line, 1 a weak sign (see
burnin.evaluate.recognise). Which checks judge a tool's output each check declares itself (Check.reads,
by the names here); burnin.evaluate.recognise joins the two. A tool no check reads is still listed, so
that its output is recognised and the answer says what to run instead. Nothing here imports a
check.
"""

from __future__ import annotations

import re

from burnin.evaluate.markers_fabric import FABRIC_TOOLS
from burnin.evaluate.tool_marks import Tool, mark
from burnin.parsers.kernel_log import kernel_line_counts
from burnin.parsers.nvidia_smi import parse_fabric_excerpt


def _kernel_lines(text: str) -> list[tuple[int, str]]:
    kernel, other = kernel_line_counts(text)
    if kernel and kernel >= other:
        return [(3, f"{kernel} kernel-log line(s) (timestamp, level or 'kernel:' prefix)")]
    # A few among another tool's lines: a sign, not the strongest, so that the file is seen to hold a kernel
    # log too (it is judged as the other tool's, and cannot pass: burnin/evaluate/handed_in.py).
    return [(2, f"{kernel} kernel-log line(s) among other lines")] if kernel >= 2 else []


def _one_section(text: str) -> list[tuple[int, str]]:
    if "NVSMI LOG" in text and not re.search(r"^\s+Product Name\s+:", text, re.MULTILINE):
        return [(1, "no 'Product Name' (a -d section)")]
    return []


def _bare_fabric(text: str) -> list[tuple[int, str]]:
    # Only a text without the banner, 'Attached GPUs' and GPU blocks of a whole -q: never a
    # rival of nvidia-smi -q on its own output.
    if "Fabric" not in text or (blocks := parse_fabric_excerpt(text)) is None:
        return []
    return [(3, f"{len(blocks)} bare 'Fabric' block(s) of nvidia-smi -q (State, Status), no GPU block")]


_SYSTEMCTL_STATES = {"active", "inactive", "failed", "activating", "deactivating", "reloading", "unknown"}


def _systemctl_state(text: str) -> list[tuple[int, str]]:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) == 1 and lines[0] in _SYSTEMCTL_STATES:
        return [(2, f"a lone unit state '{lines[0]}' (systemctl is-active)")]
    return []


# A --query-gpu header: comma-separated field names (units in brackets), one of them a field
# nvidia-smi's --help-query-gpu lists under these names or prefixes.
_CSV_HEADER = re.compile(
    r"^[a-z_][\w.]*(?: \[[^\]]+\])?(?:, ?[a-z_][\w.]*(?: \[[^\]]+\])?)+\s*$", re.MULTILINE
)
_CSV_KNOWN = re.compile(
    r"(?:^|, ?)(?:index|uuid|pci\.bus_id|driver_version|pcie\.link\.|clocks|clocks_(?:throttle|event)_reasons\.|"
    r"temperature\.|power\.|memory\.|ecc\.|utilization\.|retired_pages\.|remapped_rows\.|persistence_mode|"
    r"pstate|fan\.speed|vbios_version|serial|mig\.mode\.|compute_mode|enforced\.power)"
)


# The burn-in's own throttle sampler (index, 0x mask, temperature, power): noheader rows whose
# columns are known (burnin.checks.gpu.THROTTLE_SAMPLER).
_SAMPLER_ROWS = r"^\d+, 0x[0-9A-Fa-f]{16}, \d+(?: C)?, [\d.]+(?: W)?\s*$"

# One value of a --query-gpu field as nvidia-smi prints it (units or nounits): a count, reading or
# version with its unit, a bit mask, a GPU or MIG UUID, a PCI bus id, a time stamp, N/A and the
# like, a mode or state, a GPU's name. Free text is not a value: prose with commas is not a row.
_CSV_VALUE = re.compile(
    r"-?\d+(?:\.\d+)*(?: ?(?:%|W|C|MiB|GiB|KiB|MB|GB|MHz|GHz|mV|V|ms|us|s))?"
    r"|0x[0-9A-Fa-f]+"
    r"|(?:GPU|MIG)-[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}"
    r"|[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"
    r"|\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?"
    r"|\[?(?:N/A|Not Supported|Unknown Error|Insufficient Permissions|Requested functionality has been deprecated)\]?"
    r"|Enabled|Disabled|Active|Not Active|Default|Exclusive_Process|Exclusive_Thread|Prohibited|P\d{1,2}"
    r"|(?:NVIDIA|Tesla|Quadro|GeForce|TITAN)\b[\w .()-]*"
)
_MIN_NOHEADER_ROWS = 2


def _noheader_rows(text: str) -> int:
    """How many noheader --query-gpu rows the text is (0: it is not one): at least two rows of two
    or more values each, all as wide, every field a value a query prints, and no other line but
    the pasted command line (a prompt, `--query-gpu=`)."""
    widths: set[int] = set()
    rows = 0
    for line in text.splitlines():
        if not line.strip() or "--query-gpu" in line or "--format" in line:
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 2 or not all(_CSV_VALUE.fullmatch(c) for c in cells):
            return 0
        widths.add(len(cells))
        rows += 1
    return rows if rows >= _MIN_NOHEADER_ROWS and len(widths) == 1 else 0


def _csv_lines(text: str) -> list[tuple[int, str]]:
    for m in _CSV_HEADER.finditer(text):
        if _CSV_KNOWN.search(m.group(0)):
            return [(3, "a --query-gpu CSV header")]
    if not re.search(_SAMPLER_ROWS, text, re.MULTILINE) and (rows := _noheader_rows(text)):
        # Weight 2, the least a tool is recognised on: the tool is plain, the columns are not.
        return [(2, f"{rows} rows of --query-gpu values with no header (the columns cannot be told)")]
    return []


TOOLS: tuple[Tool, ...] = (
    # ---- nvidia-smi --------------------------------------------------------------------------
    Tool(
        "nvidia-smi -q",
        (
            mark(r"^=+NVSMI LOG=+\s*$", 3, "the 'NVSMI LOG' banner"),
            mark(r"^Attached GPUs\s*:\s*\d+", 3, "'Attached GPUs'"),
            mark(
                r"^GPU [0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\s*$",
                2,
                "a 'GPU 00000000:xx:00.0' block",
            ),
            mark(r"^\s+Product Name\s+:", 1, "'Product Name'"),
        ),
    ),
    Tool(
        # `nvidia-smi -q -d PAGE_RETIREMENT` (or ROW_REMAPPER, ECC...): one section per GPU, no
        # product name; the memory-health check reads it, the inventory checks have nothing to read.
        "nvidia-smi -q -d",
        (
            mark(r"^=+NVSMI LOG=+\s*$", 3, "the 'NVSMI LOG' banner"),
            mark(r"^Attached GPUs\s*:\s*\d+", 3, "'Attached GPUs'"),
            mark(
                r"^GPU [0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\s*$",
                2,
                "a 'GPU 00000000:xx:00.0' block",
            ),
        ),
        detect=_one_section,
    ),
    Tool(
        # `nvidia-smi -q | grep -A7 Fabric`: the fabric check judges what it shows; it cannot pass.
        "nvidia-smi -q (Fabric excerpt)",
        detect=_bare_fabric,
    ),
    Tool(
        "nvidia-smi nvlink -s",
        (
            mark(r"^\s+Link \d+: (?:[\d.]+ GB/s|<inactive>)", 3, "'Link N: xx GB/s' lines"),
            # NVML spells it 'NVLink' or 'Nvlink' (and 'inactive' or 'inActive') by version.
            mark(
                r"NVML: Unable to retrieve NVLink information",
                3,
                "'Unable to retrieve NVLink information'",
                re.IGNORECASE,
            ),
            # nvidia-smi's sentence under a GPU whose links it does not list (burnin/parsers/nvidia_smi.py).
            mark(
                r"^Nvlink queries are not supported for Devices in MIG mode\s*$",
                3,
                "'Nvlink queries are not supported for Devices in MIG mode'",
            ),
            mark(
                r"^Device does not have or support Nvlink\s*$", 3, "'Device does not have or support Nvlink'"
            ),
        ),
        includes=("nvidia-smi -L",),
    ),
    Tool(
        "nvidia-smi -L",
        (
            mark(r"^GPU \d+: .+ \(UUID: GPU-[0-9a-fA-F-]+\)\s*$", 2, "'GPU N: <name> (UUID: GPU-...)' lines"),
            mark(r"^\s+MIG \S+\s+Device\s+\d+: \(UUID: MIG-", 2, "'MIG ... Device N' lines"),
        ),
    ),
    Tool(
        "nvidia-smi --query-gpu CSV",
        (
            mark(r"--query-gpu=", 2, "the --query-gpu command line"),
            mark(_SAMPLER_ROWS, 2, "throttle-sampler rows (noheader)"),
        ),
        detect=_csv_lines,
    ),
    Tool(
        "nvidia-smi (default table)",
        (
            mark(r"^\|\s*NVIDIA-SMI \d+\.\d+", 3, "the 'NVIDIA-SMI' table title"),
            mark(r"Persistence-M\s*\|", 2, "the 'Persistence-M' column"),
        ),
    ),
    Tool(
        # What any nvidia-smi command prints in place of its output when a GPU or the driver is
        # gone (burnin/checks/gpu_smi_failure.py says what each means).
        "nvidia-smi (error answer)",
        (
            mark(
                r"Unable to (?:determine|detect) the device handle for GPU",
                3,
                "'Unable to determine the device handle for GPU'",
            ),
            mark(r"^\s*No devices were found\s*$", 3, "'No devices were found'"),
            mark(
                r"NVIDIA-SMI has failed because it couldn.t communicate with the NVIDIA driver",
                3,
                "'NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver'",
            ),
        ),
    ),
    Tool(
        "nvidia-smi topo -m",
        (
            mark(r"^\s+GPU0\s+(?:GPU1|NIC0|mlx5_0|CPU Affinity)", 3, "the topology matrix header"),
            mark(r"^\s*Legend:\s*$", 2, "the 'Legend:' of the matrix"),
        ),
        instead="no check judges the topology matrix",
    ),
    Tool(
        "nvidia-smi -q -x (XML)",
        (
            mark(r"^<!DOCTYPE nvidia_smi_log\b", 3, "the 'nvidia_smi_log' DOCTYPE"),
            mark(r"^<nvidia_smi_log>", 3, "the <nvidia_smi_log> root"),
            mark(r"^\s*<attached_gpus>\d+</attached_gpus>", 2, "<attached_gpus>"),
        ),
    ),
    # ---- DCGM --------------------------------------------------------------------------------
    Tool(
        "dcgmi diag",
        (
            mark(r"^\|\s*Diagnostic\s*\|\s*Result\s*\|", 3, "the 'Diagnostic | Result' table header"),
            mark(
                r"^[|+]-{3,}\s+(?:Metadata|Deployment|Integration|Hardware|Stress)\s+-+\+",
                3,
                "a category row",
            ),
            mark(r"^\|\s*DCGM Version\s*\|", 2, "'DCGM Version'"),
            mark(r'"DCGM (?:GPU )?Diagnostic"\s*:', 3, "the 'DCGM Diagnostic' JSON key"),
            mark(r'"test_categories"\s*:', 2, "'test_categories'"),
        ),
    ),
    Tool(
        "dcgmi discovery -l",
        (
            mark(r"^\d+ GPUs? found\.\s*$", 3, "'N GPUs found.'"),
            mark(r"^\d+ NvSwitch(?:es)? found\.\s*$", 3, "'N NvSwitches found.'"),
            mark(
                r"^\|\s*GPU ID\s*\|\s*Device Information\s*\|", 3, "the 'GPU ID | Device Information' header"
            ),
        ),
        instead="give `nvidia-smi -q`: gpu_inventory judges the GPUs it lists",
    ),
    Tool(
        "nvidia-smi nvlink -e",  # burnin/parsers/nvlink_errors.py
        (mark(r"^\s+Link \d+: (?:Replay|Recovery|CRC) Errors: \d+\s*$", 3, "'Link N: ... Errors: n' lines"),),
        includes=("nvidia-smi -L",),
    ),
    Tool(
        "dcgmi nvlink",
        (
            mark(r"^\|\s*NvLink Link Status\s*\|", 3, "the 'NvLink Link Status' title (--link-status)"),
            mark(r"^Key: Up=U, Down=D", 3, "the 'Key: Up=U, Down=D' legend"),
            mark(r"^\|\s*GPU ID: \d+\s*\|\s*NVLINK Error Counts", 3, "the 'NVLINK Error Counts' title (-e)"),
            mark(
                r"^\|Link \d+\s*\|\s*(?:CRC FLIT|CRC Data|Replay|Recovery) Error",
                2,
                "'Link N | ... Error' rows",
            ),
        ),
        instead="the nvlink check reads `nvidia-smi nvlink -s` (every link up, at its speed)",
    ),
    Tool(
        "nvidia-imex-ctl -N",
        (
            mark(r"^Domain State: \w+\s*$", 3, "the 'Domain State:' line"),
            mark(r"^Node #\d+\s+- \S+\s+- \S+", 3, "'Node #N - ADDRESS - STATE' lines"),
            mark(r"^Connectivity Table Legend:", 3, "the 'Connectivity Table Legend'"),
            mark(r"^IMEX daemon: \S+\s*$", 2, "the imex_domain check's 'IMEX daemon:' line"),
        ),
    ),
    # ---- kernel log ---------------------------------------------------------------------------
    Tool(
        "dmesg / journalctl -k",
        (
            mark(r"NVRM: Xid \(|SXid \(|\bpcieport\b|\bmlx5_core\b", 1, "kernel driver messages"),
            # dmesg's own prefixes: "[  12.345678]", "kern  :warn  : ", "kernel: ", "<4>", ISO, -T, journalctl -k
            mark(
                r"^(?:\[\s*[+-]?\d+\.\d{6}\]|kern\s*:\s*\w+\s*: |kernel: |<[0-7]>|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.,]\d{6}[+-]\d\d:?\d\d |"
                r"\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] |"
                r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ kernel: )",
                3,
                "dmesg time stamps",
            ),
        ),
        detect=_kernel_lines,
    ),
    # ---- PCIe ---------------------------------------------------------------------------------
    Tool(
        "lspci -vv",
        (
            mark(r"^\s*LnkSta:\s+Speed", 3, "'LnkSta:' lines"),
            mark(r"^\s*LnkCap:\s+Port #", 3, "'LnkCap:' lines"),
            mark(r"^\s+Capabilities: \[[0-9a-f]+\]", 2, "'Capabilities: [..]' lines"),
        ),
    ),
    Tool(
        "burnin PCIe collector (sysfs)",
        (
            mark(r"^@@burnin-section (?:idle|load\d+|after)\s*$", 3, "burnin's PCIe sections"),
            mark(r'"current_link_speed"\s*:', 2, "sysfs link fields in JSON"),
        ),
        section="idle",
    ),
    # ---- InfiniBand ---------------------------------------------------------------------------
    *FABRIC_TOOLS,
    Tool(
        "nccl-tests",
        (
            mark(r"^# nccl-tests version", 3, "'# nccl-tests version'"),
            mark(r"^rccl-tests: Version ", 3, "'rccl-tests: Version' (AMD's rccl-tests)"),
            mark(r"^# nThread \d+ nGpus \d+", 3, "the '# nThread N nGpus N' line"),
            mark(r"^#?\s+size\s+count\s+type", 3, "the '# size count type' table header"),
            mark(r"^#\s+Rank\s+\d+ Group\s+\d+ Pid\s+\d+ on", 3, "'# Rank N Group N Pid N on' lines"),
            mark(r"^#?\s*Avg bus bandwidth\s*:", 3, "'# Avg bus bandwidth'"),
            mark(r"^#?\s*Out of bounds values\s*:", 2, "'# Out of bounds values'"),
            mark(r"Test (?:CUDA|NCCL) failure common\.cu", 3, "a 'Test ... failure common.cu' line"),
            mark(r"\bNCCL (?:INFO|WARN)\b", 1, "NCCL INFO/WARN lines"),
            mark(r'"average_bus_bandwidth"\s*:', 3, "the -J 'average_bus_bandwidth' key"),
            mark(r'"(?:nthreads|ngpus|minimum_bytes)"\s*:', 2, "the -J 'config' keys"),
        ),
    ),
    # ---- GPU load -----------------------------------------------------------------------------
    Tool(
        "gpu-burn",
        (
            mark(r"proc'd:", 3, "progress lines ('proc'd: N (X Gflop/s)')"),
            mark(r"^Tested \d+ GPUs:", 3, "'Tested N GPUs:'"),
            mark(r"No clients are alive", 3, "'No clients are alive'"),
            mark(r"^\s*GPU \d+: (?:OK|FAULTY)\s*$", 2, "'GPU N: OK|FAULTY'"),
            mark(r"Initialized device \d+ with \d+ MB of memory", 2, "'Initialized device N'"),
        ),
        includes=("nvidia-smi -L",),
    ),
    Tool(
        "burnin-stress",
        (
            mark(r'"tool"\s*:\s*"burnin-stress"', 3, "a burnin-stress report"),
            mark(r"^@@burnin-section (?:stress|throttle)\s*$", 3, "burnin's stress sections"),
        ),
        section="stress",
    ),
    # ---- copy bandwidth ---------------------------------------------------------------------
    Tool(
        "nvbandwidth / bandwidthTest",
        (
            mark(r"^nvbandwidth Version: v?\d", 3, "the 'nvbandwidth Version:' header"),
            mark(r"^memcpy (?:CE|SM) (?:CPU|GPU)\(row\)", 3, "a 'memcpy CE CPU(row) -> GPU(column)' title"),
            mark(r"^Running \w+_(?:ce|sm|copy)\.$", 2, "'Running <testcase>.' lines"),
            mark(r"^SUM \w+ \d+(?:\.\d+)?$", 2, "'SUM <testcase> N' lines"),
            mark(r"^\[CUDA Bandwidth Test\] - Starting", 3, "bandwidthTest's banner"),
            mark(
                r"^\s*(?:Host to Device|Device to Host|Device to Device) Bandwidth, \d+ Device\(s\)",
                3,
                "'Host to Device Bandwidth, N Device(s)'",
            ),
            mark(r"^bandwidthTest-(?:H2D|D2H|D2D)", 3, "bandwidthTest --csv lines"),
            mark(r'"mode"\s*:\s*"copy-bandwidth"', 3, "a burnin-stress --copy-bandwidth report"),
            mark(r'"(?:h2d|d2h)_gbps"\s*:', 2, "'h2d_gbps' figures"),
        ),
    ),
    # ---- host ---------------------------------------------------------------------------------
    Tool(
        "df -Pk",
        (
            mark(
                r"^Filesystem\s+1024-blocks\s+Used\s+Available\s+Capacity\s+Mounted on",
                3,
                "the 'df -Pk' header",
            ),
            mark(r"^Filesystem\s+.*\bMounted on\s*$", 2, "a 'df' header"),
        ),
    ),
    Tool(
        "ofed_info -s",
        (
            mark(
                r"^(?:MLNX_OFED_LINUX|OFED-internal|DOCA[\w]*|mlnx-ofa_kernel)-[\w.\-]+:?\s*$",
                3,
                "an OFED version line",
            ),
        ),
    ),
    Tool(
        "zpool status -x",
        (
            mark(r"^all pools are healthy\s*$", 3, "'all pools are healthy'"),
            mark(r"^\s*pool: \S+", 2, "'pool:' lines"),
            mark(r"^\s*state: (?:ONLINE|DEGRADED|FAULTED|OFFLINE|UNAVAIL|SUSPENDED)", 2, "'state:' lines"),
        ),
    ),
    # Recognised, judged only when told which unit it was: a lone 'active' is what systemctl
    # is-active prints for any unit, not the fabric manager's answer (a property test drew it).
    Tool(
        "systemctl is-active",
        detect=_systemctl_state,
        instead="a lone unit state does not say which unit it is: for `systemctl is-active "
        "nvidia-fabricmanager` give --check fabric_manager",
    ),
    Tool(
        "nv-fabricmanager log",
        (
            mark(
                r"^\[[A-Z][a-z]{2} \d\d \d{4} \d\d:\d\d:\d\d\] \[(?:INFO|WARNING|ERROR|FATAL|DEBUG)\] \[tid \d+\] ",
                3,
                "'[date] [LEVEL] [tid N]' lines",
            ),
            mark(r"Fabric Manager Log initializing at:", 3, "the 'Fabric Manager Log initializing' banner"),
        ),
        instead="the fabric_manager check reads `systemctl is-active nvidia-fabricmanager`; NVSwitch "
        "errors are judged from the kernel log's SXid lines (kernel_log)",
    ),
    # ---- host hardware inventory -------------------------------------------------------------
    Tool(
        "dmidecode -t memory",
        (
            mark(r"^# dmidecode \d", 3, "the '# dmidecode' banner"),
            mark(r"^Handle 0x[0-9A-Fa-f]+, DMI type 17,", 3, "a 'DMI type 17' record"),
            mark(r"^Memory Device\s*$", 2, "'Memory Device'"),
        ),
    ),
    Tool(
        "lscpu",
        (
            mark(r"^\s*Core\(s\) per socket:\s+\d+", 3, "'Core(s) per socket:'"),
            mark(r'"field":\s*"Core\(s\) per socket:"', 3, "lscpu -J's 'Core(s) per socket' field"),
            mark(r"^\s*Model name:\s+\S", 1, "'Model name:'"),
        ),
    ),
    Tool(
        "smartctl -j",
        (
            mark(r'^\s*"nvme_smart_health_information_log":', 3, "'nvme_smart_health_information_log'"),
            mark(r'^\s*"smartctl": \{', 2, "a 'smartctl' object"),
        ),
    ),
    Tool(
        "nvme smart-log -o json",
        (
            mark(r'^\s*"avail_spare":', 2, "'avail_spare'"),
            mark(r'^\s*"spare_thresh":', 2, "'spare_thresh'"),
        ),
        instead="smartctl -j -a /dev/nvmeN (it names the drive's model and serial)",
    ),
    Tool(
        "fio --output-format=json",
        (mark(r'^\s*"fio version" : "fio-', 3, "'fio version'"),),
    ),
    # ---- host performance: the host stage -------------------------------------------------------
    Tool(
        "sysbench memory",
        (
            mark(r"^sysbench \d+\.\d+\S* \(using ", 3, "the 'sysbench VERSION (using ...)' banner"),
            mark(r"^Running memory speed test", 3, "'Running memory speed test'"),
            mark(r"^[\d.]+ MiB transferred \(", 2, "'MiB transferred'"),
        ),
    ),
    Tool(
        "cpu_throttle (thermal counters + stress-ng)",
        (
            mark(
                r"^/sys/devices/system/cpu/cpu\d+/thermal_throttle/\w+_throttle_count:\d+$",
                3,
                "thermal_throttle counters",
            ),
            mark(
                r"^@@burnin-section throttle_before\s*$",
                3,
                "the cpu_throttle check's 'throttle_before' section",
            ),
            mark(r"^@@burnin-section cpu_clocks\s*$", 2, "its 'cpu_clocks' section"),
        ),
        includes=("stress-ng --metrics-brief",),  # its load section is stress-ng's output
    ),
    Tool(
        "stress-ng --metrics-brief",
        (
            mark(
                r"^stress-ng: (?:info|metrc):\s+\[\d+\] dispatching hogs:",
                3,
                "stress-ng's 'dispatching hogs'",
            ),
            mark(r"^stress-ng: (?:info|metrc):\s+\[\d+\] stressor\s+bogo ops", 3, "its metrics header"),
        ),
        instead="the cpu_throttle check's output (burnin run --stages host): the load alone shows no throttling",
    ),
    Tool(  # AMD's amd-smi prints indented trees under 'GPU: N' lines (burnin/parsers/amd_smi.py)
        "amd-smi static",
        (mark(r"^        MARKET_NAME: \S", 3, "the ASIC's 'MARKET_NAME'"),),
    ),
    Tool(
        "amd-smi metric --ecc",
        (
            mark(r"^    ECC_BLOCKS:\s*$", 3, "'ECC_BLOCKS:'"),
            mark(r"^        TOTAL_UNCORRECTABLE_COUNT: ", 3, "ECC totals"),
        ),
    ),
    Tool(
        "amd-smi xgmi",
        (mark(r"^LINK METRIC TABLE:\s*$", 3, "the 'LINK METRIC TABLE' heading"),),
    ),
    # AMD's older rocm-smi, the fallback of the amd-smi checks (burnin/parsers/rocm_smi.py): a log
    # between 'ROCm System Management Interface' and 'End of ROCm SMI Log' spacers.
    Tool(
        "rocm-smi --showproductname",
        (
            mark(r"^GPU\[\d+\]\s*: Card [Ss]eries:", 3, "rocm-smi's 'GPU[N] : Card Series:' lines"),
            mark(r"^=+ ?Product Info ?=+\s*$", 2, "its 'Product Info' heading"),
        ),
    ),
    Tool(
        "rocm-smi --showrasinfo",
        (
            mark(r"^GPU\[\d+\]:\s+RAS INFO\s*$", 3, "rocm-smi's 'GPU[N]: RAS INFO' tables"),
            mark(r"^=+ ?RAS Info ?=+\s*$", 2, "its 'RAS Info' heading"),
        ),
    ),
    Tool(
        "rocm-smi --showtopo",
        (
            mark(
                r"^=+ ?Link Type between two GPUs ?=+\s*$", 3, "rocm-smi's 'Link Type between two GPUs' table"
            ),
            mark(r"^=+ ?(?:Weight|Hops) between two GPUs ?=+\s*$", 2, "its weight and hops tables"),
            # a row of its link types (nvidia-smi topo -m's header row is alike, its cells are not)
            mark(r"^GPU\d+(?:\s+(?:0|XGMI|PCIE|XXXX))+\s*$", 2, "rows of XGMI/PCIE link types"),
        ),
        # Its matrices' header row ('       GPU0         GPU1') is the line nvidia-smi topo -m's
        # header marker reads: a line it prints, not another tool's output in the file.
        includes=("nvidia-smi topo -m",),
    ),
    Tool(  # the ROCm Validation Suite's console output (burnin/parsers/rvs.py)
        "rvs",
        (
            mark(
                r"^\[RESULT\]\s*\[\s*[\d.]+\s*\] Action name :",
                3,
                "RVS's '[RESULT] [ts] Action name :' lines",
            ),
            mark(r"ROCm Validation Suite \(RVS\) Summary", 3, "RVS's summary box"),
            mark(r"\] Target GFLOPS: [\d.]+ met: (?:TRUE|FALSE)", 3, "gst's 'Target GFLOPS: N met:' lines"),
        ),
    ),
    Tool(
        "amd-smi topology",
        (
            mark(r"^LINK TYPE TABLE:\s*$", 3, "the 'LINK TYPE TABLE' heading"),
            mark(
                r"^(?:ACCESS|WEIGHT|HOPS|NUMA BW|ATOMICS|DMA) TABLE:\s*$",
                2,
                "amd-smi topology's other tables",
            ),
            # -c and -z's P2P capability tables (amdsmi's CHANGELOG, 'amd-smi topology -cndz'): their
            # 'Legend:' is amd-smi's own, not nvidia-smi topo -m's.
            mark(
                r"^(?:CACHE COHER[AE]NCY|BI-DIRECTIONAL) TABLE:\s*$",
                3,
                "amd-smi topology's P2P capability tables",
            ),
        ),
        # amd_xgmi_links runs amd-smi xgmi and amd-smi topology as one command: its output holds both.
        includes=("amd-smi xgmi",),
    ),
)
