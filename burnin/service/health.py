"""`burnin health`, the judging half (pure): which checks run, new kernel-log lines, the budget,
and the verdict -> drain decision.

The checks are the preflight checks that are cheap and safe while a job runs on the node (read
counters and states, start no load); each is the same ``command()`` + ``evaluate()`` the burn-in
runs, so a node is judged in service exactly as it was judged to become golden. What runs them,
drains the node and keeps the state is ``burnin.service.health_run``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from bringup.profiles.load import Profile
from burnin.checks import REGISTRY
from burnin.checks.base import Check, CommandOutput, judge
from burnin.checks.vendor import fits_vendor
from burnin.parsers import ParseError
from burnin.parsers.kernel_log import require_kernel_log
from burnin.result import Result, Severity, Verdict, info, worst
from burnin.service.reasons import health_reason

# Each check says whether it runs here (Check.service): ALWAYS for the cheap, read-only ones safe
# beside a running job (GPU inventory, ECC and row-remap state, the kernel log - new lines only -,
# IB port state, the fabric manager, disk space); ON_REQUEST for the container check, which
# starts a container on every GPU and may pull an image: only when asked (--container).
HEALTH_CHECKS: tuple[str, ...] = tuple(c.name for c in REGISTRY.in_service())
KERNEL_CHECK = "kernel_log"

EXIT_IN_SERVICE = 0  # every check passed or warned, or UNKNOWN the profile does not drain for
EXIT_DRAIN = 1  # a check failed (or UNKNOWN with health.drain_on_unknown): the node must drain
EXIT_CANNOT_START = 3  # no profile, no state dir: nothing was judged (2 is click's usage error)


def health_checks(profile: Profile, container: bool = False) -> list[Check]:
    """The checks `burnin health` runs on a node of this profile (with ``container``, those it
    runs only when asked too), in the order they are registered."""
    return [
        c for c in REGISTRY.in_service(on_request=container) if fits_vendor(c, profile) and c.applies(profile)
    ]


def commands_of(checks: Sequence[Check], profile: Profile) -> dict[str, list[Check]]:
    """Each distinct command once (five GPU checks read one `nvidia-smi -q`) -> its checks."""
    out: dict[str, list[Check]] = {}
    for check in checks:
        command = check.command(profile)
        if command is not None:
            out.setdefault(command, []).append(check)
    return out


def command_limit(checks: Sequence[Check], profile: Profile, budget_s: float) -> float:
    """A command may run as long as the longest of its checks allows, within the budget."""
    return min(budget_s, max(c.timeout(profile) for c in checks))


# -- the kernel log: only what is new since the last run ------------------------------------------
#
# The position is kept as the boot id and the last records judged, never as a time: dmesg makes
# each ISO stamp from the record's time since boot plus the boot time it works out from the
# clock now (util-linux dmesg), so a clock step moves every stamp, old and new, and a stamp kept
# from before the step says nothing about which records are new. Within one output the stamps
# share that offset, so the gaps between records are times since boot, which no step changes: a
# record is found again by its text and its gaps to the records before it (docs/in-service.md).

# A record begins with its stamp: `dmesg --time-format iso` (2025-01-17T15:36:26,128279+00:00),
# or dmesg's default, seconds since boot ([ 1084456.074562]); a line without one continues it.
_ISO_LINE = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?) ")
_BOOT_LINE = re.compile(r"^\[\s*(?P<s>\d+)\.(?P<us>\d{6})\] ")
CURSOR_RECORDS = 4  # records kept to find the position again: texts and gaps to the µs
CURSOR_VERSION = 2


def _stamp(ts: str) -> datetime | None:
    """The stamp as an aware time (one printed without an offset is taken as UTC)."""
    try:
        stamp = datetime.fromisoformat(ts.replace(",", ".").replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class _Record:
    lines: str  # as printed, continuation lines included
    stamp: str  # its stamp as printed ("" when it has none)
    body: str  # its text without the stamp


def _records(text: str) -> list[_Record]:
    out: list[_Record] = []
    for line in text.splitlines(keepends=True):
        m = _ISO_LINE.match(line) or _BOOT_LINE.match(line)
        if m or not out:
            stamp = m.group(0) if m else ""
            out.append(_Record(line, stamp, line[len(stamp) :]))
        else:
            last = out[-1]
            out[-1] = _Record(last.lines + line, last.stamp, last.body + line)
    return out


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _micros(stamp: str) -> int | None:
    """A record's stamp in µs, since the epoch or since boot (only gaps are compared); None if
    it has none. Worked out only for the few records a cursor compares, not for the whole log."""
    if boot := _BOOT_LINE.match(stamp):
        return int(boot.group("s")) * 1_000_000 + int(boot.group("us"))
    if (iso := _ISO_LINE.match(stamp)) and (at := _stamp(iso.group("ts"))) is not None:
        return (at - _EPOCH) // timedelta(microseconds=1)
    return None


def _digest(record: _Record) -> str:
    return hashlib.sha256(record.body.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _gap(newest: _Record, record: _Record) -> int | None:
    a, b = _micros(newest.stamp), _micros(record.stamp)
    return None if a is None or b is None else a - b


@dataclass(frozen=True)
class KernelCursor:
    """Where the last judged kernel log ended: the boot it was made in, and its last records
    (oldest first), each as its µs before the last one and a digest of its text."""

    boot_id: str | None
    last: tuple[tuple[int | None, str], ...]

    def to_json(self) -> dict[str, Any]:
        return {"version": CURSOR_VERSION, "boot_id": self.boot_id, "last": [list(r) for r in self.last]}

    @classmethod
    def of(cls, records: Sequence[_Record], boot_id: str | None) -> KernelCursor | None:
        if not records:
            return None
        kept = records[-CURSOR_RECORDS:]
        return cls(boot_id, tuple((_gap(kept[-1], r), _digest(r)) for r in kept))


def cursor_from_json(saved: object) -> tuple[KernelCursor | None, str]:
    """The cursor a state file held (its JSON, or the cursor itself), or None and why it cannot
    be used (nothing: the first run; an older version's time stamp; something else)."""
    if saved is None:
        return None, "no cursor: the first run"
    if isinstance(saved, KernelCursor):
        return saved, ""
    if isinstance(saved, Mapping) and saved.get("version") == CURSOR_VERSION:
        last = saved.get("last")
        boot_id = saved.get("boot_id")
        if (
            isinstance(last, list)
            and last
            and (boot_id is None or isinstance(boot_id, str))
            and all(
                isinstance(r, list)
                and len(r) == 2
                and (r[0] is None or (isinstance(r[0], int) and not isinstance(r[0], bool)))
                and isinstance(r[1], str)
                for r in last
            )
        ):
            return KernelCursor(boot_id, tuple((r[0], r[1]) for r in last)), ""
    if isinstance(saved, Mapping) and isinstance(saved.get("kernel_log"), str):
        return None, "the cursor was a time stamp (an older version's), which a clock step makes wrong"
    return None, "the cursor could not be read"


@dataclass(frozen=True)
class KernelLines:
    text: str  # the lines logged after the cursor (all of them when it was reset)
    cursor: KernelCursor | None  # where this log ends (None: it has no record)
    reset: str  # "" when continued from the cursor, else why the whole log is new


def new_kernel_lines(text: str, saved: object, boot_id: str | None) -> KernelLines:
    """The records of a kernel log logged after the cursor ``saved`` (as the state file held it)
    and the cursor where this log ends. ``boot_id``: the node's, now (None: unknown).

    The cursor's last record is looked for with the records before it: the same texts, the
    same gaps between their stamps. Found, what follows it is new, whatever the clock did
    meanwhile; the oldest records the ring buffer dropped do not matter. Not found (a new boot,
    a cleared or rewound log, or the ring buffer went past it: every record there came after
    it), the whole log is new, and ``reset`` says why.
    """
    records = _records(text)
    cursor, reset = cursor_from_json(saved)
    here = KernelCursor.of(records, boot_id)
    if cursor is not None and boot_id and cursor.boot_id and cursor.boot_id != boot_id:
        reset = f"new boot (boot id {cursor.boot_id} -> {boot_id})"
    elif cursor is not None:
        at = _position(records, cursor)
        if at is not None:
            return KernelLines("".join(r.lines for r in records[at + 1 :]), here, "")
        reset = (
            "the last line judged is no longer in the log (cleared, rewound, or the ring buffer went past it)"
        )
    return KernelLines(text, here, reset)


def _position(records: Sequence[_Record], cursor: KernelCursor) -> int | None:
    """The index of the cursor's last record in ``records`` (the latest that matches), or None.
    Near the start of the log, the records the ring buffer dropped are not asked for."""
    want = cursor.last
    for i in range(len(records) - 1, -1, -1):
        if _digest(records[i]) != want[-1][1]:
            continue
        before = min(len(want) - 1, i)
        if all(
            _digest(records[i - j]) == want[-1 - j][1] and _gap(records[i], records[i - j]) == want[-1 - j][0]
            for j in range(1, before + 1)
        ):
            return i
    return None


def judge_kernel_log(
    check: Check, output: CommandOutput, profile: Profile, saved: object, boot_id: str | None = None
) -> tuple[Result, object]:
    """The kernel-log check on the lines new since the cursor ``saved`` (as the state file held
    it); returns (result, the cursor to keep, as JSON).

    The whole output must still be a kernel log (a dmesg that failed or printed something else
    is UNKNOWN, as in the burn-in); the cursor moves only when the new lines were judged, so a
    line is never skipped unjudged. A cursor that could not be used is said: in the metrics
    (``cursor``), and, when there was one, as a finding of its own.
    """
    ran = not (output.error or output.timed_out or output.rc not in (0, None))
    if not ran or not output.stdout.strip() or not output.stdout.endswith("\n"):
        return judge(check, output, profile), saved  # UNKNOWN, saying why, as in the burn-in
    try:
        # The whole output must be a kernel log; only the new lines are judged (judging the
        # whole of a long-running node's log every run took 1.9 s for 60,000 lines).
        require_kernel_log(output.stdout)
    except ParseError as exc:
        return Result.unknown(check.name, f"could not parse the output: {exc}"), saved
    lines = new_kernel_lines(output.stdout, saved, boot_id)
    moved = lines.cursor.to_json() if lines.cursor is not None else saved
    metrics: dict[str, Any] = {"cursor": f"reset: {lines.reset}" if lines.reset else "continued"}
    notes = ()
    if lines.reset and saved is not None:
        notes = (info(f"kernel-log cursor reset: {lines.reset}; the whole log was judged"),)
    if not lines.text.strip():
        metrics["new_lines"] = 0
        return Result(check.name, Verdict.PASS, metrics, notes, "no new kernel-log lines"), moved
    result = judge(check, replace(output, stdout=lines.text), profile)
    result = replace(
        result,
        metrics={**result.metrics, **metrics, "new_lines": len(lines.text.splitlines())},
        findings=result.findings + notes,
    )
    return result, (moved if result.verdict is not Verdict.UNKNOWN else saved)


def over_budget(check: Check, limit_s: float, budget_s: float) -> Result:
    """A check whose command was stopped at its limit: UNKNOWN, never a pass."""
    if limit_s < budget_s:
        return Result.unknown(check.name, f"timed out after {limit_s:g} s")
    return Result.unknown(check.name, f"still running at the end of the health budget ({budget_s:g} s)")


# -- the decision --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    verdict: Verdict  # the worst of the checks
    drain: bool
    reason: str = ""  # the Slurm reason when drain: "bringup: <check>: <finding>"
    check: str = ""  # the check that decided it
    finding: str = ""  # what it found, whole (the reason may be cut)

    @property
    def exit_code(self) -> int:
        return EXIT_DRAIN if self.drain else EXIT_IN_SERVICE


def decide(results: Iterable[Result], drain_on_unknown: bool) -> Decision:
    """FAIL drains with the first critical finding; UNKNOWN drains only when the profile says."""
    results = list(results)
    verdict = worst(r.verdict for r in results) if results else Verdict.UNKNOWN
    failed = [r for r in results if r.verdict is Verdict.FAIL]
    if failed:
        first = failed[0]
        crit = next((f for f in first.findings if f.severity is Severity.CRITICAL), None)
        finding = crit.message if crit else (first.reason or "failed")
        return Decision(verdict, True, health_reason(first.check, finding), first.check, finding)
    if not results and drain_on_unknown:
        return Decision(verdict, True, health_reason("health", "no check ran"), "health", "no check ran")
    unknown = [r for r in results if r.verdict is Verdict.UNKNOWN]
    if unknown and drain_on_unknown:
        first = unknown[0]
        finding = f"unknown: {first.reason or 'could not judge'}"
        return Decision(verdict, True, health_reason(first.check, finding), first.check, finding)
    return Decision(verdict, False)


def summary(results: Mapping[str, Result]) -> str:
    """One line: 'FAIL gpu_inventory; UNKNOWN kernel_log; 5 PASS'."""
    bad = [f"{r.verdict} {name}" for name, r in results.items() if r.verdict not in (Verdict.PASS,)]
    good = sum(1 for r in results.values() if r.verdict is Verdict.PASS)
    return "; ".join([*bad, f"{good} PASS"]) if bad else f"{good} PASS"
