"""Kernel log lines (dmesg, journald, syslog, /dev/kmsg) classified into events.

The prefixes a line may carry are burnin.parsers.kernel_prefix's. A line without any prefix
that starts with whitespace or ``(``, or is a single bare word, continues the line before it
(NVRM multi-line messages, wrapped pastes, a /dev/kmsg record's ``KEY=VALUE`` lines, which are
kept in ``raw`` only). Lines starting with ``#`` are annotations, not kernel output, and are
skipped.

Each meaningful line gives one event; AER reports (header, ``PCIe Bus Error`` line, status
and error-bit lines) merge into one :class:`AerEvent`. Host hardware errors (EDAC, MCE,
APEI/GHES, NVMe, mlx5 health) are :class:`HostErrorEvent` (burnin.parsers.host_errors). Lines
that mean nothing (healthy ``available PCIe bandwidth`` lines, RPC history tables) give no event.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from burnin.parsers._common import gc_paused, normalize_bdf, parser, split_lines
from burnin.parsers.errors import ParseError
from burnin.parsers.host_errors import IGNORED, classify_host_error
from burnin.parsers.kernel_prefix import Entry, is_continuation, is_kmsg_dictionary, strip_prefixes
from burnin.parsers.xid_catalog import XID_CATALOG, XidInfo


@dataclass(frozen=True, kw_only=True)
class KernelEvent:
    kind: str = ""
    raw: str  # the line(s) as printed, joined with '\n'
    message: str  # prefixes removed, continuation lines joined with a space
    # as printed: '74785.660366', 'Sun Feb 23 16:24:18 2025', ISO, '+0.000844', 'Aug 17 06:18:01'
    timestamp: str | None = None
    uptime_s: float | None = None  # seconds since boot, for '[  123.456]' stamps
    wallclock: datetime | None = None  # for ISO and 'dmesg -T' stamps
    level: str | None = None  # 'warn', 'err', ... from 'dmesg --decode' or '<4>'
    source: str | None = None  # syslog/journald tag: 'kernel', 'systemd-networkd[5398]'


@dataclass(frozen=True, kw_only=True)
class XidEvent(KernelEvent):
    kind: str = field(default="xid", init=False)
    bdf: str | None  # canonical '0000:19:00.0' (Xid lines omit the function: .0 assumed)
    xid: int
    pid: int | None = None
    process: str | None = None
    detail: str = ""  # text after 'pid=..., name=..., '
    caused_by_xid: int | None = None  # '... caused by previous Xid 149'
    # NVLink5 Xids (144-150) name the unit and say whether the error is fatal:
    # '145, RLW_REMAP Nonfatal XC0 i0 Link 00 (0x... 0x...)' -> 'RLW_REMAP', False. None elsewhere.
    nvlink_unit: str | None = None
    fatal: bool | None = None

    @property
    def root_xid(self) -> int:
        """The Xid to attribute this event to (the earlier one for 'caused by previous Xid N')."""
        return self.caused_by_xid if self.caused_by_xid is not None else self.xid

    @property
    def info(self) -> XidInfo | None:
        return XID_CATALOG.get(self.xid)

    @property
    def fallen_off_bus(self) -> bool:
        return self.xid == 79


@dataclass(frozen=True, kw_only=True)
class SxidEvent(KernelEvent):
    """NVSwitch SXid. One error prints a triplet of lines; only the one carrying 'Fatal' /
    'Non-fatal' has ``fatal`` set (the 'Data {...}' and 'Severity N ...' lines have None)."""

    kind: str = field(default="sxid", init=False)
    switch: str  # 'nvidia-nvswitch2'
    bdf: str | None
    sxid: int
    fatal: bool | None = None
    link: int | None = None
    severity: int | None = None  # from the 'Severity N Engine instance ...' line
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class AerEvent(KernelEvent):
    kind: str = field(default="aer", init=False)
    bdf: str | None  # the device that printed the report (often the root/switch port)
    driver: str | None = None  # 'pcieport', 'nvidia', ...
    severity: str | None = None  # 'corrected', 'non_fatal', 'fatal'; None for recovery lines
    error_type: str | None = None  # 'Data Link Layer', 'Transaction Layer', 'Physical Layer'
    error_names: tuple[str, ...] = ()  # 'Replay Timer Timeout', 'Surprise Down Error', 'CmpltTO'...
    status: str | None = None  # error status register (hex) from 'error status/mask='
    mask: str | None = None
    detail: str = ""  # e.g. "device recovery failed", "can't recover (no error_detected callback)"


@dataclass(frozen=True, kw_only=True)
class FallenOffBusEvent(KernelEvent):
    """'GPU has fallen off the bus' printed WITHOUT an Xid (Xid 79 lines are XidEvents)."""

    kind: str = field(default="fallen_off_bus", init=False)
    bdf: str | None


@dataclass(frozen=True, kw_only=True)
class PcieLimitedEvent(KernelEvent):
    """'... available PCIe bandwidth, limited by <speed> x<w> link at <bdf> (capable of ...)'."""

    kind: str = field(default="pcie_limited", init=False)
    bdf: str | None  # the device whose bandwidth is limited (None when the paste dropped the prefix)
    driver: str | None
    available_gbps: float | None
    speed_gts: float | None  # speed of the limiting link; None for 'Unknown'
    width: int | None
    limiting_bdf: str | None  # the port where the limiting link is
    capable_gbps: float | None = None
    capable_speed_gts: float | None = None
    capable_width: int | None = None


@dataclass(frozen=True, kw_only=True)
class LinkFlapEvent(KernelEvent):
    kind: str = field(default="link_flap", init=False)
    interface: str  # 'ib6', 'enp1s0f0np0'
    state: str  # 'down' (lost carrier / Link down) or 'up' (Gained carrier / Link up)
    bdf: str | None = None


@dataclass(frozen=True, kw_only=True)
class ModuleEvent(KernelEvent):
    """mlx5 'Port module event[error]: module N, <status>[, <error>]'."""

    kind: str = field(default="module_event", init=False)
    bdf: str | None
    module: int
    status: str  # 'Cable plugged', 'Cable unplugged', 'Cable error', ...
    error: bool  # the '[error]' variant
    detail: str | None = None  # the error string of the '[error]' variant, e.g. 'High Temperature'


@dataclass(frozen=True, kw_only=True)
class HostErrorEvent(KernelEvent):
    """A host hardware error (burnin.parsers.host_errors): memory, CPU, firmware record, NVMe, HCA."""

    kind: str = field(default="host_error", init=False)
    error: str  # a key of burnin/checks/host_error_catalog.py HOST_ERRORS
    device: str | None = None  # the printing device: '0000:08:00.0', 'nvme0'
    location: str | None = None  # the part the line names: a DIMM, 'CPU 1 bank 5'
    count: int = 1
    record: str | None = None  # a GHES record's '{37}'
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class SuspiciousEvent(KernelEvent):
    """A line with error/failure wording that none of the specific patterns explained."""

    kind: str = field(default="suspicious", init=False)
    matched: str  # the word that made it suspicious ('ERROR', 'Call Trace', 'failed', ...)
    bdf: str | None = None


def _scan(text: str) -> list[tuple[str, Entry, bool]]:
    """Every line that is not blank or a ``#`` annotation: (the line, its entry, whether it had
    a kernel-log prefix)."""
    scanned = []
    for line in split_lines(text):
        if line.lstrip()[:1] in ("", "#"):
            continue
        entry, found = strip_prefixes(line)
        scanned.append((line, entry, found))
    return scanned


def _entries(scanned: list[tuple[str, Entry, bool]]) -> list[Entry]:
    entries: list[Entry] = []
    for line, entry, found in scanned:
        if not found and entries and is_continuation(line):
            prev = entries[-1]
            prev.raw.append(line)
            if is_kmsg_dictionary(line):
                continue
            part = re.sub(r"^NVRM:\s*", "", line.strip())
            prev.message = f"{prev.message} {part}".strip()
            continue
        if entry.message:
            entries.append(entry)
    return entries


def require_kernel_log(text: str) -> int:
    """The number of kernel-log lines in ``text``; a ParseError when it is not a kernel log.

    A kernel-log line is one that carries a message after a prefix of the forms above: a
    ``[  1.234567]``, ``dmesg -T``/``-H`` or ISO timestamp, a ``<4>`` level, ``kern  :warn  :``, ``kernel:``, or a
    syslog/journald stamp and tag. The check runs ``dmesg --time-format iso``, where every record
    has one; ``parse_kernel_log`` also reads bare lines (``dmesg -t``, single pasted lines), so
    it cannot tell a log from other text. Text with no such line at all (base64, ``hello``,
    ibstat output), or where they are fewer than half of the lines that are not continuations
    (another tool's output with a log line pasted in), is not a kernel log. Continuation lines
    (indented NVRM dumps) and ``#`` annotations are not counted either way.
    """
    return _count_prefixed(_scan(text))


def read_kernel_log(text: str) -> tuple[int, list[KernelEvent]]:
    """``require_kernel_log`` then ``parse_kernel_log`` of one text, its lines read once."""
    with gc_paused():
        scanned = _scan(text)
        count = _count_prefixed(scanned)
        return count, _parse_scanned(text, scanned)


def kernel_line_counts(text: str) -> tuple[int, int]:
    """(kernel-log lines, other lines that are not continuations) of ``text``: how much of it is
    a kernel log, for a text that may hold one beside another tool's output."""
    with gc_paused():
        return _counts(_scan(text))


def _counts(scanned: list[tuple[str, Entry, bool]]) -> tuple[int, int]:
    prefixed = bare = 0
    for line, entry, found in scanned:
        if found:
            # A prefix alone ('<0>', an empty '[ 1.0] ' record) says nothing: not counted as a
            # record, nor against the text as a foreign line.
            prefixed += bool(entry.message.strip())
        elif not is_continuation(line):
            bare += 1
    return prefixed, bare


def _count_prefixed(scanned: list[tuple[str, Entry, bool]]) -> int:
    prefixed, bare = _counts(scanned)
    if prefixed == 0:
        raise ParseError("not a kernel log: no kernel-log line (timestamp, level or 'kernel:' prefix)")
    if prefixed < bare:
        raise ParseError(
            f"not a kernel log: {bare} of {prefixed + bare} lines lack a kernel-log line's prefix"
        )
    return prefixed


# --- classification --------------------------------------------------------------------------

_BDF = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"
_DEVICE_RE = re.compile(rf"^(?P<drv>[\w\-.]+) (?P<bdf>{_BDF})(?: (?P<ifname>[\w.\-@]+))?:\s?(?P<rest>.*)$")
_XID_RE = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bdf>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): "
    r"(?P<xid>\d+)\b,?\s*(?P<rest>.*)$"
)
# The NVLink5 shape: unit (or unit/sub-unit), 'Nonfatal' or 'Fatal', then the XC field; or a message
# that ends inside the word (a line cut short), whose first letters still say which word it is.
_NVLINK5_RE = re.compile(
    r"^(?P<unit>[A-Z][A-Z0-9_]*(?:/[A-Z][A-Z0-9_]*)?)\s+"
    r"(?:(?P<sev>Nonfatal|Fatal)\s+XC\d\b|(?P<part>N(?:o(?:n(?:f(?:a(?:t(?:al?)?)?)?)?)?)?|F(?:a(?:t(?:al?)?)?)?)$)"
)
_SXID_RE = re.compile(
    r"(?P<switch>nvidia-nvswitch\d*): SXid \((?:PCI:)?(?P<bdf>[0-9A-Fa-f:.]+)\): (?P<sxid>\d+)\b,?\s*(?P<rest>.*)$"
)
_SPEED = r"(?:(?P<{0}>\d+(?:\.\d+)?) ?GT/s(?: PCIe)?|Unknown(?: speed)?)"
_LIMITED_RE = re.compile(
    r"(?<![\d.])(?P<avail>\d+(?:\.\d+)?) Gb/s available PCIe bandwidth, limited by "
    + _SPEED.format("speed")
    + rf" x(?P<width>\d+) link at (?P<at>{_BDF})"
    r"(?: \(capable of (?P<cap>\d+(?:\.\d+)?) Gb/s with "
    + _SPEED.format("capspeed")
    + r" x(?P<capwidth>\d+) link)?"
)
_AER_RECEIVED_RE = re.compile(
    r"^AER: (?:Multiple )?(?P<sev>Corrected|Correctable|Uncorrected \([\w-]+\)|Uncorrectable \([\w-]+\))"
    r" error (?:message )?received"
)
_AER_BUS_RE = re.compile(r"^(?:AER: )?PCIe Bus Error: severity=(?P<sev>[^,]+), type=(?P<type>[^,]+)")
_AER_STATUS_RE = re.compile(
    r"^device \[[0-9a-fA-F]{4}:[0-9a-fA-F]{4}\] error status/mask=(?P<st>[0-9a-fA-F]+)/(?P<mk>[0-9a-fA-F]+)"
)
_AER_BIT_RE = re.compile(r"^\[\s*(?P<bit>\d+)\]\s*(?P<name>.*?)\s*(?:\(First\))?\s*$")
_AER_OTHER_RE = re.compile(r"^AER: (?P<detail>.*)$")
_AER_STARTS = ("AER: ", "PCIe Bus Error")  # how every AER pattern above starts
_FALLEN_RE = re.compile(r"fallen off the bus", re.I)
_FALLEN_BDF_RE = re.compile(
    r"GPU (?:at )?(?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)"
)
_FLAP_RE = re.compile(
    r"(?<![\w.\-@])([\w.\-@]+): (lost carrier|gained carrier|link (?:is )?(?:up|down))\b", re.I
)
_MODULE_RE = re.compile(r"Port module event(?P<err>\[error\])?: module (?P<module>\d+), (?P<rest>.*)$")
_SUSPICIOUS_RE = re.compile(
    r"(?i:\b(?:errors?|fail(?:s|ed|ure|ing)?|fatal|panic|oops|call trace|hung task|blocked for more than"
    r"|machine check|mce|hardware error|segfault|soft lockup|hard lockup|timed out|timeout|stall(?:ed)?)\b)"
    r"|\bBUG\b|\bWARNING: CPU:"
)


# Words one of which a line must hold (any case) for _SUSPICIOUS_RE to match it: a few substring
# tests skip the regex for most lines (it tried some 20 words at every position of every line).
# Only for ASCII lines: there, and only there, the regex's IGNORECASE is str.lower()'s.
_SUSPICIOUS_WORDS = (
    "error", "fail", "fatal", "panic", "oops", "call trace", "hung task", "blocked for more than",
    "machine check", "mce", "segfault", "lockup", "timed out", "timeout", "stall", "bug",
    "warning: cpu:",
)  # fmt: skip


def _may_be(message: str, low: str, words: tuple[str, ...], ascii: bool | None = None) -> bool:
    """False only when the regex these words are drawn from cannot match ``message`` (``low``, its
    lower case; ``ascii``, whether it is ASCII, when the caller knows)."""
    if not (message.isascii() if ascii is None else ascii):
        return True
    return any(map(low.__contains__, words))


# Words one of which a message holds (any case) when _events can make anything of it: the start
# of an AER line ('AER: ', 'PCIe Bus Error'), or the words of _classify's patterns. Most lines of
# a healthy log hold none.
_LOUD_WORDS = (
    "aer: ", "xid (", "available pcie bandwidth, limited by ", "fallen off the bus", "port module event",
    ": lost carrier", ": gained carrier", ": link ", *_SUSPICIOUS_WORDS,  # 'error' among them
    "edac", "reset", "health", "synd",  # host errors without an error word (host_errors.py)
    "general protection fault", "nvrm: no nvidia", "probe routine was not called",
)  # fmt: skip
# Words one of which a message holds when classify_host_error can make anything of it.
_HOST_WORDS = (
    "edac", "hardware error", "machine check", "nvme", "mlx5_core", "bert: ", "amdgpu",
    "bug: ", "oops: ", "general protection fault", "kernel panic", "nvrm: no nvidia", "probe routine was not called",
)  # fmt: skip


def _severity(value: str) -> str | None:
    low = value.strip().lower()
    if low.startswith("correct"):
        return "corrected"
    if "non-fatal" in low or "nonfatal" in low:
        return "non_fatal"
    if "fatal" in low:
        return "fatal"
    return None


def _float(value: str | None) -> float | None:
    return float(value) if value else None


@dataclass
class _AerDraft:
    entry: Entry
    bdf: str | None
    driver: str | None
    severity: str | None = None
    error_type: str | None = None
    names: list[str] = field(default_factory=list)
    status: str | None = None
    mask: str | None = None
    detail: str = ""
    raws: list[str] = field(default_factory=list)

    def build(self) -> AerEvent:
        base = self.entry.base()
        base["raw"] = "\n".join(self.raws)
        return AerEvent(
            **base,
            bdf=self.bdf,
            driver=self.driver,
            severity=self.severity,
            error_type=self.error_type,
            error_names=tuple(self.names),
            status=self.status,
            mask=self.mask,
            detail=self.detail,
        )


_Classified = tuple[type[KernelEvent], dict]


def _classify(msg: str, drv: str | None, bdf: str | None, low: str, ascii: bool) -> _Classified | None:
    """What one loud message is: the event's class and its fields but those of the entry's prefix
    (``low``: the message in lower case; ``ascii``: whether it is ASCII). It depends on the message
    alone, so _events classifies each message once however often the log repeats it."""
    # Each pattern below is tried only on a message holding a text it requires ('Xid (', 'SXid (',
    # 'Port module event'): most messages hold none, and the searches were most of the time spent.
    if "Xid (" in msg and (m := _XID_RE.search(msg)):
        detail = m.group("rest")
        pid = process = None
        if pm := re.match(r"^pid=(?:'?<unknown>'?|'?(\d+)'?),\s*", detail):
            pid = int(pm.group(1)) if pm.group(1) else None
            detail = detail[pm.end() :]
        if nm := re.match(r"^name=(.*?),\s*", detail):
            process = None if nm.group(1) in ("<unknown>", "'<unknown>'") else nm.group(1)
            detail = detail[nm.end() :]
        cause = re.search(r"caused by previous Xid (\d+)", detail)
        nv = _NVLINK5_RE.match(detail)
        return XidEvent, dict(
            bdf=normalize_bdf(m.group("bdf")),
            xid=int(m.group("xid")),
            pid=pid,
            process=process,
            detail=detail.strip(),
            caused_by_xid=int(cause.group(1)) if cause else None,
            nvlink_unit=nv.group("unit") if nv else None,
            fatal=(nv.group("sev") or nv.group("part")).startswith("F") if nv else None,
        )
    if "SXid (" in msg and (m := _SXID_RE.search(msg)):
        detail = m.group("rest").strip()
        fatal = None
        if re.match(r"^Non-fatal\b", detail, re.I):
            fatal = False
        elif re.match(r"^Fatal\b", detail, re.I):
            fatal = True
        link = re.search(r"\bLink (\d+)\b", detail)
        sev = re.match(r"^Severity (\d+)\b", detail)
        return SxidEvent, dict(
            switch=m.group("switch"),
            bdf=normalize_bdf(m.group("bdf")),
            sxid=int(m.group("sxid")),
            fatal=fatal,
            link=int(link.group(1)) if link else None,
            severity=int(sev.group(1)) if sev else None,
            detail=detail,
        )
    if "available PCIe bandwidth, limited by " in msg and (m := _LIMITED_RE.search(msg)):
        return PcieLimitedEvent, dict(
            bdf=bdf,
            driver=drv,
            available_gbps=_float(m.group("avail")),
            speed_gts=_float(m.group("speed")),
            width=int(m.group("width")),
            limiting_bdf=normalize_bdf(m.group("at")),
            capable_gbps=_float(m.group("cap")),
            capable_speed_gts=_float(m.group("capspeed")),
            capable_width=int(m.group("capwidth")) if m.group("capwidth") else None,
        )
    if _may_be(msg, low, ("fallen off the bus",), ascii) and _FALLEN_RE.search(msg):
        fm = _FALLEN_BDF_RE.search(msg)
        return FallenOffBusEvent, dict(bdf=normalize_bdf(fm.group(1)) if fm else bdf)
    if "Port module event" in msg and (m := _MODULE_RE.search(msg)):
        status, _, detail = m.group("rest").partition(", ")
        return ModuleEvent, dict(
            bdf=bdf,
            module=int(m.group("module")),
            status=status.strip(),
            error=bool(m.group("err")),
            detail=detail.strip() or None,
        )
    if _may_be(msg, low, ("carrier", "link"), ascii) and (m := _FLAP_RE.search(msg)):
        word = m.group(2).lower()
        state = "down" if ("lost" in word or word.endswith("down")) else "up"
        return LinkFlapEvent, dict(interface=m.group(1), state=state, bdf=bdf)
    if _may_be(msg, low, _HOST_WORDS, ascii) and (host := classify_host_error(msg)) is not None:
        if host.error == IGNORED:  # a report's other lines: its verdict line is classified
            return None
        return HostErrorEvent, dict(
            error=host.error,
            device=bdf or (host.location if host.error.startswith("nvme") else None),
            location=host.location,
            count=host.count,
            record=host.record,
            detail=host.detail,
        )
    if _may_be(msg, low, _SUSPICIOUS_WORDS, ascii) and (m := _SUSPICIOUS_RE.search(msg)):
        return SuspiciousEvent, dict(matched=m.group(0), bdf=bdf)
    return None


@parser
def parse_kernel_log(text: str) -> list[KernelEvent]:
    """Classify kernel log text (any of the prefix styles above) into events, in order.

    Never raises on text that merely contains no events (an empty list is a valid answer:
    a clean log); only non-text input is a ParseError.
    """
    with gc_paused():
        return _events(_entries(_scan(text)))


@parser
def _parse_scanned(text: str, scanned: list[tuple[str, Entry, bool]]) -> list[KernelEvent]:
    """``parse_kernel_log`` of ``text`` whose lines ``_scan`` has read (its safety net kept)."""
    return _events(_entries(scanned))


def _events(entries: list[Entry]) -> list[KernelEvent]:
    events: list[KernelEvent | _AerDraft] = []
    open_aer: _AerDraft | None = None
    # Per message, read once however often the log repeats it (an Xid storm, a flapping link, an
    # AER flood print one message thousands of times, each with its own stamp): whether it is loud,
    # its device prefix, and what _classify makes of it.
    seen: dict[str, tuple[bool, str, str | None, str | None, str]] = {}
    classified: dict[str, _Classified | None] = {}
    for entry in entries:
        msg = entry.message
        read = seen.get(msg)
        if read is None:
            low, ascii = msg.lower(), msg.isascii()
            dm = _DEVICE_RE.match(msg)
            read = seen[msg] = (
                _may_be(msg, low, _LOUD_WORDS, ascii),
                low,
                dm.group("drv") if dm else None,
                normalize_bdf(dm.group("bdf")) if dm else None,
                dm.group("rest") if dm else msg,
            )
        loud, low, drv, bdf, rest = read
        if open_aer is None and not loud:
            continue  # the steps below would make nothing of it, and leave open_aer None
        continuing = open_aer is not None and events and events[-1] is open_aer
        # The AER patterns all start a message with 'AER: ' or 'PCIe Bus Error'.
        aer = rest.startswith(_AER_STARTS)
        if aer and (m := _AER_RECEIVED_RE.match(rest)):
            open_aer = _AerDraft(entry, bdf, drv, severity=_severity(m.group("sev")), raws=list(entry.raw))
            events.append(open_aer)
            continue
        if aer and (m := _AER_BUS_RE.match(rest)):
            if continuing and open_aer is not None and open_aer.error_type is None:
                open_aer.severity = _severity(m.group("sev")) or open_aer.severity
                open_aer.error_type = m.group("type").strip()
                open_aer.raws += entry.raw
            else:
                open_aer = _AerDraft(
                    entry,
                    bdf,
                    drv,
                    severity=_severity(m.group("sev")),
                    error_type=m.group("type").strip(),
                    raws=list(entry.raw),
                )
                events.append(open_aer)
            continue
        if continuing and open_aer is not None:
            stripped = rest.strip()
            if m := _AER_STATUS_RE.match(stripped):
                open_aer.status, open_aer.mask = m.group("st"), m.group("mk")
                open_aer.raws += entry.raw
                continue
            if m := _AER_BIT_RE.match(stripped):
                open_aer.names.append(m.group("name"))
                open_aer.raws += entry.raw
                continue
        if aer and (m := _AER_OTHER_RE.match(rest)):
            open_aer = None
            draft = _AerDraft(entry, bdf, drv, detail=m.group("detail").strip(), raws=list(entry.raw))
            events.append(draft)
            continue
        open_aer = None
        if msg in classified:
            found = classified[msg]
        else:
            found = classified[msg] = _classify(msg, drv, bdf, low, msg.isascii())
        if found is not None:
            kind, fields = found
            events.append(kind(**entry.base(), **fields))
    return [e.build() if isinstance(e, _AerDraft) else e for e in events]
