"""Host hardware inventory and health: dmidecode -t memory, lscpu (text and -J), the NVMe SMART
log as smartctl -j and nvme smart-log -o json print it, and fio's JSON (pure).

Samples: tests/fixtures/samples/{dmidecode,lscpu,smartctl,nvme_smart_log,fio}_* (their rows in index.tsv).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from burnin.parsers._common import load_json, number, parser, split_lines
from burnin.parsers.errors import ParseError

# ---- dmidecode -t memory ---------------------------------------------------------------------


@dataclass(frozen=True)
class Dimm:
    """One 'Memory Device' (SMBIOS type 17) record: a slot, populated or not."""

    locator: str  # 'DIMM_A1': the slot as the board is silk-screened
    bank: str
    size_mib: int  # 0: 'No Module Installed'
    speed_mts: int | None  # rated speed
    configured_speed_mts: int | None  # what it runs at
    manufacturer: str
    part_number: str
    serial: str

    @property
    def populated(self) -> bool:
        return self.size_mib > 0

    @property
    def name(self) -> str:
        return f"{self.locator} ({self.bank})" if self.bank else self.locator


# The last field dmidecode (3.x, dmi_decode case 17) prints for a type 17 record of at least
# this many bytes: a record without it was cut short. Later SMBIOS fields may follow it.
_LAST_FIELD = (
    (0x28, "Configured Voltage"),
    (0x22, "Configured Memory Speed"),
    (0x1C, "Rank"),
    (0x17, "Part Number"),
    (0, "Type Detail"),
)
_SIZE_UNITS = {"kB": 1 / 1024, "KB": 1 / 1024, "MB": 1, "GB": 1024, "TB": 1024 * 1024}
_NOT_SET = {"", "not specified", "unknown", "not provided", "none", "no dimm"}


_SPEED_RE = re.compile(r"(\d{1,6}) (?:MT/s|MHz)")
_SIZE_RE = re.compile(r"(\d{1,7}) (kB|KB|MB|GB|TB)")
_BANNER_RE = re.compile(r"^# dmidecode \d", re.MULTILINE)
# A type 17 record's first line and its second (lines[0] and lines[1]).
_TYPE_17_RE = re.compile(r"(Handle 0x[0-9A-Fa-f]+, DMI type 17,[^\n]*)\n([^\n]*)")
_LENGTH_RE = re.compile(r"Handle 0x[0-9A-Fa-f]+, DMI type 17, (\d+) bytes")
# The fields _dimm reads, from the lines of one tab, a key, ':' and a value: the key stripped as
# str.strip() would ([^\S\n]: whitespace within the line), the value with its leading whitespace
# only (every reader strips it; an all-blank value is '', as falsy as when stripped). One search a
# record instead of tests on each line.
_KEYS = (
    "Locator", "Bank Locator", "Size", "Speed", "Configured Memory Speed", "Configured Clock Speed",
    "Manufacturer", "Part Number", "Serial Number", "Configured Voltage", "Rank", "Type Detail",
)  # fmt: skip
_FIELD_RE = re.compile(rf"\n\t(?!\t)[^\S\n]*({'|'.join(_KEYS)})[^\S\n]*:[^\S\n]*([^\n]*)")
# 'Number Of Devices' at a line's start, found in '\n' + text: '^' in MULTILINE mode would be
# tried at every position of the text, '\n\t' is searched for as a string.
_DEVICES_RE = re.compile(r"\n\tNumber Of Devices: (\d{1,5})\s*$", re.MULTILINE)


def _text(value: str | None) -> str:
    value = (value or "").strip()
    return "" if value.lower() in _NOT_SET else value


def _speed(value: str | None) -> int | None:
    m = _SPEED_RE.fullmatch((value or "").strip())
    return int(m.group(1)) if m else None


def _size_mib(value: str, locator: str) -> int:
    value = value.strip()
    if value.lower() in ("no module installed", "not installed", "0 mb", "0 gb"):
        return 0
    m = _SIZE_RE.fullmatch(value)
    if not m:
        raise ParseError(f"dmidecode: {locator}: size {value[:40]!r} is not a size")
    return int(int(m.group(1)) * _SIZE_UNITS[m.group(2)])


@parser
def parse_dmidecode_memory(text: str) -> list[Dimm]:
    """Every memory slot (type 17 record), in order. Not dmidecode's output: ParseError."""
    if "DMI type 17" not in text and not _BANNER_RE.search(text):
        raise ParseError("not dmidecode output: no '# dmidecode' banner")
    dimms: list[Dimm] = []
    body = text.replace("\r\n", "\n") if "\r" in text else text
    for start, end in _records(body):
        if not (head := _TYPE_17_RE.match(body, start, end)):
            continue
        if head.group(2).strip() != "Memory Device":
            raise ParseError("dmidecode: a type 17 record that is not 'Memory Device'")
        fields = dict(_FIELD_RE.findall(body, head.end(), end))  # the last of a key's lines wins
        dimms.append(_dimm(head.group(1), fields))
    if not dimms:
        raise ParseError("dmidecode: no 'Memory Device' (type 17) record")
    # Each 'Physical Memory Array' (type 16) says how many slots it has: fewer records = cut short.
    slots = sum(int(n) for n in _DEVICES_RE.findall("\n" + text))
    if slots and slots != len(dimms):
        raise ParseError(
            f"dmidecode: {len(dimms)} memory device record(s) of the {slots} slots listed: cut short"
        )
    return dimms


def _records(text: str) -> list[tuple[int, int]]:
    """Where each record is, as ``re.split(r"\\n(?=Handle 0x)", text)`` cuts them (str.find is
    faster than the regex, which is tried at every line's start; no record is copied)."""
    spans, start = [], 0
    while (end := text.find("\nHandle 0x", start)) >= 0:
        spans.append((start, end))
        start = end + 1
    spans.append((start, len(text)))
    return spans


def _last_field(length: int) -> str:
    for size, key in _LAST_FIELD:
        if length >= size:
            return key
    return _LAST_FIELD[-1][1]  # never reached: its size is 0


def _dimm(head: str, fields: dict[str, str]) -> Dimm:
    """The record whose first line is ``head``, from its fields; a ParseError when cut short."""
    locator = _text(fields.get("Locator")) or head.split(",")[0]
    length = int(_LENGTH_RE.match(head).group(1))
    last = _last_field(length)
    if last not in fields and not (last == "Configured Memory Speed" and "Configured Clock Speed" in fields):
        raise ParseError(f"dmidecode: {locator}: no {last!r} line in a {length}-byte record: cut short")
    if "Size" not in fields:  # every Memory Device record prints it, "No Module Installed" for an empty slot
        raise ParseError(f"dmidecode: {locator}: no 'Size' line: not a whole record")
    rated = fields.get("Speed")
    configured = fields.get("Configured Memory Speed") or fields.get("Configured Clock Speed")
    speed = _speed(rated)
    return Dimm(
        locator=locator,
        bank=_text(fields.get("Bank Locator")),
        size_mib=_size_mib(fields["Size"], locator),
        speed_mts=speed,
        configured_speed_mts=speed if configured == rated else _speed(configured),  # mostly: read once
        manufacturer=_text(fields.get("Manufacturer")),
        part_number=_text(fields.get("Part Number")),
        serial=_text(fields.get("Serial Number")),
    )


# ---- lscpu ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CpuInfo:
    model_name: str
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    cpus: int
    numa_nodes: int | None

    @property
    def cores(self) -> int:
        return self.sockets * self.cores_per_socket


def _cpu_fields(pairs: list[tuple[str, str]]) -> CpuInfo:
    fields: dict[str, str] = {}
    for key, value in pairs:
        fields.setdefault(key.strip().rstrip(":"), value.strip())
    if "Architecture" not in fields or "CPU(s)" not in fields:
        raise ParseError("not lscpu output: no 'Architecture' and 'CPU(s)'")

    def count(key: str) -> int:
        if key not in fields:
            raise ParseError(f"lscpu: no {key!r}")
        return int(number(fields[key], f"lscpu {key}", minimum=1, maximum=1 << 20))

    model = fields.get("Model name", "")
    if not model:
        raise ParseError("lscpu: no 'Model name'")
    numa = fields.get("NUMA node(s)")
    return CpuInfo(
        model_name=model,
        sockets=count("Socket(s)"),
        cores_per_socket=count("Core(s) per socket"),
        threads_per_core=count("Thread(s) per core"),
        cpus=count("CPU(s)"),
        numa_nodes=int(number(numa, "lscpu NUMA node(s)", maximum=1 << 16)) if numa else None,
    )


@parser
def parse_lscpu(text: str) -> CpuInfo:
    """lscpu's text (flat or the indented tree of util-linux >= 2.38) or its -J JSON."""
    if text.lstrip().startswith("{"):
        try:
            data = load_json(text)
        except json.JSONDecodeError as exc:
            raise ParseError(f"lscpu -J: not JSON: {exc}") from None
        return _cpu_fields(list(_json_pairs(data)))
    pairs = []
    for line in split_lines(text):
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith(" " * 20):
            pairs.append((key, value))
    return _cpu_fields(pairs)


def _json_pairs(data: Any) -> Any:
    if not isinstance(data, dict) or not isinstance(data.get("lscpu"), list):
        raise ParseError("lscpu -J: no 'lscpu' list")
    stack = list(data["lscpu"])
    while stack:
        item = stack.pop(0)
        if not isinstance(item, dict) or not isinstance(item.get("field"), str):
            raise ParseError("lscpu -J: an entry with no 'field'")
        yield item["field"], str(item.get("data") or "")
        children = item.get("children") or []
        if not isinstance(children, list):
            raise ParseError("lscpu -J: 'children' is not a list")
        stack[:0] = children


# ---- NVMe SMART / health ----------------------------------------------------------------------

# NVMe base spec, SMART/Health log byte 0 (nvme-cli and smartctl print the same bits).
CRITICAL_WARNING_BITS = {
    0: "available spare below threshold",
    1: "temperature above or under threshold",
    2: "NVM subsystem reliability degraded",
    3: "media placed in read-only mode",
    4: "volatile memory backup device failed",
    5: "persistent memory region read-only",
}


@dataclass(frozen=True)
class NvmeHealth:
    device: str  # '/dev/nvme0' ('' when the tool does not say)
    model: str
    serial: str
    capacity_bytes: int | None
    critical_warning: int
    available_spare_pct: int
    spare_threshold_pct: int
    percentage_used: int
    media_errors: int
    temperature_c: int

    def warnings(self) -> list[str]:
        return [what for bit, what in CRITICAL_WARNING_BITS.items() if self.critical_warning >> bit & 1]

    @property
    def name(self) -> str:
        label = self.device or "NVMe"
        return f"{label} (serial {self.serial})" if self.serial else label


def _int(data: dict, key: str, tool: str, maximum: float = 1 << 64) -> int:
    if key not in data:
        raise ParseError(f"{tool}: no {key!r}")
    return int(number(data[key], f"{tool} {key}", maximum=maximum))


def _json_object(text: str, tool: str) -> dict:
    try:
        data = load_json(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{tool}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ParseError(f"{tool}: not a JSON object")
    return data


@parser
def parse_smartctl_nvme(text: str) -> NvmeHealth:
    """``smartctl -j -a /dev/nvmeN``: identity and the NVMe SMART/Health log."""
    data = _json_object(text, "smartctl -j")
    if not isinstance(data.get("smartctl"), dict):
        raise ParseError("smartctl -j: no 'smartctl' object: not smartctl's JSON")
    log = data.get("nvme_smart_health_information_log")
    if not isinstance(log, dict):
        messages = data["smartctl"].get("messages")
        why = messages[0].get("string") if isinstance(messages, list) and messages else ""
        raise ParseError(f"smartctl -j: no NVMe health log ({str(why)[:120] or 'not an NVMe device'})")
    device = data.get("device") if isinstance(data.get("device"), dict) else {}
    user = data.get("user_capacity") if isinstance(data.get("user_capacity"), dict) else {}
    capacity = data.get("nvme_total_capacity") or user.get("bytes")
    return NvmeHealth(
        device=str(device.get("name") or ""),
        model=str(data.get("model_name") or ""),
        serial=str(data.get("serial_number") or ""),
        capacity_bytes=int(number(capacity, "smartctl capacity")) if capacity is not None else None,
        critical_warning=_int(log, "critical_warning", "smartctl", 255),
        available_spare_pct=_int(log, "available_spare", "smartctl", 255),
        spare_threshold_pct=_int(log, "available_spare_threshold", "smartctl", 255),
        percentage_used=_int(log, "percentage_used", "smartctl", 255),
        media_errors=_int(log, "media_errors", "smartctl"),
        temperature_c=_int(log, "temperature", "smartctl", 1000),
    )


@parser
def parse_nvme_smart_log(text: str, device: str = "") -> NvmeHealth:
    """``nvme smart-log DEV -o json`` (nvme-cli 2.x): health only, temperature in kelvin."""
    data = _json_object(text, "nvme smart-log")
    if "critical_warning" not in data or "avail_spare" not in data:
        raise ParseError("nvme smart-log: no 'critical_warning' and 'avail_spare': not its JSON")
    warning = data["critical_warning"]  # an integer in nvme-cli 2.3; any other layout is a ParseError
    return NvmeHealth(
        device=device,
        model="",
        serial="",
        capacity_bytes=None,
        critical_warning=int(number(warning, "nvme smart-log critical_warning", maximum=255)),
        available_spare_pct=_int(data, "avail_spare", "nvme smart-log", 255),
        spare_threshold_pct=_int(data, "spare_thresh", "nvme smart-log", 255),
        percentage_used=_int(data, "percent_used", "nvme smart-log", 255),
        media_errors=_int(data, "media_errors", "nvme smart-log"),
        temperature_c=_int(data, "temperature", "nvme smart-log", 1300) - 273,
    )


# ---- fio --output-format=json -----------------------------------------------------------------


@dataclass(frozen=True)
class FioDirection:
    bw_kib_s: float
    iops: float
    clat_p99_us: float | None


@dataclass(frozen=True)
class FioJob:
    name: str
    error: int
    read: FioDirection
    write: FioDirection


def _direction(job: dict, key: str) -> FioDirection:
    part = job.get(key)
    if not isinstance(part, dict):
        raise ParseError(f"fio: job has no {key!r} object")
    clat = part.get("clat_ns") if isinstance(part.get("clat_ns"), dict) else {}
    pct = clat.get("percentile") if isinstance(clat.get("percentile"), dict) else {}
    p99 = pct.get("99.000000")
    return FioDirection(
        bw_kib_s=number(part.get("bw"), f"fio {key}.bw"),
        iops=number(part.get("iops"), f"fio {key}.iops"),
        clat_p99_us=number(p99, f"fio {key} clat p99") / 1000 if p99 is not None else None,
    )


@parser
def parse_fio_json(text: str) -> list[FioJob]:
    """fio's JSON; lines fio prints before it ('note: ...') are skipped."""
    start = re.search(r"^\{", text, re.MULTILINE)
    if not start:
        raise ParseError("fio: no JSON object")
    data = _json_object(text[start.start() :], "fio")
    if not str(data.get("fio version", "")).startswith("fio-") or not isinstance(data.get("jobs"), list):
        raise ParseError("fio: no 'fio version' and 'jobs': not fio's JSON")
    jobs = []
    for job in data["jobs"]:
        if not isinstance(job, dict):
            raise ParseError("fio: a job is not an object")
        jobs.append(
            FioJob(
                name=str(job.get("jobname", "")),
                error=int(number(job.get("error", 0), "fio error", maximum=1 << 31)),
                read=_direction(job, "read"),
                write=_direction(job, "write"),
            )
        )
    if not jobs:
        raise ParseError("fio: no job")
    return jobs
