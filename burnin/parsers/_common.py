"""Small helpers shared by the parsers (not part of the public API except normalize_bdf)."""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from burnin.parsers.errors import ParseError

F = TypeVar("F", bound=Callable[..., Any])

# Values tools print for "no value / not supported": None, not failure.
_NA = {"n/a", "[n/a]", "na", "[not supported]", "not supported", "[unknown error]", "unknown", "-", ""}


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a parser builds its records, as it was after.

    A parser's records hold no reference cycles, so a collection during the parse frees nothing:
    it only walks the objects being built, again and again as they grow (a third of the CPU time
    of a 100,000-line kernel log, benchmarks/evaluate.py). Reference counting frees as usual."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def parser(func: F) -> F:
    """Public-parser safety net: a non-str input is a ParseError, and so is any bug.

    Bugs are re-raised as ``ParseError(internal=True)`` chained to the original exception, so
    a caller can never mistake a crash for a result, and tests can still catch the bug.
    """

    @functools.wraps(func)
    def wrapper(text: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(text, str):
            raise ParseError(f"{func.__name__}: expected text (str), got {type(text).__name__}")
        try:
            return func(text, *args, **kwargs)
        except ParseError:
            raise
        except ValueError as exc:
            if "integer string conversion" in str(exc):  # a number of more than 4300 digits
                raise ParseError(f"{func.__name__}: absurdly long number: not tool output") from exc
            raise ParseError(f"{func.__name__}: internal parser error: {exc!r}", internal=True) from exc
        except Exception as exc:  # the safety net: RecursionError, IndexError... all become ParseError
            raise ParseError(f"{func.__name__}: internal parser error: {exc!r}", internal=True) from exc

    return wrapper  # type: ignore[return-value]


def split_lines(text: str) -> list[str]:
    """Lines without their terminators; a lone '\\r' (progress redraws) also ends a line."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def is_na(value: str | None) -> bool:
    return value is None or value.strip().lower() in _NA


def clean(value: str | None) -> str | None:
    """Stripped value, or None for N/A-like values."""
    if value is None:
        return None
    value = value.strip()
    return None if value.lower() in _NA else value


_NUM_RE = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def to_float(value: str | None) -> float | None:
    """Leading number of a value ('690.12 W', '29 C', '16x' -> 16.0); None for N/A or no number."""
    value = clean(value)
    if value is None:
        return None
    m = _NUM_RE.match(value)
    if not m:
        return None
    try:
        result = float(m.group(0))
    except ValueError:
        return None
    if result != result or result in (float("inf"), float("-inf")):
        return None
    return result


_HEX_RE = re.compile(r"^0[xX][0-9a-fA-F]+$")
_INT_RE = re.compile(r"^[-+]?\d+")


def to_int(value: str | None) -> int | None:
    """Leading integer of a value ('67', '16x', '2560 bank(s)'); hex with 0x; None otherwise."""
    value = clean(value)
    if value is None:
        return None
    if value.isdecimal():  # what \d+ matches whole (Unicode Nd digits), without a regex
        return int(value)
    if _HEX_RE.match(value):
        return int(value, 16)
    m = _INT_RE.match(value)
    if not m:
        return None
    return int(m.group(0))


def yes_no(value: str | None) -> bool | None:
    """Yes/No, Enabled/Disabled, On/Off, Active/Not Active -> bool; None otherwise."""
    value = clean(value)
    if value is None:
        return None
    low = value.lower()
    if low in ("yes", "enabled", "on", "active", "true"):
        return True
    if low in ("no", "disabled", "off", "not active", "inactive", "false"):
        return False
    return None


_BDF_RE = re.compile(
    r"^(?:PCI:)?(?:(?P<domain>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{1,2}):(?P<dev>[0-9a-fA-F]{1,2})"
    r"(?:\.(?P<fn>[0-7]))?$"
)


@functools.lru_cache(maxsize=4096)  # a node has a few dozen devices, named on thousands of lines
def normalize_bdf(value: str | None) -> str | None:
    """Canonical PCI address 'dddd:bb:dd.f' (lower case), from any form the tools print.

    '00000000:19:00.0' (nvidia-smi), 'PCI:0000:0f:00' (Xid, no function -> .0), '19:00.0'
    (lspci without -D -> domain 0000). None when the value is not a PCI address.
    """
    if value is None:
        return None
    m = _BDF_RE.match(value.strip())
    if not m:
        return None
    domain = int(m.group("domain") or "0", 16)
    bus = int(m.group("bus"), 16)
    dev = int(m.group("dev"), 16)
    fn = int(m.group("fn") or "0")
    if dev > 0x1F:
        return None
    return f"{domain:04x}:{bus:02x}:{dev:02x}.{fn}"


_NOT_SNAKE_RE = re.compile(r"[^0-9a-z]+")


def snake(name: str) -> str:
    """'HW Power Brake Slowdown' -> 'hw_power_brake_slowdown'; 'SEC-DED' -> 'sec_ded'."""
    return _NOT_SNAKE_RE.sub("_", name.lower()).strip("_")


# "Absurd" bounds. A figure beyond one of these is not a measurement any tool could
# print, so the text is not trustworthy tool output: a ParseError, never a figure to judge.
# Bandwidths: 10x the fastest link that exists, so no real figure comes near the bound.
MAX_LINK_GBPS = 8000.0  # one NIC port, Gb/s: 10x an 800 Gb/s (XDR) port
MAX_BUS_GBYTES = 18000.0  # NCCL algbw/busbw, GB/s: 10x NVLink 5's 1800 GB/s per GPU
MAX_GPU_TFLOPS = 100_000.0  # one GPU's matmul, TFLOP/s: 10x a B200's ~10 PFLOP/s (sparse FP4)


def number(value: Any, what: str, *, minimum: float | None = 0.0, maximum: float | None = None) -> float:
    """A finite figure from tool output (a JSON number or a numeric string), within bounds.

    Infinity, NaN, '1e999' (which float() reads as infinity), a value under ``minimum`` (by
    default a negative count, size or bandwidth) or over ``maximum`` is a ParseError naming
    ``what``. Booleans and anything else that is not a number are ParseErrors too.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ParseError(f"{what}: not a number: {value!r}"[:200])
    try:
        result = float(value)
    except (ValueError, OverflowError) as exc:
        raise ParseError(f"{what}: not a number: {value!r}"[:200]) from exc
    if result != result or result in (float("inf"), float("-inf")):
        raise ParseError(f"{what}: not a finite number: {value!r}"[:200])
    if minimum is not None and result < minimum:
        raise ParseError(f"{what}: {value!r} is below {minimum:g}: not a real figure"[:200])
    if maximum is not None and result > maximum:
        raise ParseError(f"{what}: {value!r} is above {maximum:g}: not a real figure"[:200])
    return result


def _refuse_constant(name: str) -> float:
    raise ParseError(f"JSON holds {name}: not a number a tool measured")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):  # '1e999' and the like
        raise ParseError(f"JSON holds {text[:40]}: beyond any finite number")
    return value


# Python's json reads NaN, Infinity and 1e999 (as inf) by default; tool output never holds them.
JSON_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


def load_json(text: str) -> Any:
    """``json.loads`` that refuses NaN, Infinity and overflowing numbers with a ParseError.

    Malformed JSON still raises ``json.JSONDecodeError``, as ``json.loads`` does."""
    return JSON_DECODER.decode(text)
