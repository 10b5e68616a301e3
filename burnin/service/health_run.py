"""`burnin health` on the node: run the health checks under the budget, judge them with the
node's profile, drain the node in Slurm on a failure, keep the result and the metrics.

Needs neither the fleet store nor the inventory: the profile file the burnin_tools role put on
the node, this machine's commands, and `scontrol` for the drain. It never resumes a node, and
never rewrites a drain someone else set (an operator's reason stays; docs/in-service.md).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bringup.profiles.load import Profile
from burnin.checks.base import judge
from burnin.result import Result, Verdict
from burnin.service import local, slurm, state
from burnin.service.breaker import HELD_PREFIX, BreakerSettings
from burnin.service.health import (
    KERNEL_CHECK,
    Decision,
    command_limit,
    commands_of,
    decide,
    health_checks,
    judge_kernel_log,
    over_budget,
    summary,
)
from burnin.service.reasons import DrainOrigin, drain_origin, health_reason

# The kernel's random id of this boot (proc(5)): a new one means a new kernel log.
BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True)
class HealthOptions:
    profile: Profile
    node: str = ""  # the Slurm node name; "" = this host's short name
    state_dir: Path = state.DEFAULT_STATE_DIR
    textfile_dir: Path | None = None  # None: the default one, if node_exporter's dir exists
    budget_s: float | None = None  # None: the profile's health.budget_s
    container: bool = False
    drain: bool = True  # False (--no-drain): only judge and exit; NHC or a prolog drains
    slurm_conf: str | None = None
    boot_id_file: Path = BOOT_ID_FILE  # which boot the kernel log is of (the cursor: state.py)
    breaker_db: str | None = None  # the fleet store whose circuit breaker a drain passes (breaker_gate.py)


@dataclass
class HealthReport:
    node: str
    profile: str
    budget_s: float
    started_at: float
    finished_at: float = 0.0
    results: list[tuple[Result, float]] = field(default_factory=list)  # (result, its command's wall s)
    decision: Decision | None = None
    unknown_streak: dict[str, int] = field(default_factory=dict)  # check -> runs in a row UNKNOWN
    unknown_streak_limit: int = 0  # the profile's health.unknown_streak (0: never drains)
    slurm_action: str = ""  # what happened in Slurm: drained, left alone (why), none
    problems: list[str] = field(default_factory=list)  # state dir, metrics, Slurm: what went wrong
    state_file: str = ""
    metrics_file: str = ""

    @property
    def wall_s(self) -> float:
        return self.finished_at - self.started_at

    @property
    def exit_code(self) -> int:
        assert self.decision is not None
        return self.decision.exit_code

    def to_dict(self) -> dict[str, Any]:
        d = self.decision
        return {
            "node": self.node,
            "profile": self.profile,
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "finished_at_unix": self.finished_at,
            "wall_s": round(self.wall_s, 3),
            "budget_s": self.budget_s,
            "verdict": d.verdict.value if d else "UNKNOWN",
            "summary": summary({r.check: r for r, _ in self.results}),
            "drain": bool(d and d.drain),
            "reason": d.reason if d else "",
            "failed_check": d.check if d else "",
            "finding": d.finding if d else "",
            "slurm": self.slurm_action,
            "breaker_held": self.slurm_action.startswith(HELD_PREFIX),
            "problems": list(self.problems),
            "exit_code": self.exit_code if d else None,
            "checks": [{**r.to_dict(), "wall_s": round(w, 3)} for r, w in self.results],
            "unknown_streak": dict(self.unknown_streak),
            "unknown_streak_limit": self.unknown_streak_limit,
        }


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


def run_health(opts: HealthOptions) -> HealthReport:
    """One health run on this node (see the module docstring); never raises for a check."""
    profile = opts.profile
    budget = opts.budget_s if opts.budget_s is not None else profile.health.budget_s
    node = opts.node or socket.gethostname().split(".")[0]
    report = HealthReport(node, profile.name, budget, time.time())
    checks = health_checks(profile, opts.container)
    plan = commands_of(checks, profile)
    limits = {cmd: command_limit(cs, profile, budget) for cmd, cs in plan.items()}
    outputs = local.run_all(limits)
    cursor = state.read_cursor(opts.state_dir)
    new_cursor: object = cursor
    boot_id = _boot_id(opts.boot_id_file)
    for cmd, cs in plan.items():
        out = outputs[cmd]
        wall = (out.finished_at or 0) - (out.started_at or 0)
        for check in cs:
            if out.timed_out:
                result = over_budget(check, limits[cmd], budget)
            elif check.name == KERNEL_CHECK:
                result, new_cursor = judge_kernel_log(check, out, profile, cursor, boot_id)
            else:
                result = judge(check, out, profile)
            report.results.append((result, wall))
    order = {c.name: i for i, c in enumerate(checks)}
    report.results.sort(key=lambda rw: order.get(rw[0].check, len(order)))
    results = [r for r, _ in report.results]
    report.unknown_streak = next_streaks(state.read_streaks(opts.state_dir), results)
    report.unknown_streak_limit = profile.health.unknown_streak
    report.decision = streak_decision(
        decide(results, profile.health.drain_on_unknown),
        results,
        report.unknown_streak,
        profile.health.unknown_streak,
    )
    report.slurm_action = _act(report, opts)
    report.finished_at = time.time()
    _keep(report, opts, new_cursor, cursor)
    return report


def next_streaks(previous: dict[str, int], results: list[Result]) -> dict[str, int]:
    """Check -> how many runs in a row it has been UNKNOWN, this one included; 0 when this run
    judged it. A check that did not run this time is dropped (its streak is not this node's now)."""
    return {
        r.check: (int(previous.get(r.check, 0)) + 1 if r.verdict is Verdict.UNKNOWN else 0) for r in results
    }


def streak_decision(
    decision: Decision, results: list[Result], streaks: dict[str, int], limit: int
) -> Decision:
    """A check UNKNOWN ``limit`` runs in a row drains, with a reason of its own: one UNKNOWN is
    not proof of a fault (docs/in-service.md), a tool that never answers is (NVIDIA's health
    validation takes UNKNOWN out of service). A failure still drains with its finding."""
    if limit <= 0 or decision.verdict is Verdict.FAIL:
        return decision
    over = [r for r in results if r.verdict is Verdict.UNKNOWN and streaks.get(r.check, 0) >= limit]
    if not over:
        return decision
    first = over[0]
    finding = f"UNKNOWN {streaks[first.check]} runs in a row: {first.reason or 'could not judge'}"
    return Decision(decision.verdict, True, health_reason(first.check, finding), first.check, finding)


def act_and_keep(report: HealthReport, opts: HealthOptions) -> None:
    """Drain as ``report.decision`` says and keep the result and the metrics, as a run does, for
    a caller that judged by itself (`burnin watch`: burnin/service/watch.py). No cursor moves,
    and the UNKNOWN streaks stay the health check's own (the watcher judged one check)."""
    report.slurm_action = _act(report, opts)
    report.finished_at = time.time()
    _keep(report, opts, None, None, streaks=False)


def _boot_id(path: Path) -> str | None:
    """This boot's id; None when it cannot be read (the cursor is then found by its records alone)."""
    try:
        return path.read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _act(report: HealthReport, opts: HealthOptions) -> str:
    """Drain in Slurm when the decision says so and nobody else's drain is there. Never resumes."""
    decision = report.decision
    if decision is None or not decision.drain:
        return "none"
    if not opts.drain:
        return "not drained: --no-drain (the caller drains)"
    try:
        now = slurm.show_node(report.node, opts.slurm_conf)
    except slurm.SlurmError as exc:
        # Without the node's state an operator's drain could be overwritten (and its reason
        # lost to the project's, which the nightly would then undo): do not drain blind.
        report.problems.append(f"slurm: {exc}")
        return "not drained: the node's Slurm state could not be read"
    if now.drain:
        origin = drain_origin(now.reason)
        if origin is DrainOrigin.OPERATOR:
            return f"left alone: already drained by {now.user or 'someone'}: {now.reason}"
        if origin is DrainOrigin.PROJECT:
            return f"left alone: already drained by this project: {now.reason}"
        if now.reason == decision.reason:
            return "already drained with this reason"
    if opts.breaker_db and (held := _breaker_holds(report, opts)):
        return held
    try:
        slurm.drain(report.node, decision.reason, opts.slurm_conf)
    except slurm.SlurmError as exc:
        report.problems.append(f"slurm: {exc}")
        return "not drained: scontrol update failed"
    return "drained"


def _breaker_holds(report: HealthReport, opts: HealthOptions) -> str:
    """The fleet-wide circuit breaker's word on this drain: "" to drain, else why it is held."""
    from burnin.service import breaker_gate  # the store (SQLAlchemy) only for a node that uses it

    assert report.decision is not None and opts.breaker_db
    h = opts.profile.health
    settings = BreakerSettings(h.breaker_share, h.breaker_min_nodes, h.breaker_window_s)
    return breaker_gate.hold(
        report.node, report.decision.check, settings, opts.breaker_db, opts.slurm_conf, report.problems
    )


def _keep(
    report: HealthReport, opts: HealthOptions, new_cursor: object, cursor: object, streaks: bool = True
) -> None:
    """The last result, the kernel-log cursor and the metrics; a failure here is a problem in
    the report, never a lost verdict (the exit code and the drain already stand)."""
    textfile = opts.textfile_dir
    if textfile is None and state.DEFAULT_TEXTFILE_DIR.is_dir():
        textfile = state.DEFAULT_TEXTFILE_DIR
    if textfile is not None:
        try:
            report.metrics_file = str(state.write_metrics(textfile, report.to_dict()))
        except OSError as exc:
            report.problems.append(f"metrics dir {textfile}: {exc.strerror or exc}")
    try:
        report.state_file = str(opts.state_dir / state.LAST_RESULT)
        if new_cursor != cursor and isinstance(new_cursor, dict):
            state.write_cursor(opts.state_dir, new_cursor)
        if streaks:
            state.write_streaks(opts.state_dir, report.unknown_streak)
        state.write_last(opts.state_dir, report.to_dict())
    except OSError as exc:
        report.problems.append(f"state dir {opts.state_dir}: {exc.strerror or exc}")
        report.state_file = ""
