"""nvidia-smi outputs: ``-q`` (and its ``-d`` partial views), ``nvlink -s``, ``-L``, CSV queries,
``topo -m`` and the default table.

Format drift handled here: ``Clocks Throttle Reasons`` (< 535) vs ``Clocks Event Reasons``;
ECC counters as SRAM/DRAM (Ampere+) or Single/Double Bit per memory (Volta and older);
``GPU Power Readings`` vs ``Power Readings``; ``N/A`` everywhere means "not supported" (None).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from burnin.parsers._common import (
    clean,
    is_na,
    normalize_bdf,
    parser,
    snake,
    split_lines,
    to_float,
    to_int,
    yes_no,
)
from burnin.parsers.errors import ParseError
from burnin.parsers.nvidia_smi_xml import looks_like_xml, query_tree
from burnin.parsers.smi_tree import LazyNode, Node, read_once, read_tree, tree

# ---------------------------------------------------------------------------------------------
# nvidia-smi -q
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetiredPages:
    """``Retired Pages`` (pre-Ampere page retirement; row remapping replaced it)."""

    sbe: int | None  # pages retired for single-bit ECC errors
    dbe: int | None  # pages retired for double-bit ECC errors
    pending: bool | None  # "Pending Page Blacklist" / "Pending Page Retirement": Yes -> reboot needed


@dataclass(frozen=True)
class RemappedRows:
    """``Remapped Rows`` (Ampere+)."""

    correctable: int | None
    uncorrectable: int | None
    pending: bool | None  # a remap waits for a GPU reset
    failure: bool | None  # "Remapping Failure Occurred": RMA criterion
    histogram: dict[str, int] = field(default_factory=dict)  # bank availability: max/high/partial/low/none


@dataclass(frozen=True)
class PcieLink:
    """``PCI > GPU Link Info``. Generation drops at idle (power saving); width should not."""

    gen_max: int | None
    gen_current: int | None
    gen_device_max: int | None
    gen_device_current: int | None
    gen_host_max: int | None
    width_max: int | None  # "16x" -> 16
    width_current: int | None


@dataclass(frozen=True)
class GpuQuery:
    """One ``GPU 00000000:19:00.0`` block of ``nvidia-smi -q``; a field is None when the block
    does not show it (``-d`` partial views) or the GPU does not support it (``N/A``)."""

    bus_id: str  # as printed, e.g. "00000000:19:00.0"
    product_name: str | None
    serial: str | None
    uuid: str | None
    vbios_version: str | None
    minor_number: int | None
    persistence_mode: str | None  # "Enabled" / "Disabled"
    mig_mode_current: str | None
    reset_required: bool | None  # "GPU Reset Status > Reset Required"
    drain_and_reset_recommended: bool | None
    ecc_mode_current: str | None  # "Enabled" / "Disabled"
    ecc_mode_pending: str | None
    # ECC counters, snake_case names as printed ('sram_uncorrectable_parity', 'single_bit_l1_cache'...)
    # plus canonical 'sram_correctable', 'sram_uncorrectable', 'dram_correctable',
    # 'dram_uncorrectable' derived from either layout. Values None when N/A.
    ecc_volatile: dict[str, int | None]
    ecc_aggregate: dict[str, int | None]
    retired_pages: RetiredPages | None  # None when absent or all N/A
    remapped_rows: RemappedRows | None  # None when absent or "N/A" (pre-Ampere)
    pcie: PcieLink
    replays: int | None  # "Replays Since Reset"
    replay_rollovers: int | None
    # name -> active; names match decode_throttle_reasons() ('gpu_idle', 'hw_slowdown',
    # 'hw_power_brake_slowdown', ...); N/A reasons are left out.
    clocks_event_reasons: dict[str, bool]
    fabric_state: str | None  # "Completed", "In Progress", ...; None when N/A
    fabric_status: str | None  # "Success", ...
    # Multi-node NVLink (GB200/GB300 NVL72, drivers 550+): the NVLink domain the GPU joined,
    # its health summary ("Healthy", ...) and bandwidth ("Full", "Degraded"); None when N/A.
    fabric_clique_id: str | None
    fabric_cluster_uuid: str | None
    fabric_health: str | None
    fabric_bandwidth: str | None
    temperature_c: int | None
    power_draw_w: float | None
    power_limit_w: float | None

    @property
    def bdf(self) -> str | None:
        """Canonical PCI address ('0000:19:00.0'), comparable with kernel log and lspci BDFs."""
        return normalize_bdf(self.bus_id)


@dataclass(frozen=True)
class SmiQuery:
    timestamp: str | None
    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None
    gpus: tuple[GpuQuery, ...]
    problems: tuple[str, ...] = ()  # e.g. fewer GPU blocks than "Attached GPUs" (truncated output)


_GPU_HEADER_RE = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$")

_REASON_ALIASES = {"idle": "gpu_idle", "gpu_idle": "gpu_idle"}

# Volta-era per-memory counters that live in SRAM (everything but device memory).
_OLD_SRAM_PARTS = ("register_file", "l1_cache", "l2_cache", "texture_memory", "texture_shared", "cbu")


def _sum_known(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _ecc_counters(node: Node | None) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    if node is None:
        return out
    for child in node.children:
        if child.children and child.key.lower() in ("single bit", "double bit"):
            prefix = snake(child.key)
            for leaf in child.children:
                if leaf.value is not None:
                    out[f"{prefix}_{snake(leaf.key)}"] = to_int(leaf.value)
        elif child.value is not None:
            if not is_na(child.value) and to_int(child.value) is None:
                continue  # "SRAM Threshold Exceeded : No" and other non-counters
            out[snake(child.key)] = to_int(child.value)
    if "sram_uncorrectable" not in out and any(k.startswith("sram_uncorrectable_") for k in out):
        out["sram_uncorrectable"] = _sum_known(
            [v for k, v in out.items() if k.startswith("sram_uncorrectable_")]
        )
    if "single_bit_device_memory" in out or "double_bit_device_memory" in out:
        out.setdefault("dram_correctable", out.get("single_bit_device_memory"))
        out.setdefault("dram_uncorrectable", out.get("double_bit_device_memory"))
        out.setdefault("sram_correctable", _sum_known([out.get(f"single_bit_{p}") for p in _OLD_SRAM_PARTS]))
        out.setdefault(
            "sram_uncorrectable", _sum_known([out.get(f"double_bit_{p}") for p in _OLD_SRAM_PARTS])
        )
    return out


def _retired_pages(node: Node | None) -> RetiredPages | None:
    if node is None:
        return None
    sbe = to_int(node.get("Single Bit ECC"))
    dbe = to_int(node.get("Double Bit ECC"))
    pending_node = next((c for c in node.children if c.key.lower().startswith("pending")), None)
    pending = yes_no(pending_node.value) if pending_node else None
    if sbe is None and dbe is None and pending is None:
        return None
    return RetiredPages(sbe=sbe, dbe=dbe, pending=pending)


def _remapped_rows(node: Node | None) -> RemappedRows | None:
    if node is None or not node.children:
        return None  # absent, or "Remapped Rows : N/A"
    corr = to_int(node.get("Correctable Error"))
    unc = to_int(node.get("Uncorrectable Error"))
    pending = yes_no(node.get("Pending"))
    failure = yes_no(node.get("Remapping Failure Occurred"))
    if corr is None and unc is None and pending is None and failure is None:
        return None
    hist_node = node.find("Bank Remap Availability Histogram")
    histogram: dict[str, int] = {}
    for child in hist_node.children if hist_node else []:
        value = to_int(child.value)
        if value is not None:
            histogram[snake(child.key)] = value
    return RemappedRows(corr, unc, pending, failure, histogram)


def _reasons(node: Node | None) -> dict[str, bool]:
    out: dict[str, bool] = {}
    if node is None:
        return out
    for child in node.walk():
        active = yes_no(child.value)
        if active is not None:
            name = snake(child.key)
            out[_REASON_ALIASES.get(name, name)] = active
    return out


def _pcie_link(info: Node | None) -> PcieLink:
    """``PCI > GPU Link Info``."""
    gen = info.find("PCIe Generation") if info else None
    width = info.find("Link Width") if info else None
    return PcieLink(
        gen_max=to_int(gen.get("Max")) if gen else None,
        gen_current=to_int(gen.get("Current")) if gen else None,
        gen_device_max=to_int(gen.get("Device Max")) if gen else None,
        gen_device_current=to_int(gen.get("Device Current")) if gen else None,
        gen_host_max=to_int(gen.get("Host Max")) if gen else None,
        width_max=to_int(width.get("Max")) if width else None,
        width_current=to_int(width.get("Current")) if width else None,
    )


def _ecc_errors(ecc: Node | None) -> tuple[dict[str, int | None], dict[str, int | None]]:
    """``ECC Errors``: the volatile and the aggregate counters."""
    return (
        _ecc_counters(ecc.find("Volatile") if ecc else None),
        _ecc_counters(ecc.find("Aggregate") if ecc else None),
    )


def _pair(node: Node | LazyNode | None, first: str, second: str, read) -> tuple:
    return (read(node.get(first)), read(node.get(second))) if node else (None, None)


# Readers of small sections, for read_once (which keeps a result per reader: module functions).
def _mig_mode(node: Node | None) -> str | None:
    return clean(node.get("Current")) if node else None


def _reset_status(node: Node | None) -> tuple[bool | None, bool | None]:
    return _pair(node, "Reset Required", "Drain and Reset Recommended", yes_no)


def _ecc_mode(node: Node | None) -> tuple[str | None, str | None]:
    return _pair(node, "Current", "Pending", clean)


def _fabric(node: Node | None) -> tuple[str | None, ...]:
    if node is None:
        return (None,) * 6
    health = node.find("Health")
    summary, bandwidth = _pair(health, "Summary", "Bandwidth", clean)
    return (
        clean(node.get("State")),
        clean(node.get("Status")),
        clean(node.get("CliqueId")),
        clean(node.get("ClusterUUID")),
        summary,
        bandwidth,
    )


def _gpu(bus_id: str, g: Node | LazyNode) -> GpuQuery:
    pci = g.find("PCI")
    power = g.find("GPU Power Readings", "Power Readings")
    reset_required, drain_and_reset = read_once(g.find("GPU Reset Status"), _reset_status)
    ecc_mode_current, ecc_mode_pending = read_once(g.find("ECC Mode"), _ecc_mode)
    fabric_state, fabric_status, clique_id, cluster_uuid, fabric_health, fabric_bandwidth = read_once(
        g.find("Fabric"), _fabric
    )
    volatile, aggregate = read_once(g.find("ECC Errors"), _ecc_errors)
    rows = read_once(g.find("Remapped Rows"), _remapped_rows)
    reasons = read_once(g.find("Clocks Event Reasons", "Clocks Throttle Reasons"), _reasons)
    return GpuQuery(
        bus_id=bus_id,
        product_name=clean(g.get("Product Name")),
        serial=clean(g.get("Serial Number")),
        uuid=clean(g.get("GPU UUID")),
        vbios_version=clean(g.get("VBIOS Version")),
        minor_number=to_int(g.get("Minor Number")),
        persistence_mode=clean(g.get("Persistence Mode")),
        mig_mode_current=read_once(g.find("MIG Mode"), _mig_mode),
        reset_required=reset_required,
        drain_and_reset_recommended=drain_and_reset,
        ecc_mode_current=ecc_mode_current,
        ecc_mode_pending=ecc_mode_pending,
        ecc_volatile=dict(volatile),
        ecc_aggregate=dict(aggregate),
        retired_pages=read_once(g.find("Retired Pages"), _retired_pages),
        remapped_rows=rows
        and RemappedRows(
            rows.correctable, rows.uncorrectable, rows.pending, rows.failure, dict(rows.histogram)
        ),
        pcie=read_once(pci.find("GPU Link Info") if pci else None, _pcie_link),
        replays=to_int(pci.get("Replays Since Reset")) if pci else None,
        replay_rollovers=to_int(pci.get("Replay Number Rollovers")) if pci else None,
        clocks_event_reasons=dict(reasons),
        fabric_state=fabric_state,
        fabric_status=fabric_status,
        fabric_clique_id=clique_id,
        fabric_cluster_uuid=cluster_uuid,
        fabric_health=fabric_health,
        fabric_bandwidth=fabric_bandwidth,
        temperature_c=to_int(g.get("Temperature", "GPU Current Temp")),
        power_draw_w=to_float(power.get("Power Draw|Instantaneous Power Draw|Average Power Draw"))
        if power
        else None,
        power_limit_w=to_float(power.get("Current Power Limit|Enforced Power Limit|Power Limit"))
        if power
        else None,
    )


@dataclass(frozen=True)
class SmiFailure:
    """An answer nvidia-smi gives instead of its output (nvidia-smi(1), RETURN VALUE)."""

    kind: str  # "gpu_lost", "no_devices" or "no_driver"
    line: str  # the line as printed
    bus_id: str | None  # the lost GPU's canonical PCI address, when the line names one


# "Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error" (or "GPU is lost",
# on drivers that say so): NVML cannot reach a GPU it enumerated, as after an Xid 79. Newer
# drivers print no space before the address; Windows' nvidia-smi.exe says "detect".
# Whole sentences only: an answer cut mid-line ("... for GPU 0000:09:00.0: Unknown E") is a cut
# output, UNKNOWN, not an answer (burnin/checks/base.py: a cut is judged by structure).
_GPU_LOST_RE = re.compile(
    r"Unable to (?:determine|detect) the device handle for GPU\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])?"
    r"\s*:\s*(?:Unknown Error|GPU is lost)"
)
_NO_DEVICES_RE = re.compile(r"^\s*No devices were found\s*$", re.M)
# The apostrophe is any character: pastes carry it as a typographic quote.
_NO_DRIVER_RE = re.compile(
    r"NVIDIA-SMI has failed because it couldn.t communicate with the NVIDIA driver\."
    r"(?:(?![ \t]*M)|[ \t]*Make sure that the latest NVIDIA driver is installed and running\.)"
)


def smi_failure(text: str) -> SmiFailure | None:
    """The first error-only answer of nvidia-smi in ``text`` (any of its commands prints these
    in place of its output), or None."""
    if "Unable to" not in text and "No devices" not in text and "NVIDIA-SMI has failed" not in text:
        return None  # most outputs: no regex
    for kind, pattern in (
        ("gpu_lost", _GPU_LOST_RE),
        ("no_devices", _NO_DEVICES_RE),
        ("no_driver", _NO_DRIVER_RE),
    ):
        if m := pattern.search(text):
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.end())
            line = text[start : end if end >= 0 else len(text)].strip()
            bus_id = normalize_bdf(m.group(1)) if kind == "gpu_lost" and m.group(1) else None
            return SmiFailure(kind, line[:200], bus_id)
    return None


def _cut_block(first: Node | LazyNode, last: Node | LazyNode) -> str:
    """Why the last GPU block was cut short, or ''. Output is printed in order, so only the
    last block can be cut. A full block ('Product Name' ...) always prints 'Processes' (newer
    drivers add 'Capabilities' after it); a ``-d`` view prints the same lines for every GPU.
    Only those are compared: GPUs differ in optional sections (MIG devices) otherwise."""
    if last.empty():
        return f"the block of {last.key} is empty: the output was cut short"
    if first.has("Product Name"):
        missing = [] if last.has("Processes") else ["Processes"]
    else:  # the same sections, down to their last line, by name: a key cut mid-line is none of them
        have = {n.key for n in last.walk()}
        missing = [n.key for n in first.walk() if n.key not in have]
    if not missing:
        return ""
    return f"the block of {last.key} ends before {', '.join(missing[:3])!r}: the output was cut short"


def _cut_last_value(first: Node | LazyNode, last: Node | LazyNode, text: str) -> str:
    """Why an unterminated last line was cut inside it, or ''. A missing final newline alone is
    no cut (docs/burnin.md), but a line that the first GPU's block prints with a value and the
    last prints without one ('Pending Page Blacklist  '), or a Yes/No the first spells whole and
    the last does not ('Pending Page Blacklist : N'), stopped mid-line."""
    if text.endswith("\n"):
        return ""
    tail = deque(last.walk(), maxlen=1)
    if not tail or tail[0].children:
        return ""
    end = tail[0]
    same = [n.value for n in first.walk() if n.key == end.key]
    if not same or same[-1] is None:
        return ""
    if end.value is None or (yes_no(same[-1]) is not None and yes_no(end.value) is None):
        return f"the block of {last.key} ends inside its {end.key!r} line: the output was cut short"
    return ""


@parser
def parse_query(text: str) -> SmiQuery:
    """``nvidia-smi -q`` (also ``-q -d PAGE_RETIREMENT`` and other ``-d`` partial views), and
    its XML form ``nvidia-smi -q -x``, read into the same tree (burnin.parsers.nvidia_smi_xml)."""
    if looks_like_xml(text):
        return _query(query_tree(text), text if text.endswith("\n") else text + "\n")
    return read_tree(text, lambda root: _query(root, text))


# Driver 610 appends a notice to the old version lines, "610.43.02 [Deprecated; will be removed in
# CUDA 14.0. Use KMD Version instead]", and prints "KMD Version" and "CUDA UMD Version" beside them
# (a real H200 capture: tests/fixtures/samples/nvidia_smi_q_h200_610_43_idle.txt).
_NOTICE = re.compile(r"\s*\[[^\]]*\]\s*$")


def _version(root: Node | LazyNode, new: str, old: str) -> str | None:
    """The version under its new name, else the old line less a trailing bracketed notice."""
    if (value := clean(root.get(new))) is not None:
        return value
    value = clean(root.get(old))
    return clean(_NOTICE.sub("", value)) if value is not None else None


def _query(root: Node | LazyNode, text: str) -> SmiQuery:
    gpus: list[GpuQuery] = []
    blocks: list[Node | LazyNode] = []
    for node in root.children:
        m = _GPU_HEADER_RE.match(node.key) if node.value is None else None
        if m:
            gpus.append(_gpu(m.group(1), node))
            blocks.append(node)
    driver = _version(root, "KMD Version", "Driver Version")
    attached = to_int(root.get("Attached GPUs"))
    if not gpus and driver is None and attached is None:
        if failure := smi_failure(text):
            raise ParseError(f"nvidia-smi reported an error: {failure.line}")
        raise ParseError("not nvidia-smi -q output: no 'Driver Version', 'Attached GPUs' or GPU block")
    problems: list[str] = []
    if attached is not None and attached != len(gpus):
        problems.append(f"'Attached GPUs : {attached}' but {len(gpus)} GPU block(s) found")
    if blocks and (cut := _cut_block(blocks[0], blocks[-1]) or _cut_last_value(blocks[0], blocks[-1], text)):
        problems.append(cut)
    return SmiQuery(
        timestamp=clean(root.get("Timestamp")),
        driver_version=driver,
        cuda_version=_version(root, "CUDA UMD Version", "CUDA Version"),
        attached_gpus=attached,
        gpus=tuple(gpus),
        problems=tuple(problems),
    )


# ---------------------------------------------------------------------------------------------
# nvidia-smi nvlink -s
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NvlinkLink:
    number: int
    speed_gbps: float | None  # GB/s per link as printed ("26.562 GB/s"); None when inactive/N/A
    inactive: bool


@dataclass(frozen=True)
class NvlinkGpu:
    index: int
    name: str
    uuid: str | None
    links: tuple[NvlinkLink, ...]
    all_inactive: bool  # NVML printed "Unable to retrieve NVLink information as all links are inactive"
    # Why nvidia-smi listed no link for it, in its own words: NO_LINKS_MIG ("Nvlink queries are not
    # supported for Devices in MIG mode"), NO_LINKS_ABSENT ("Device does not have or support
    # Nvlink"), or "" (it listed them, or said nothing).
    no_links: str = ""


@dataclass(frozen=True)
class NvlinkStatus:
    gpus: tuple[NvlinkGpu, ...]
    # True when the "all links are inactive" message was printed at all (for any GPU, or with
    # no GPU line before it); see NvlinkGpu.all_inactive for which GPU.
    all_inactive: bool


_GPU_LINE_RE = re.compile(r"^GPU (\d+): (.*)$")
_UUID_RE = re.compile(r" \(UUID: ([^()]*)\)$")
_LINK_RE = re.compile(r"^\s*Link (\d+): (.*)$")


def _gpu_line(line: str) -> tuple[int, str, str | None] | None:
    """'GPU 0: NAME (UUID: GPU-...)' -> (0, 'NAME', 'GPU-...')."""
    if "GPU " not in line:  # most lines: no regex
        return None
    m = _GPU_LINE_RE.match(line.strip())
    if not m:
        return None
    rest = m.group(2).rstrip()
    uuid = _UUID_RE.search(rest)
    if uuid:
        return int(m.group(1)), rest[: uuid.start()].strip(), clean(uuid.group(1))
    return int(m.group(1)), rest.strip(), None


_ALL_INACTIVE_RE = re.compile(r"all links are inactive", re.I)
NO_LINKS_MIG = "mig"
NO_LINKS_ABSENT = "absent"
# nvidia-smi's whole sentence for a GPU whose links it does not list (a sentence cut short says
# nothing: the output stops inside it).
_NO_LINKS = {
    "Nvlink queries are not supported for Devices in MIG mode": NO_LINKS_MIG,
    "Device does not have or support Nvlink": NO_LINKS_ABSENT,
}
_SPEED_RE = re.compile(r"^([\d.]+)\s*GB/s")


def _all_inactive(line: str) -> bool:
    if line.isascii():  # there IGNORECASE is str.lower()'s, and a substring test is enough
        return "all links are inactive" in line.lower()
    return _ALL_INACTIVE_RE.search(line) is not None


def _nvlink_line(line: str) -> tuple[str, tuple | re.Match[str] | None]:
    """What a line of ``nvlink -s`` is: 'gpu' (with _gpu_line's GPU), 'inactive', 'no_links' (with
    why), 'link' (with its match) or ''."""
    if gpu := _gpu_line(line):
        return "gpu", gpu
    if _all_inactive(line):
        return "inactive", None
    if no_links := _NO_LINKS.get(line.strip()):
        return "no_links", no_links
    if m := _LINK_RE.match(line):
        return "link", m
    return "", None


def _nvlink_link(m: re.Match[str]) -> NvlinkLink:
    value = m.group(2).strip()
    speed = _SPEED_RE.match(value)
    inactive = "inactive" in value.lower()
    return NvlinkLink(int(m.group(1)), to_float(speed.group(1)) if speed else None, inactive)


@parser
def parse_nvlink_status(text: str) -> NvlinkStatus:
    """``nvidia-smi nvlink -s`` / ``--status``."""
    gpus: list[NvlinkGpu] = []
    current: dict | None = None
    orphan_inactive = False
    # Each line is read once per output: the GPUs of a node print the same link lines ('Link 0:
    # 26.562 GB/s'), and NvlinkLink is immutable, so they share one.
    kinds: dict[str, tuple] = {}
    links: dict[str, NvlinkLink] = {}

    def flush() -> None:
        if current is not None:
            gpus.append(
                NvlinkGpu(
                    current["index"],
                    current["name"],
                    current["uuid"],
                    tuple(current["links"]),
                    current["inactive"],
                    current["no_links"],
                )
            )

    for line in split_lines(text):
        kind, found = kinds.get(line) or kinds.setdefault(line, _nvlink_line(line))
        if kind == "gpu":
            flush()
            current = {
                "index": found[0],
                "name": found[1],
                "uuid": found[2],
                "links": [],
                "inactive": False,
                "no_links": "",
            }
        elif kind == "inactive":
            if current is None:
                orphan_inactive = True
            else:
                current["inactive"] = True
        elif kind == "no_links" and current is not None:
            current["no_links"] = found
        elif kind == "link" and current is not None:
            link = links.get(line)
            if link is None:
                link = links[line] = _nvlink_link(found)
            current["links"].append(link)
    flush()
    if not gpus and not orphan_inactive:
        raise ParseError("not 'nvidia-smi nvlink -s' output: no 'GPU n:' line")
    return NvlinkStatus(tuple(gpus), orphan_inactive or any(g.all_inactive for g in gpus))


# ---------------------------------------------------------------------------------------------
# nvidia-smi -L
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MigDevice:
    profile: str  # e.g. "2g.20gb"
    device: int
    uuid: str | None


@dataclass(frozen=True)
class GpuListEntry:
    index: int
    name: str
    uuid: str | None
    mig_devices: tuple[MigDevice, ...] = ()


_MIG_LINE_RE = re.compile(r"^\s+MIG\s+(\S+)\s+Device\s+(\d+):\s*(?:\(UUID: ([^)]*)\))?")


# The lines of `nvidia-smi -L` output that are no GPU: "No devices were found", and the command
# itself echoed before its output in a pasted capture (':nvidia-smi -L', '$ nvidia-smi -L',
# 'root@node1:~# nvidia-smi -L').
_LIST_OTHER_RE = re.compile(r"\s*(?:No devices were found|(?:\S*[#$>:]\s*)?nvidia-smi -L)\s*")


@parser
def parse_gpu_list(text: str) -> list[GpuListEntry]:
    """``nvidia-smi -L``: GPUs in order; indented ``MIG ...`` lines belong to the GPU above.

    "No devices were found" gives an empty list; text with no GPU line at all is a ParseError,
    and so is any other line: ``-L`` prints nothing else, and GPU lines inside another tool's
    output (``nvlink -s``, gpu_burn) must not read as a GPU list.
    """
    gpus: list[GpuListEntry] = []
    for line in split_lines(text):
        if gpu := _gpu_line(line):
            if line[:1].isspace():
                raise ParseError(f"not 'nvidia-smi -L' output: an indented GPU line: {line.strip()[:120]!r}")
            gpus.append(GpuListEntry(*gpu))
        elif (m := _MIG_LINE_RE.match(line)) and gpus:
            last = gpus[-1]
            mig = MigDevice(m.group(1), int(m.group(2)), clean(m.group(3)))
            gpus[-1] = GpuListEntry(last.index, last.name, last.uuid, (*last.mig_devices, mig))
        elif line.strip() and not _LIST_OTHER_RE.fullmatch(line):
            raise ParseError(f"not 'nvidia-smi -L' output: a line that is no GPU: {line.strip()[:120]!r}")
    if not gpus and not re.search(r"No devices were found", text):
        raise ParseError("not 'nvidia-smi -L' output: no 'GPU n: ...' line")
    last = text.rpartition("\n")[2]
    if last.strip() and gpus and (gpus[-1].uuid is None or "(UUID:" not in last) and _gpu_line(last):
        # A GPU line ends with its '(UUID: ...)': one without it, unfinished, was cut there.
        raise ParseError(
            f"the output ends in a GPU line it does not finish: it was cut ({last.strip()[:80]!r})"
        )
    return gpus


# ---------------------------------------------------------------------------------------------
# --query-gpu=index,clocks_throttle_reasons.active,temperature.gpu,power.draw sampling
# ---------------------------------------------------------------------------------------------

# NVML nvmlClocksEventReason* / nvmlClocksThrottleReason* bits (nvml.h).
THROTTLE_REASON_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def decode_throttle_reasons(mask: int) -> list[str]:
    """Names of the bits set in a clocks throttle/event reasons mask, lowest bit first.

    Unknown bits come out as 'unknown_0x...'. A negative or non-int mask is a ParseError.
    """
    if isinstance(mask, bool) or not isinstance(mask, int) or mask < 0:
        raise ParseError(f"not a throttle reasons mask: {mask!r}")
    names = []
    bit = 1
    while bit <= mask:
        if mask & bit:
            names.append(THROTTLE_REASON_BITS.get(bit, f"unknown_0x{bit:x}"))
        bit <<= 1
    return names


@dataclass(frozen=True)
class ThrottleSample:
    index: int
    reasons_mask: int | None  # None when [N/A]
    temperature_c: float | None
    power_draw_w: float | None

    @property
    def reasons(self) -> list[str]:
        return decode_throttle_reasons(self.reasons_mask) if self.reasons_mask is not None else []


def _mask(value: str) -> int | None:
    value = value.strip()
    if is_na(value):
        return None
    try:
        return int(value, 0) if value.lower().startswith("0x") else int(value)
    except ValueError:
        return None


@parser
def parse_throttle_samples(text: str) -> list[ThrottleSample]:
    """Rows ``index, 0x...88, temp, power`` from repeated ``--query-gpu ... -lms`` sampling.

    Header rows, blank lines and rows that do not parse are skipped; units ('67 C', '690.12 W')
    and '[N/A]' are tolerated. No valid row at all is a ParseError.
    """
    samples: list[ThrottleSample] = []
    for line in split_lines(text):
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 2 or not re.fullmatch(r"\d+", fields[0]):
            continue
        mask = _mask(fields[1])
        if mask is None and not is_na(fields[1]):
            continue
        temp = to_float(fields[2]) if len(fields) > 2 else None
        power = to_float(fields[3]) if len(fields) > 3 else None
        samples.append(ThrottleSample(int(fields[0]), mask, temp, power))
    if not samples:
        raise ParseError("no throttle-reason sample rows ('index, 0x..., temp, power')")
    return samples


# ---------------------------------------------------------------------------------------------
# generic --query-gpu=... --format=csv
# ---------------------------------------------------------------------------------------------

_HEADER_FIELD_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(?: \[[^\]]*\])?$")


def _header_names(fields: list[str]) -> list[str] | None:
    if fields and all(_HEADER_FIELD_RE.match(f) for f in fields):
        return [re.sub(r" \[[^\[\]]*\]$", "", f) for f in fields]
    return None


@parser
def parse_query_gpu_csv(text: str, fields: list[str] | None = None) -> list[dict[str, str | None]]:
    """``nvidia-smi --query-gpu=a,b,c --format=csv``: one dict per data row, keyed by header
    name without its unit ('memory.used [MiB]' -> 'memory.used'); values stripped strings,
    None for '[N/A]' / '[Not Supported]'.

    A repeated header starts a new section (e.g. idle then under-load captures). Lines that are
    neither header nor a row of the current header's width (prompts, comments) are skipped.
    With ``fields`` given (for ``noheader`` output) rows are keyed by those names.
    """
    return [row for section in parse_query_gpu_csv_sections(text, fields) for row in section]


@parser
def parse_query_gpu_csv_sections(
    text: str, fields: list[str] | None = None
) -> list[list[dict[str, str | None]]]:
    """The rows of each capture in a --query-gpu CSV, as parse_query_gpu_csv reads them: a header
    line starts a section (one capture lists every GPU it was asked about once)."""
    names: list[str] | None = list(fields) if fields else None
    sections: list[list[dict[str, str | None]]] = [[]]
    seen_header = names is not None
    short_last = ""  # the last line, when it is a row with fewer fields than its header: cut
    for line in split_lines(text):
        if not line.strip() or "--query-" in line or "--format" in line:
            continue  # blank, or the command line itself pasted above its output
        cells = [c.strip() for c in line.split(",")]
        header = _header_names(cells)
        if header is not None and (fields is None or header == names):
            names = header if fields is None else names
            seen_header = True
            if sections[-1]:
                sections.append([])
            continue
        short_last = ""
        if names is None or len(cells) != len(names):
            if names is not None and 1 < len(cells) < len(names):
                short_last = f"the last row has {len(cells)} of {len(names)} fields: the output was cut short"
            continue
        sections[-1].append(
            {n: clean(c) if not is_na(c) else None for n, c in zip(names, cells, strict=False)}
        )
    if not seen_header:
        raise ParseError("no CSV header line ('index, pcie.link.gen.current, ...') found")
    if short_last:
        raise ParseError(short_last)
    return [section for section in sections if section]


# ---------------------------------------------------------------------------------------------
# nvidia-smi topo -m
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Topology:
    devices: tuple[str, ...]  # matrix labels in order: GPU0..GPUn, NIC0..NICm (or mlx5_N on old drivers)
    matrix: dict[str, dict[str, str]]  # matrix[row][col] = 'X', 'NV18', 'PIX', 'PXB', 'NODE', 'SYS', ...
    cpu_affinity: dict[str, str | None]
    numa_affinity: dict[str, str | None]
    gpu_numa_id: dict[str, str | None]
    nic_legend: dict[str, str]  # 'NIC0' -> 'mlx5_0'
    # Rows not read as links, with why: cut short, or a cell that is no link of the legend (a
    # saved copy whose tabs ran cells together: 'PXBNODE', 'SYSSYS'; its cells shift left).
    damaged: dict[str, str] = field(default_factory=dict)

    def link(self, a: str, b: str) -> str | None:
        return self.matrix.get(a, {}).get(b)


_AFFINITY_COLUMNS = ("cpu affinity", "numa affinity", "gpu numa id")
# The matrix's cells, as its Legend names them (X, SYS, NODE, PHB, PXB, PIX, NV#); SOC is the
# older drivers' name for SYS (nvidia-smi topo -m, NVIDIA's nvidia-smi manual).
_LINK_CELL = re.compile(r"X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC")


@parser
def parse_topology(text: str) -> Topology:
    """``nvidia-smi topo -m``. Cells are tab-separated and may be empty (CPU Affinity), so rows
    are split on tabs; text whose tabs were lost is split on runs of spaces as a fallback."""
    lines = split_lines(text)
    header_idx = None
    for i, line in enumerate(lines):
        cells = [c.strip() for c in re.split(r"\t| {2,}", line.strip())]
        if "GPU0" in cells and line[:1].isspace():
            header_idx = i
            break
    if header_idx is None:
        raise ParseError("not 'nvidia-smi topo -m' output: no header row with GPU0")
    header_line = lines[header_idx]
    tabbed = "\t" in header_line
    head = [c.strip() for c in (header_line.split("\t") if tabbed else re.split(r" {2,}", header_line))]
    head = [c for c in head if c]
    devices = []
    extra_cols = []
    for cell in head:
        if cell.lower() in _AFFINITY_COLUMNS or " " in cell:
            extra_cols.append(cell.lower())
        elif not extra_cols:
            devices.append(cell)
    matrix: dict[str, dict[str, str]] = {}
    affinity: dict[str, dict[str, str | None]] = {c: {} for c in _AFFINITY_COLUMNS}
    legend: dict[str, str] = {}
    damaged: dict[str, str] = {}
    for line in lines[header_idx + 1 :]:
        if m := re.match(r"^\s*(NIC\d+|[A-Za-z]+\d+):\s*(\S+)\s*$", line):
            legend[m.group(1)] = m.group(2)
            continue
        label = line.split("\t", 1)[0].strip() if tabbed else (line.split() or [""])[0]
        if label not in devices or line[:1].isspace():
            continue
        cells = line.split("\t")[1:] if tabbed else line.split()[1:]
        cells = [c.strip() for c in cells]
        row = cells[: len(devices)]
        if len(row) < len(devices):
            damaged[label] = f"{len(row)} of {len(devices)} cells"
            continue
        if bad := [c for c in row if not _LINK_CELL.fullmatch(c)]:
            damaged[label] = f"cells that are no link: {', '.join(repr(c) for c in bad)}"
            continue
        matrix[label] = dict(zip(devices, row, strict=False))
        rest = cells[len(devices) :]
        # Real output puts an extra tab before 'GPU NUMA ID': first columns map from the left,
        # the last one from the right.
        cols = [c for c in extra_cols if c in _AFFINITY_COLUMNS]
        for j, col in enumerate(cols):
            if j == len(cols) - 1 and len(rest) > len(cols):
                value = rest[-1]
            else:
                value = rest[j] if j < len(rest) else ""
            affinity[col][label] = clean(value)
    if not matrix:
        raise ParseError("'nvidia-smi topo -m' header without any matrix row")
    return Topology(
        devices=tuple(devices),
        matrix=matrix,
        cpu_affinity=affinity["cpu affinity"],
        numa_affinity=affinity["numa affinity"],
        gpu_numa_id=affinity["gpu numa id"],
        nic_legend=legend,
        damaged=damaged,
    )


# ---------------------------------------------------------------------------------------------
# default nvidia-smi table
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableGpu:
    index: int
    name: str  # may be truncated by nvidia-smi ("NVIDIA A100-SXM4-...")
    persistence_mode: bool | None  # Persistence-M On/Off
    bus_id: str
    display_active: bool | None
    volatile_uncorrected_ecc: int | None  # None when N/A
    fan: str | None
    temperature_c: int | None
    perf_state: str | None
    power_draw_w: float | None
    power_cap_w: float | None
    memory_used_mib: int | None
    memory_total_mib: int | None
    utilization_pct: int | None
    compute_mode: str | None
    mig_mode: str | None
    # The columns nvidia-smi printed 'ERR!' for (it could not read them: 'Fan', 'Temp', 'Pwr:Usage'...).
    unreadable: tuple[str, ...] = ()


@dataclass(frozen=True)
class SmiTable:
    smi_version: str | None
    driver_version: str | None
    cuda_version: str | None
    gpus: tuple[TableGpu, ...]
    no_running_processes: bool
    # The table's structure (docs/burnin.md, "A cut output"): nvidia-smi closes its GPU rows, and
    # then its Processes box, with a border as wide as the table. ``whole``: the header line and a
    # GPU row are there and the last table line is such a border. ``lists_processes``: whole and
    # the Processes box is there: every GPU was listed before it (a table ending at a GPU's
    # border may have been cut before the next GPU).
    whole: bool = False
    lists_processes: bool = False


_TABLE_BUS_RE = re.compile(r"^([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+(On|Off|N/A)$")


def _cells(line: str) -> list[str] | None:
    """The stripped cells of a '| a | b | c |' table line (None for other lines)."""
    if not line.startswith("|"):
        return None
    return [c.strip() for c in line.split("|")[1:-1]]


def _table_gpu(row1: list[str], row2: list[str] | None, row3: list[str] | None) -> TableGpu | None:
    """The GPU rows of one table block: 'idx name persistence | bus disp | ecc', then
    'fan temp perf draw / cap | used / total | util compute', then '| | mig'."""
    words = row1[0].split() if len(row1) >= 3 else []
    bus = _TABLE_BUS_RE.match(row1[1]) if len(row1) >= 3 else None
    if len(words) < 3 or not words[0].isdigit() or words[-1] not in ("On", "Off", "N/A") or not bus:
        return None
    name = row1[0][len(words[0]) : len(row1[0]) - len(words[-1])].strip()
    left = row2[0].split() if row2 and len(row2) >= 3 else []
    power = [w for w in left[3:] if w != "/"]
    memory = re.findall(r"(?<!\d)(\d+)MiB", row2[1]) if row2 and len(row2) >= 3 else []
    util = row2[2].split() if row2 and len(row2) >= 3 else []
    shown = {
        "Volatile Uncorr. ECC": row1[2],
        **dict(zip(("Fan", "Temp", "Perf"), left, strict=False)),
        **dict(zip(("Pwr:Usage", "Pwr:Cap"), power, strict=False)),
        "GPU-Util": util[0] if util else None,
    }
    return TableGpu(
        index=int(words[0]),
        name=name,
        persistence_mode=yes_no(words[-1]),
        bus_id=bus.group(1),
        display_active=yes_no(bus.group(2)),
        volatile_uncorrected_ecc=to_int(row1[2]),
        fan=clean(left[0]) if left else None,
        temperature_c=to_int(left[1]) if len(left) > 1 else None,
        perf_state=clean(left[2]) if len(left) > 2 else None,
        power_draw_w=to_float(power[0]) if power else None,
        power_cap_w=to_float(power[1]) if len(power) > 1 else None,
        memory_used_mib=int(memory[0]) if memory else None,
        memory_total_mib=int(memory[1]) if len(memory) > 1 else None,
        utilization_pct=to_int(util[0]) if util else None,
        compute_mode=clean(" ".join(util[1:])) if len(util) > 1 else None,
        mig_mode=clean(row3[-1]) if row3 and len(row3) >= 3 and not row3[0] else None,
        unreadable=tuple(column for column, value in shown.items() if value == "ERR!"),
    )


_TABLE_BORDER = re.compile(r"^\+-[-+]*\+$")


def _table_structure(lines: list[str], gpus: int) -> tuple[bool, bool]:
    """(whole, lists_processes) of a table's lines (SmiTable)."""
    table = [ln.rstrip() for ln in lines if ln.startswith(("+", "|"))]
    if not table or not gpus:
        return False, False
    width = len(table[0])
    header = next((ln for ln in table if "NVIDIA-SMI" in ln), None)
    whole = (
        header is not None
        and len(header) == width
        and header.endswith("|")
        and bool(_TABLE_BORDER.match(table[-1]))
        and len(table[-1]) == width
    )
    return whole, whole and any(re.match(r"^\|\s*Processes:", ln) for ln in table)


@parser
def parse_table(text: str) -> SmiTable:
    """The default ``nvidia-smi`` table: GPU count, names, Persistence-M, Volatile Uncorr. ECC..."""
    raw = split_lines(text)
    lines = [_cells(ln.rstrip()) for ln in raw]
    # "Driver Version:" and "CUDA Version:" until driver 610, "KMD Version:" and "CUDA UMD Version:" since.
    head = re.search(
        r"NVIDIA-SMI\s+(\S+)\s+(?:Driver|KMD) Version:\s*(\S+)(?:\s+CUDA (?:UMD )?Version:\s*(\S+))?", text
    )
    gpus: list[TableGpu] = []
    for i, row in enumerate(lines):
        if row is None:
            continue
        row2 = lines[i + 1] if i + 1 < len(lines) else None
        row3 = lines[i + 2] if i + 2 < len(lines) else None
        gpu = _table_gpu(row, row2, row3)
        if gpu is not None:
            gpus.append(gpu)
    if head is None and not gpus:
        raise ParseError(
            "not the nvidia-smi table: no 'NVIDIA-SMI ... Driver (or KMD) Version' header or GPU row"
        )
    whole, lists_processes = _table_structure(raw, len(gpus))
    return SmiTable(
        smi_version=head.group(1) if head else None,
        driver_version=head.group(2) if head else None,
        cuda_version=clean(head.group(3)) if head else None,
        gpus=tuple(gpus),
        no_running_processes="No running processes found" in text,
        whole=whole,
        lists_processes=lists_processes,
    )


# ---------------------------------------------------------------------------------------------
# A bare Fabric block of `nvidia-smi -q` (`nvidia-smi -q | grep -A7 Fabric`, pasted in a ticket)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FabricBlock:
    """One ``Fabric`` block without the GPU block around it: the fields named as GpuQuery's, so
    that the fabric check reads either."""

    fabric_state: str | None
    fabric_status: str | None
    fabric_clique_id: str | None
    fabric_cluster_uuid: str | None
    fabric_health: str | None
    fabric_bandwidth: str | None


_FABRIC_LINE = re.compile(r"^[ \t]*Fabric[ \t]*$", re.MULTILINE)
_WHOLE_QUERY = re.compile(
    r"^(?:=+NVSMI LOG=+|Attached GPUs\s*:|GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:)", re.MULTILINE
)


@parser
def parse_fabric_excerpt(text: str) -> tuple[FabricBlock, ...] | None:
    """The Fabric blocks of a text that holds them bare: no NVSMI LOG banner, no 'Attached GPUs',
    no GPU block (those are a whole or cut `nvidia-smi -q`, which parse_query reads). None when the
    text is not such an excerpt, or holds no Fabric block with a State line."""
    if _WHOLE_QUERY.search(text) or not _FABRIC_LINE.search(text):
        return None
    blocks = tuple(
        FabricBlock(*_fabric(node))
        for node in tree(split_lines(text)).walk()
        if node.key.lower() == "fabric" and node.value is None and node.find("State") is not None
    )
    return blocks or None
