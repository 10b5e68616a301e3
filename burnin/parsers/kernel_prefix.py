"""The prefixes of a kernel-log line, read off: what printed it, when, at what level (pure).

Prefixes understood (in any combination): none (``dmesg -t``), ``<4>`` (``dmesg -r``),
``6,3964,206764307,-;`` (``/dev/kmsg`` records, https://www.kernel.org/doc/Documentation/ABI/testing/dev-kmsg),
``[  123.456789]``, ``[Sun Feb 23 16:24:18 2025]`` (``dmesg -T``), ``[  +0.000844]`` and
``[Jan21 10:14]`` (``dmesg -H``), ISO ``2024-11-15T05:39:15,491363+00:00`` (``--time-format iso``,
``journalctl -o short-iso``, with or without ``T`` and zone), ``kern  :warn  : `` (``--decode``),
``kernel: `` (journald) and syslog ``Aug 17 06:18:01[.123456] host tag[pid]: `` (``journalctl -o
short[-precise]``). Month and day names are the locale's: journald and ``dmesg -T`` print
``Mär``, ``févr.``, ``ene`` or ``мар`` where the host's LC_TIME says so.

A line with none of these prefixes is still a kernel line when a kernel message starts in it
(``NVRM: ``, ``kernel: ``, a driver and a PCI address, ``EDAC``, ``mce:``...): at its start (a
line pasted bare) or after a stamp no list holds (a collector's own), which is then dropped.
An Xid 79 pasted alone is unmistakable and is read as one.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import datetime

_ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?"
# A month or day name in any locale: letters (any script), maybe a dot ('févr.', 'janv.').
_NAME = r"[^\W\d_]{2,5}\.?"
_PREFIXES: list[tuple[str, re.Pattern[str]]] = [
    ("raw", re.compile(r"^<(?P<lvl>[0-7])>")),
    ("kmsg", re.compile(r"^(?P<pri>\d{1,4}),\d+,(?P<usec>\d+),[^;\s]*;")),
    (
        "syslog",
        re.compile(
            rf"^(?P<ts>{_NAME} {{1,2}}\d{{1,2}} \d\d:\d\d:\d\d(?:\.\d+)?) +(?:(?P<host>\S+(?<!:)) )?(?P<src>[\w.\-/]+(?:\[\d+\])?): "
        ),
    ),
    ("journal_iso", re.compile(rf"^(?P<ts>{_ISO}) (?P<host>\S+) (?P<src>kernel|[\w.\-/]+\[\d+\]): ")),
    (
        "decode",
        re.compile(
            r"^(?P<fac>kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|local[0-7])\s*:"
            r"\s*(?P<lvl>emerg|alert|crit|err|warn|notice|info|debug)\s*: ?"
        ),
    ),
    ("kernel", re.compile(r"^(?P<src>kernel): ")),
    ("mono", re.compile(r"^\[\s*(?P<up>\d+\.\d+)\] ?")),
    ("ctime", re.compile(rf"^\[(?P<ts>{_NAME} {_NAME} [ \d]\d \d\d:\d\d:\d\d \d{{4}})\] ?")),
    ("delta", re.compile(r"^\[\s*(?P<ts>[+-]\d+\.\d+)\] ?")),
    ("human", re.compile(rf"^\[(?P<ts>{_NAME}\d{{1,2}} \d\d:\d\d(?::\d\d)?)\] ?")),
    ("iso", re.compile(rf"^(?P<ts>{_ISO}) ")),
]
_PREFIX = dict(_PREFIXES)
# The shapes dmesg itself prints, read in one match by strip_prefixes: an optional --decode
# facility and level, then an ISO or an uptime stamp.
_COMMON = re.compile(
    _PREFIX["decode"].pattern.replace("(?P<fac>", "(?:(?P<fac>", 1).replace(": ?", ": ?)?", 1)
    + rf"(?:(?P<ts>{_ISO}) |\[\s*(?P<up>\d+\.\d+)\] ?)"
)
_LEVELS = ("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug")
# What each prefix can start with: a line is only matched against the prefixes its first
# character can start (3 regex matches a line instead of 21; the order of _PREFIXES is kept).
_FIRST = {
    "raw": "<", "kmsg": r"\d", "syslog": r"[^\W\d_]", "journal_iso": r"\d", "decode": "[kumdaslncf]",
    "kernel": "k", "mono": r"\[", "ctime": r"\[", "delta": r"\[", "human": r"\[", "iso": r"\d",
}  # fmt: skip
_CANDIDATES: dict[str, list[tuple[str, re.Pattern[str]]]] = {}

# Where a kernel message starts in a line with no known prefix: the tag journald and syslog put
# before it, or the message's own first words (the driver's tag: printk's pr_fmt/dev_printk).
_MESSAGE_START = re.compile(
    r"(?:^|(?<=\s))(?:(?P<tag>kernel: )"
    r"|(?=NVRM: |nvidia-nvswitch\d*: |EDAC |mce: |\{\d+\}\[Hardware Error\]: |\[Hardware Error\]: "
    r"|nvme nvme\d+: |Kernel panic - |[a-z][\w\-]* [0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]: ))"
)
# A '/dev/kmsg' record's dictionary line: ' SUBSYSTEM=pci', ' DEVICE=+pci:0000:3b:00.0'.
_KMSG_DICT = re.compile(r"^ [A-Z][A-Z0-9_]*=")


def _candidates(first: str) -> list[tuple[str, re.Pattern[str]]]:
    """The prefixes, in order, that a text starting with ``first`` (one character, or '') can match."""
    known = _CANDIDATES.get(first)
    if known is None:
        known = [(kind, rx) for kind, rx in _PREFIXES if re.match(_FIRST[kind], first)]
        if len(_CANDIDATES) < 1024:  # any text's characters: keep the cache bounded
            _CANDIDATES[first] = known
    return known


@dataclass(slots=True)
class Entry:
    raw: list[str]
    message: str
    timestamp: str | None = None
    uptime_s: float | None = None
    clock: tuple[str, str] | None = None  # (prefix kind, stamp): read into a datetime by base()
    level: str | None = None
    source: str | None = None

    def base(self) -> dict:
        return {
            "raw": "\n".join(self.raw),
            "message": self.message,
            "timestamp": self.timestamp,
            "uptime_s": self.uptime_s,
            "wallclock": _wallclock(*self.clock) if self.clock else None,
            "level": self.level,
            "source": self.source,
        }


@functools.lru_cache(maxsize=4096)  # lines of one second share a stamp ('dmesg -T', syslog)
def _wallclock(kind: str, ts: str) -> datetime | None:
    try:
        if kind in ("iso", "journal_iso"):
            stamp = ts.replace(",", ".").replace(" ", "T", 1).replace("Z", "+00:00")
            if re.search(r"[+-]\d{4}$", stamp):  # '+0100' (short-iso): fromisoformat wants '+01:00'
                stamp = f"{stamp[:-2]}:{stamp[-2:]}"
            return datetime.fromisoformat(stamp)
        if kind == "ctime":
            return datetime.strptime(re.sub(r"\s+", " ", ts), "%a %b %d %H:%M:%S %Y")
    except ValueError:  # another locale's names, an impossible date
        return None
    return None


def strip_prefixes(line: str) -> tuple[Entry, bool]:
    """Entry for one physical line; the flag says whether it is a kernel-log line (a prefix was
    found, or a kernel message starts in it)."""
    # dmesg's own lines (`--time-format iso`, the check's command; `--decode`; '[  1.2]'), read in
    # one step as the loop below reads them: no prefix that _COMMON's first one could be is tried
    # before it there (journal_iso, which ends in 'kernel: ' or ']: ', is ruled out), and the
    # loop would stop after it (no other prefix matches the rest).
    if "kernel: " not in line and "]: " not in line and (m := _COMMON.match(line)):
        rest = line[m.end() :]
        used = ("decode" if m["lvl"] else "", "iso" if m["ts"] else "mono")
        for kind, rx in _candidates(rest[:1]):
            if kind not in used and rx.match(rest):
                break
        else:
            up = m["up"]
            stamp = m["ts"] or up
            clock = ("iso", stamp) if m["ts"] else None
            return Entry([line], rest.strip(), stamp, float(up) if up else None, clock, m["lvl"]), True
    return _read_prefixes(line)


def _read_prefixes(line: str) -> tuple[Entry, bool]:
    """strip_prefixes without its one-step reading of dmesg's own lines: each prefix in turn."""
    rest = line
    used: list[str] = []  # each kind of prefix is read once
    level = source = timestamp = uptime_s = clock = None
    while True:
        for kind, rx in _candidates(rest[:1]):
            if kind not in used and (m := rx.match(rest)):
                break
        else:  # no prefix left
            break
        used.append(kind)
        groups = m.groupdict()
        if lvl := groups.get("lvl"):
            level = _LEVELS[int(lvl)] if lvl.isdigit() else lvl
        elif pri := groups.get("pri"):  # syslog priority: facility * 8 + level
            level = _LEVELS[int(pri) & 7]
        source = groups.get("src") or source
        if up := groups.get("up"):
            timestamp, uptime_s = up, float(up)
        elif usec := groups.get("usec"):
            uptime_s = int(usec) / 1e6
            timestamp = f"{uptime_s:.6f}"
        elif (ts := groups.get("ts")) and timestamp is None:
            timestamp, clock = ts, (kind, ts)  # only an event's stamp is read (base())
        rest = rest[m.end() :]
    if not used and not line[:1].isspace() and (start := _MESSAGE_START.search(line)):
        # No prefix this module knows: a bare kernel message, or one after a stamp it does not know.
        source = "kernel" if start["tag"] else None
        return Entry([line], line[start.end() :].strip(), source=source), True
    return Entry([line], rest.strip(), timestamp, uptime_s, clock, level, source), bool(used)


def is_continuation(line: str) -> bool:
    """A line that continues the one before it (NVRM multi-line messages, wrapped pastes, a
    ``/dev/kmsg`` record's dictionary), when it has no prefix of its own."""
    if line[:1].isspace():
        return True
    stripped = line.strip()
    return stripped.startswith("(") or bool(re.fullmatch(r"[A-Za-z][\w\-]*\.?", stripped))


def is_kmsg_dictionary(line: str) -> bool:
    """A ``/dev/kmsg`` record's ``KEY=VALUE`` line: the record's metadata, not its message."""
    return bool(_KMSG_DICT.match(line))
