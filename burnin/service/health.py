"""`burnin health`, the judging half (pure): which checks run, new kernel-log lines, the budget,
and the verdict -> drain decision.

The checks are the preflight checks that are cheap and safe while a job runs on the node (read
counters and states, start no load); each is the same ``command()`` + ``evaluate()`` the burn-in
runs, so a node is judged in service exactly as it was judged to become golden. What runs them,
drains the node and keeps the state is ``burnin.service.health_run``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from bringup.profiles.load import Profile
from burnin.checks import REGISTRY
from burnin.checks.base import Check, CommandOutput, judge
from burnin.parsers import ParseError
from burnin.parsers.kernel_log import require_kernel_log
from burnin.result import Result, Severity, Verdict, worst
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
    return [c for c in REGISTRY.in_service(on_request=container) if c.applies(profile)]


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

# `dmesg --time-format iso`: 2025-01-17T15:36:26,128279+00:00 (every record carries one).
_ISO_LINE = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?) ")


def _stamp(ts: str) -> datetime | None:
    """The stamp as an aware time (one printed without an offset is taken as UTC)."""
    try:
        stamp = datetime.fromisoformat(ts.replace(",", ".").replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=timezone.utc)


def new_kernel_lines(text: str, cursor: str | None) -> tuple[str, str | None]:
    """The lines of ``dmesg --time-format iso`` logged after ``cursor`` (the ISO stamp of the last
    line the previous run saw; None: every line), and the new cursor.

    A line without a stamp continues the record before it (NVRM prints multi-line messages), so
    it goes with that record. A record stamped exactly at the cursor was seen. After a reboot
    the log starts again with later stamps, all new; a cleared log has nothing new.
    """
    since = _stamp(cursor) if cursor else None
    new: list[str] = []
    last = cursor
    keep = since is None
    for line in text.splitlines(keepends=True):
        m = _ISO_LINE.match(line)
        if m:
            stamp = _stamp(m.group("ts"))
            keep = since is None or (stamp is not None and stamp > since)
            if stamp is not None and (last is None or keep):
                last = m.group("ts")
        if keep:
            new.append(line)
    return "".join(new), last


def judge_kernel_log(
    check: Check, output: CommandOutput, profile: Profile, cursor: str | None
) -> tuple[Result, str | None]:
    """The kernel-log check on the lines new since ``cursor``; returns (result, cursor to keep).

    The whole output must still be a kernel log (a dmesg that failed or printed something else
    is UNKNOWN, as in the burn-in); the cursor moves only when the new lines were judged, so a
    line is never skipped unjudged.
    """
    ran = not (output.error or output.timed_out or output.rc not in (0, None))
    if not ran or not output.stdout.strip() or not output.stdout.endswith("\n"):
        return judge(check, output, profile), cursor  # UNKNOWN, saying why, as in the burn-in
    try:
        # The whole output must be a kernel log; only the new lines are judged (judging the
        # whole of a long-running node's log every run took 1.9 s for 60,000 lines).
        require_kernel_log(output.stdout)
    except ParseError as exc:
        return Result.unknown(check.name, f"could not parse the output: {exc}"), cursor
    text, moved = new_kernel_lines(output.stdout, cursor)
    if not text.strip():
        metrics = {"new_lines": 0, "since": cursor}
        return Result(check.name, Verdict.PASS, metrics, (), "no new kernel-log lines"), moved
    result = judge(check, replace(output, stdout=text), profile)
    result = replace(result, metrics={**result.metrics, "new_lines": len(text.splitlines()), "since": cursor})
    return result, (moved if result.verdict is not Verdict.UNKNOWN else cursor)


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
