"""``nvidia-smi -q -x``: the XML form of ``nvidia-smi -q``, read into the tree the text form makes
(burnin.parsers.smi_tree), so that one reader, burnin.parsers.nvidia_smi, judges both.

The XML names each element in snake case where the text prints a label ('<product_name>' for
'Product Name', '<pci_gpu_link_info><pcie_gen><max_link_gen>' for 'GPU Link Info > PCIe
Generation > Max'); ``_LABELS`` gives the label of every element the reader asks for, and any
other element keeps its tag. Real captures of the DTD v13 layout (drivers 570-595: 8x H100, 8x
B200, 4x GB200, 4x GB300) are tests/fixtures/samples/nvidia_smi_q_x_xml_*.xml. A document that is
not well formed (an output cut short) is no output at all: a ParseError, never a tree of what
came before the cut. Pure: text in, tree out.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from burnin.parsers.errors import ParseError
from burnin.parsers.smi_tree import Node

_ROOT = "nvidia_smi_log"

# Element -> the label `nvidia-smi -q` prints for it (the text reader's keys).
_LABELS: dict[str, str] = {
    "timestamp": "Timestamp",
    "driver_version": "Driver Version",
    "cuda_version": "CUDA Version",
    "kmd_version": "KMD Version",
    "cuda_umd_version": "CUDA UMD Version",
    "attached_gpus": "Attached GPUs",
    "product_name": "Product Name",
    "serial": "Serial Number",
    "uuid": "GPU UUID",
    "vbios_version": "VBIOS Version",
    "minor_number": "Minor Number",
    "persistence_mode": "Persistence Mode",
    "mig_mode": "MIG Mode",
    "current_mig": "Current",
    "pending_mig": "Pending",
    "gpu_reset_status": "GPU Reset Status",
    "reset_required": "Reset Required",
    "drain_and_reset_recommended": "Drain and Reset Recommended",
    "ecc_mode": "ECC Mode",
    "current_ecc": "Current",
    "pending_ecc": "Pending",
    "ecc_errors": "ECC Errors",
    "volatile": "Volatile",
    "aggregate": "Aggregate",
    "single_bit": "Single Bit",  # the Volta-era counters, per memory
    "double_bit": "Double Bit",
    "retired_pages": "Retired Pages",
    "pending_blacklist": "Pending Page Blacklist",
    "pending_retirement": "Pending Page Retirement",
    "remapped_rows": "Remapped Rows",
    "remapped_row_corr": "Correctable Error",
    "remapped_row_unc": "Uncorrectable Error",
    "remapped_row_pending": "Pending",
    "remapped_row_failure": "Remapping Failure Occurred",
    "row_remapper_histogram": "Bank Remap Availability Histogram",
    "row_remapper_histogram_max": "Max",
    "row_remapper_histogram_high": "High",
    "row_remapper_histogram_partial": "Partial",
    "row_remapper_histogram_low": "Low",
    "row_remapper_histogram_none": "None",
    "pci": "PCI",
    "pci_gpu_link_info": "GPU Link Info",
    "pcie_gen": "PCIe Generation",
    "max_link_gen": "Max",
    "current_link_gen": "Current",
    "device_current_link_gen": "Device Current",
    "max_device_link_gen": "Device Max",
    "max_host_link_gen": "Host Max",
    "link_widths": "Link Width",
    "max_link_width": "Max",
    "current_link_width": "Current",
    "replay_counter": "Replays Since Reset",
    "replay_rollover_counter": "Replay Number Rollovers",
    "clocks_event_reasons": "Clocks Event Reasons",
    "clocks_throttle_reasons": "Clocks Throttle Reasons",  # drivers before 535
    "fabric": "Fabric",
    "state": "State",
    "status": "Status",
    "cliqueId": "CliqueId",
    "clusterUuid": "ClusterUUID",
    "health": "Health",
    "summary": "Summary",
    "bandwidth": "Bandwidth",
    "temperature": "Temperature",
    "gpu_temp": "GPU Current Temp",
    "gpu_power_readings": "GPU Power Readings",
    "power_readings": "Power Readings",
    "power_draw": "Power Draw",
    "instant_power_draw": "Instantaneous Power Draw",
    "average_power_draw": "Average Power Draw",
    "current_power_limit": "Current Power Limit",
    "enforced_power_limit": "Enforced Power Limit",
    "power_limit": "Power Limit",
    "processes": "Processes",
}
# A clock event reason is '<clocks_event_reason_gpu_idle>' where the text prints 'Idle': the
# reader names reasons in snake case, so the tag less its prefix is the name.
_REASON_PREFIX = re.compile(r"^clocks_(?:event|throttle)_reason_")
# Retired pages: '<multiple_single_bit_retirement><retired_count>' is the text's 'Single Bit ECC'.
_RETIRED_COUNTS = {
    "multiple_single_bit_retirement": "Single Bit ECC",
    "double_bit_retirement": "Double Bit ECC",
}


# Where the document starts: its declaration, DOCTYPE or root element, at the start of a line (a
# saved output may begin with the command line or a note above it).
_START = re.compile(rf"^(?:<\?xml\b|<!DOCTYPE {_ROOT}\b|<{_ROOT}>)", re.MULTILINE)
_HEAD = 4096  # where the start must be: nvidia-smi prints it first


def looks_like_xml(text: str) -> bool:
    """Whether the text is an ``nvidia-smi -q -x`` document (its declaration, DOCTYPE or root)."""
    return _document_start(text) is not None


def _document_start(text: str) -> int | None:
    m = _START.search(text[:_HEAD])
    return m.start() if m and f"<{_ROOT}" in text[: _HEAD * 2] else None


def query_tree(text: str) -> Node:
    """The document as the tree of ``nvidia-smi -q``: a 'GPU <bus id>' section per <gpu>."""
    start = _document_start(text)
    if start is None:
        raise ParseError(f"not nvidia-smi -q -x output: no <{_ROOT}> document")
    try:
        root = ET.fromstring(text[start:].strip())
    except ET.ParseError as exc:
        raise ParseError(
            f"not a whole nvidia-smi -q -x document (not well formed: {exc}): cut short?"
        ) from None
    if root.tag != _ROOT:
        raise ParseError(f"not nvidia-smi -q -x output: the root is <{root.tag}>, not <{_ROOT}>")
    top = Node(key=_ROOT, value=None, indent=-1)
    for element in root:
        if element.tag == "gpu":
            gpu = Node(key=f"GPU {element.get('id', '')}".strip(), value=None, indent=0)
            gpu.children = [_node(child, 4) for child in element]
            top.children.append(gpu)
        else:
            top.children.append(_node(element, 0))
    return top


def _node(element: ET.Element, indent: int) -> Node:
    tag = element.tag
    if tag in _RETIRED_COUNTS:
        return Node(key=_RETIRED_COUNTS[tag], value=_text(element.find("retired_count")), indent=indent)
    children = list(element)
    if not children:
        return Node(key=_label(tag), value=_text(element), indent=indent)
    node = Node(key=_label(tag), value=None, indent=indent)
    reasons = tag in ("clocks_event_reasons", "clocks_throttle_reasons")
    for child in children:
        sub = _node(child, indent + 4)
        if reasons:
            sub.key = _REASON_PREFIX.sub("", child.tag)
        node.children.append(sub)
    return node


def _label(tag: str) -> str:
    return _LABELS.get(tag, tag)


def _text(element: ET.Element | None) -> str | None:
    if element is None or element.text is None:
        return None
    return element.text.strip()
