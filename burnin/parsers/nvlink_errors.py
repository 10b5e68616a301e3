"""``nvidia-smi nvlink -e`` (``--errorcounters``): each GPU's NVLink error counters, per link.

The form (driver 535 on A100 and H100; the samples in tests/fixtures/samples)::

    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)
             Link 0: Replay Errors: 0
             Link 0: Recovery Errors: 0
             Link 0: CRC Errors: 0

A GPU is named by its index or, on some systems, its PCI address (``GPU 00000008:06:00.0``).
Every ``Link N: NAME: VALUE`` line with a whole number is kept by its name as printed; a value
that is not a count (a ratio, ``N/A``) is left out. Which names are judged is the caller's
(burnin.service.watch_rates); ``counter_kind`` says which of them are the replay, recovery and
CRC counters DCGM's health watch judges (docs/in-service.md, "The resident watcher").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from burnin.parsers._common import clean, parser, split_lines
from burnin.parsers.errors import ParseError

_GPU_RE = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]|\d+)(?::\s*(.*))?$")
_UUID_RE = re.compile(r"\s*\(UUID: ([^()]*)\)$")
_COUNTER_RE = re.compile(r"^Link (\d+): ([A-Za-z][^:]*?):\s*(\S+)\s*$")

REPLAY = "replay"
RECOVERY = "recovery"
CRC = "crc"


@dataclass(frozen=True)
class NvlinkErrorGpu:
    gpu: str  # as nvidia-smi names it: its index ('0') or its PCI address
    name: str
    uuid: str | None
    counters: dict[tuple[int, str], int]  # (link, counter name as printed) -> value


@dataclass(frozen=True)
class NvlinkErrors:
    gpus: tuple[NvlinkErrorGpu, ...]


def counter_kind(name: str) -> str | None:
    """REPLAY, RECOVERY or CRC for the counters DCGM's health watch judges
    (https://github.com/NVIDIA/DCGM, modules/health/DcgmHealthWatch.cpp: CRC flit and data, replay,
    recovery); None for the others (Blackwell's packet and FEC counters)."""
    low = name.lower()
    if "replay" in low:
        return REPLAY
    if "crc" in low:
        return CRC
    if low == "recovery errors":
        return RECOVERY
    return None


@parser
def parse_nvlink_errors(text: str) -> NvlinkErrors:
    """``nvidia-smi nvlink -e`` -> its GPUs and their counters. A text without a ``GPU n:`` line
    or without a counter is not this output (ParseError), nor is one whose counter lines come
    before any GPU line (they name no GPU)."""
    gpus: list[NvlinkErrorGpu] = []
    for line in split_lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("GPU "):
            m = _GPU_RE.match(stripped)
            if m:
                rest = (m.group(2) or "").strip()
                uuid = _UUID_RE.search(rest)
                name = rest[: uuid.start()] if uuid else rest
                gpus.append(
                    NvlinkErrorGpu(m.group(1), name.strip(), clean(uuid.group(1)) if uuid else None, {})
                )
                continue
        m = _COUNTER_RE.match(stripped)
        if not m:
            continue
        if not gpus:
            raise ParseError("not 'nvidia-smi nvlink -e' output: a counter line before any 'GPU n:' line")
        if m.group(3).isdigit():
            gpus[-1].counters[(int(m.group(1)), m.group(2).strip())] = int(m.group(3))
    if not gpus:
        raise ParseError("not 'nvidia-smi nvlink -e' output: no 'GPU n:' line")
    if not any(g.counters for g in gpus):  # `nvlink -s` names its GPUs too; a GPU without NVLink has none
        raise ParseError("not 'nvidia-smi nvlink -e' output: no 'Link N: NAME: count' line")
    return NvlinkErrors(tuple(gpus))
