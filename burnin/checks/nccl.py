"""NCCL soak judgement (pure): one nccl-tests iteration, a whole soak, and the per-node verdicts
that come out of localising a failing group.

An iteration is judged on the bus bandwidth of its LARGEST message sizes against the profile's
floor (never on ``# Avg bus bandwidth``, which averages the latency-bound small sizes), on
``#wrong`` (any wrong element is data corruption), on test failures, and on the watchdog: an
iteration that made no progress for the timeout is a hang. NCCL WARN lines are recorded.
A group verdict says "something in this group is bad"; ``node_results`` turns a finished
``Localizer`` into the verdict of each node.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bringup.profiles.load import Profile
from burnin.parsers import ParseError
from burnin.parsers.nccl_tests import NcclTestRun, parse_nccl_tests
from burnin.plan.nccl_groups import Localizer, Trial
from burnin.result import Action, Finding, Result, Severity, Verdict, critical, info, warning

CHECK = "nccl"
SOAK_CHECK = "nccl_soak"
LOCALISE_CHECK = "nccl_localise"
LARGEST_SIZES = 2  # gate on the busbw of this many largest message sizes
UNSTABLE_FRACTION = 0.85  # an iteration this far under the soak's median busbw is a warning
# (the profile's floors.nccl_busbw_steady_fraction, which the stage and the rejudge pass)
MAX_WARN_FINDINGS = 10  # distinct NCCL WARN messages recorded per iteration

# Test failures whose cause is the node's software, not its hardware.
_CONFIG_CAUSES = {
    "system not yet initialized": "nvidia-fabricmanager is not running (NVSwitch systems need it)",
}


@dataclass(frozen=True)
class Hang:
    """The runner's watchdog killed the iteration: no progress for ``timeout_s``."""

    timeout_s: float
    silent_hosts: tuple[str, ...] = ()  # hosts whose ranks stopped making progress (the runner's view)
    last_output: str = ""  # the last line printed before the kill, for the evidence

    def to_dict(self) -> dict[str, Any]:
        return {"timeout_s": self.timeout_s, "silent_hosts": list(self.silent_hosts)}


def busbw_floor(profile: Profile, node_count: int, *, nvlink_domain: bool = False) -> float:
    """The floor for a group of ``node_count`` nodes: NVLink-only for one node, network otherwise.
    ``nvlink_domain``: the group is trays of one NVLink domain with multi-node NVLink on (the nccl
    stage's first pass on an NVL72): the profile's NVLink-domain floor where it covers the group
    (``nvlink_domain_floor``), else the network one, as before that floor existed."""
    floors = profile.floors
    if node_count <= 1:
        return floors.nccl_busbw_single_node_gbps
    if nvlink_domain and (nvlink := nvlink_domain_floor(profile, node_count)) is not None:
        return nvlink
    return floors.nccl_busbw_multi_node_gbps


def nvlink_domain_floor(profile: Profile, node_count: int) -> float | None:
    """``floors.nccl_busbw_nvlink_domain_gbps`` for a group of ``node_count`` trays of one NVLink
    domain; None when the profile has none, or when the group is smaller than the run its figure
    comes from (``floors.nccl_busbw_nvlink_domain_min_nodes``: GB300's 823 was measured on 3 trays,
    and no public figure says what 2 move; docs/platforms.md)."""
    floors = profile.floors
    if floors.nccl_busbw_nvlink_domain_gbps is None or node_count < floors.nccl_busbw_nvlink_domain_min_nodes:
        return None
    return floors.nccl_busbw_nvlink_domain_gbps


GROUP_SLOW_CAUSE = "a slow node, NIC or PCIe path in the group"
NVLINK_SLOW_CAUSE = (
    "the NVLink domain's floor (floors.nccl_busbw_nvlink_domain_gbps), with multi-node NVLink on: the "
    "rack's NVLink switch trays, or a tray's NVLink links"
)


def largest_busbw(
    run: NcclTestRun, largest: int = LARGEST_SIZES
) -> tuple[float | None, list[dict[str, Any]]]:
    """Bus bandwidth at the ``largest`` largest sizes (mean of those rows, out-of-place and in-place),
    the worst sweep when the output holds several (``-N``); with the rows it came from."""
    worst: float | None = None
    worst_rows: list[dict[str, Any]] = []
    for cycle in run.cycles():
        rows = [r for r in run.largest_rows(largest, cycle) if r.busbw_gbps is not None]
        if not rows:
            continue
        value = sum(r.busbw_gbps or 0.0 for r in rows) / len(rows)
        if worst is None or value < worst:
            worst = value
            worst_rows = [{"size": r.size, "busbw_gbps": round(r.busbw_gbps or 0.0, 3)} for r in rows]
    return (round(worst, 3) if worst is not None else None), worst_rows


def _ranks_text(run: NcclTestRun | None, host: str) -> str:
    ranks = run.ranks_on(host) if run else ()
    if not ranks:
        return host
    span = f"{ranks[0]}" if len(ranks) == 1 else f"{ranks[0]}-{ranks[-1]}"
    if len(ranks) > 1 and ranks[-1] - ranks[0] + 1 != len(ranks):
        span = ",".join(str(r) for r in ranks)
    return f"{host} (rank{'s' if len(ranks) > 1 else ''} {span})"


def _size_text(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def _hang_finding(hang: Hang, run: NcclTestRun | None) -> Finding:
    last = run.rows[-1] if run and run.rows else None
    after = f" after the {_size_text(last.size)} row" if last else " before the first result row"
    if hang.silent_hosts:
        who = "; silent: " + ", ".join(_ranks_text(run, h) for h in hang.silent_hosts)
    else:
        who = "; the launcher could not tell which ranks went silent"
    return critical(
        f"hang: no progress for {hang.timeout_s:g} s{after}{who}",
        Action.REBOOT,
        hang.last_output or (f"last row: size {last.size} busbw {last.busbw_gbps}" if last else ""),
        ", ".join(hang.silent_hosts),
    )


def _error_findings(run: NcclTestRun) -> list[Finding]:
    out: list[Finding] = []
    seen: set[tuple[str, str | None, str]] = set()
    for err in run.errors:
        if err.kind == "trace" or (err.kind, err.host, err.message) in seen:
            continue
        seen.add((err.kind, err.host, err.message))
        where = f" on {err.host}" if err.host else ""
        cause = next((why for key, why in _CONFIG_CAUSES.items() if key in err.message), None)
        if cause:
            out.append(
                critical(f"nccl-tests {err.kind} failure{where}: {cause}", Action.RECONFIGURE, err.line)
            )
        elif err.kind == "usage":
            out.append(
                critical(f"nccl-tests could not start{where}: {err.message}", Action.RECONFIGURE, err.line)
            )
        elif err.kind == "timeout":
            out.append(
                critical(
                    f"nccl-tests timed out{where} ({err.message})", Action.REBOOT, err.line, err.host or ""
                )
            )
        else:
            label = {"cuda": "CUDA failure", "nccl": "NCCL failure", "launcher": "launcher error"}.get(
                err.kind, "error"
            )
            out.append(
                critical(f"nccl-tests {label}{where}: {err.message}", Action.REBOOT, err.line, err.host or "")
            )
    return out


def _warn_findings(run: NcclTestRun) -> list[Finding]:
    groups: dict[str, list[str]] = {}
    first_line: dict[str, str] = {}
    for w in run.warns:
        groups.setdefault(w.message, []).append(w.host)
        first_line.setdefault(w.message, w.line)
    out = []
    for message, hosts in list(groups.items())[:MAX_WARN_FINDINGS]:
        on = ", ".join(dict.fromkeys(hosts))
        count = f" x{len(hosts)}" if len(hosts) > 1 else ""
        out.append(info(f"NCCL WARN{count} on {on}: {message}", first_line[message]))
    if len(groups) > MAX_WARN_FINDINGS:
        out.append(info(f"{len(groups) - MAX_WARN_FINDINGS} more distinct NCCL WARN messages not listed"))
    return out


def judge_iteration(
    run: NcclTestRun | None,
    floor_gbps: float | None,
    *,
    largest: int = LARGEST_SIZES,
    hang: Hang | None = None,
    rc: int | None = 0,
    seconds: float | None = None,
    check: str = CHECK,
    parse_error: str = "",
    slow_cause: str = GROUP_SLOW_CAUSE,
) -> Result:
    """One iteration of a group. ``run`` is None when the output did not parse (``parse_error``
    says why); ``hang`` when the watchdog killed it; ``rc`` the launcher's exit status;
    ``slow_cause`` what a bandwidth under the floor points at (NVLink within one node)."""
    findings: list[Finding] = []
    metrics: dict[str, Any] = {
        "busbw_gbps": None,
        "floor_gbps": floor_gbps,
        "wrong": None,
        "seconds": round(seconds, 3) if seconds is not None else None,
        "complete": bool(run and run.complete),
        "hang": hang.to_dict() if hang else None,
    }
    if hang:
        findings.append(_hang_finding(hang, run))
    if run is None:
        if hang:
            return Result.judged(check, findings, metrics)
        return Result.unknown(check, f"could not parse the nccl-tests output: {parse_error}", metrics)

    # A run cut short never reached its largest sizes: its bandwidth is not judged.
    busbw, rows = largest_busbw(run, largest) if run.complete else (None, [])
    metrics.update(
        busbw_gbps=busbw,
        largest_rows=rows,
        wrong=run.wrong,
        out_of_bounds=run.out_of_bounds,
        avg_busbw_gbps=run.avg_busbw_gbps,
        collective=run.collective,
        hosts=list(run.hosts),
        ranks=len(run.ranks),
        nccl_version=run.nccl_version,
        validation=run.validation,
        warns=len(run.warns),
    )
    findings += _error_findings(run)

    bad_rows = [r for r in run.rows if (r.wrong or 0) > 0]
    if bad_rows:
        sizes = ", ".join(_size_text(r.size) for r in bad_rows[:4]) + (" ..." if len(bad_rows) > 4 else "")
        findings.append(
            critical(
                f"data corruption: {sum(r.wrong or 0 for r in bad_rows)} wrong elements (#wrong) at {sizes}",
                Action.RMA,
                f"size {bad_rows[0].size}: #wrong {[s.wrong for s in bad_rows[0].sides]}",
            )
        )
    elif run.out_of_bounds_failed:
        findings.append(
            critical(
                f"data corruption: {run.out_of_bounds} out-of-bounds values (validation FAILED)",
                Action.RMA,
                f"Out of bounds values : {run.out_of_bounds} FAILED",
            )
        )

    if busbw is not None and floor_gbps is not None and busbw < floor_gbps:
        sizes = ", ".join(_size_text(r["size"]) for r in rows)
        findings.append(
            critical(
                f"bus bandwidth {busbw:g} GB/s at the largest sizes ({sizes}) is below the floor "
                f"{floor_gbps:g} GB/s: {slow_cause}",
                Action.RESEAT,
                "; ".join(f"size {r['size']}: busbw {r['busbw_gbps']}" for r in rows),
            )
        )
    elif busbw is not None and floor_gbps is None:
        findings.append(info(f"bus bandwidth {busbw:g} GB/s (no floor in the profile to judge it by)"))
    findings += _warn_findings(run)

    incomplete = ""
    if not run.complete and not hang and not any(f.severity is Severity.CRITICAL for f in findings):
        if rc not in (0, None):
            findings.append(
                critical(
                    f"nccl-tests exited {rc} before printing its result footer",
                    Action.REBOOT,
                    run.errors[-1].line if run.errors else "",
                )
            )
        else:
            incomplete = "the output ends before the 'Avg bus bandwidth' footer: the run did not finish"
    elif run.complete and not run.rows and not findings:
        incomplete = "no result rows in the output"
    elif run.complete and rc not in (0, None) and not any(f.severity is Severity.CRITICAL for f in findings):
        findings.append(warning(f"nccl-tests printed a complete result but the launcher exited {rc}"))
    return Result.judged(check, findings, metrics, incomplete=incomplete)


def judge_output(
    text: str,
    floor_gbps: float | None,
    *,
    largest: int = LARGEST_SIZES,
    hang: Hang | None = None,
    rc: int | None = 0,
    seconds: float | None = None,
    check: str = CHECK,
    slow_cause: str = GROUP_SLOW_CAUSE,
) -> Result:
    """Parse and judge one iteration's output (stdout, or the ``-J`` JSON); ``slow_cause`` as
    ``judge_iteration`` takes it."""
    try:
        run: NcclTestRun | None = parse_nccl_tests(text)
        error = ""
    except ParseError as exc:
        run, error = None, str(exc)
    return judge_iteration(
        run,
        floor_gbps,
        largest=largest,
        hang=hang,
        rc=rc,
        seconds=seconds,
        check=check,
        parse_error=error,
        slow_cause=slow_cause,
    )


def _iterations_text(numbers: list[int], total: int) -> str:
    if len(numbers) == 1:
        return f"iteration {numbers[0]}"
    shown = ", ".join(str(i) for i in numbers[:8]) + (", ..." if len(numbers) > 8 else "")
    return f"{len(numbers)} of {total} iterations ({shown})"


def judge_soak(
    iterations: Sequence[Result],
    *,
    check: str = SOAK_CHECK,
    per_iteration: int = 1,
    steady_fraction: float = UNSTABLE_FRACTION,
) -> Result:
    """A group's soak: the judged runs, in order, ``per_iteration`` runs (one per test) to each
    soak iteration, numbered from 1 as the stage's progress line numbers them. FAIL if any run
    failed; each distinct finding once, with the iterations it occurred in. An iteration under
    ``steady_fraction`` of the median is a WARN.

    The first iteration is a warm-up for the stability comparison: judged against the floor,
    for corruption and hangs like every other, but not against the soak's median (a group's first
    launch opens its connections right after the previous stage's load; the lab's first one
    measured up to a third under the steady ones)."""
    if not iterations:
        return Result.unknown(check, "no soak iteration ran", {"iterations": []})
    per = max(1, per_iteration)
    number = [i // per + 1 for i in range(len(iterations))]
    rows = [
        {
            "index": number[i],
            "busbw_gbps": r.metrics.get("busbw_gbps"),
            "wrong": r.metrics.get("wrong"),
            "seconds": r.metrics.get("seconds"),
            "verdict": r.verdict.value,
        }
        for i, r in enumerate(iterations)
    ]
    total = number[-1]
    grouped: dict[tuple[str, str, str, str], list[int]] = {}
    evidence: dict[tuple[str, str, str, str], str] = {}
    for i, r in enumerate(iterations):
        for f in r.findings:
            key = (f.severity.value, f.action.value, f.message, f.subject)
            if number[i] not in grouped.setdefault(key, []):
                grouped[key].append(number[i])
            evidence.setdefault(key, f.evidence)
    findings = [
        Finding(
            f"{_iterations_text(idx, total)}: {msg}",
            Severity(sev),
            Action(act),
            evidence[key],
            subj,
        )
        for key, idx in grouped.items()
        for sev, act, msg, subj in [key]
    ]
    values = [
        (row["index"], row["busbw_gbps"]) for row in rows if isinstance(row["busbw_gbps"], (int, float))
    ]
    metrics: dict[str, Any] = {
        "iterations": rows,
        "iterations_run": total,
        "failed_iterations": len({number[i] for i, r in enumerate(iterations) if r.verdict is Verdict.FAIL}),
        "floor_gbps": next(
            (r.metrics.get("floor_gbps") for r in iterations if r.metrics.get("floor_gbps")), None
        ),
        "busbw_min_gbps": min((v for _, v in values), default=None),
        "busbw_median_gbps": round(statistics.median(v for _, v in values), 3) if values else None,
        "busbw_max_gbps": max((v for _, v in values), default=None),
        "hosts": next((r.metrics["hosts"] for r in iterations if r.metrics.get("hosts")), []),
    }
    steady = [(i, v) for i, v in values if i > 1]  # after the warm-up
    if len(steady) >= 3:
        median = statistics.median(v for _, v in steady)
        low_index, low = min(steady, key=lambda iv: iv[1])
        if median > 0 and low < steady_fraction * median:
            findings.append(
                warning(
                    f"bus bandwidth unstable over the soak: {low:g} GB/s in iteration {low_index} "
                    f"against a median of {median:g} GB/s (iterations 2 to {total}; the first is a warm-up)",
                    Action.MONITOR,
                )
            )
    unknown = sorted({number[i] for i, r in enumerate(iterations) if r.verdict is Verdict.UNKNOWN})
    incomplete = ""
    if unknown:
        first = next(r for r in iterations if r.verdict is Verdict.UNKNOWN)
        incomplete = f"{_iterations_text(unknown, total)} could not be judged: {first.reason}"
    return Result.judged(check, findings, metrics, incomplete=incomplete)


def _trial_text(loc: Localizer, trial: Trial) -> str:
    names = loc.ordered(trial.nodes)
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    outcome = "passed" if trial.passed else "FAILED"
    detail = f" ({trial.detail})" if trial.detail else ""
    return f"round {trial.round} trial {trial.index} [{trial.purpose}] {outcome}{detail}: {shown}"


def _culprit_action(direct: Sequence[Trial], trial_results: Mapping[int, Result]) -> Action:
    for trial in direct:
        result = trial_results.get(trial.index)
        for f in result.findings if result else ():
            if f.severity is Severity.CRITICAL:
                return f.action
    return Action.REBOOT


def node_results(
    loc: Localizer, trial_results: Mapping[int, Result] | None = None, *, check: str = LOCALISE_CHECK
) -> dict[str, Result]:
    """Each node's verdict from a localisation: culprit FAIL (with the trials that isolate it),
    cleared PASS (an anchor that passed no trial: WARN), unresolved (or unfinished) UNKNOWN.
    ``trial_results`` (Trial.index -> the judged iteration of that trial) supplies a culprit's
    action: RMA for corruption, ..."""
    trial_results = trial_results or {}
    blames = {b.node: b for b in loc.blames()}
    unresolved = loc.unresolved
    cleared = loc.cleared
    out: dict[str, Result] = {}
    for node in loc.nodes:
        trials = loc.evidence(node)
        counts = {"trials": len(trials), "passed_trials": sum(t.passed for t in trials)}
        if node in blames:
            b = blames[node]
            confirmed = "" if b.confirmed else " (not confirmed: no second trial could be made)"
            finding = critical(
                f"{node} is a bad node: {len(b.direct)} failed trial(s) in which every other node was proven "
                f"good elsewhere{confirmed}",
                _culprit_action(b.direct, trial_results),
                "\n".join(_trial_text(loc, t) for t in b.direct),
                node,
            )
            metrics = {**counts, "direct_trials": [t.index for t in b.direct], "confirmed": b.confirmed}
            out[node] = Result.judged(check, [finding], metrics)
        elif node in unresolved:
            out[node] = Result.unknown(
                check, f"localisation could not judge {node}: {unresolved[node]}", counts
            )
        elif node in cleared and not counts["passed_trials"] and node in loc.anchors:
            # A golden partner that stood only beside culprits: nothing against it, but no run of
            # its own passed here either (a lone partner has nobody to be screened with).
            culprits = sorted({c for t in trials for c in blames if c in t.nodes})
            finding = warning(
                f"{node} was proven good before this run (an anchor) and passed no trial of its own: "
                f"every trial it was in failed, explained by {', '.join(culprits) or 'a culprit'}",
                Action.MONITOR,
                "\n".join(_trial_text(loc, t) for t in trials),
                node,
            )
            out[node] = Result.judged(check, [finding], counts)
        elif node in cleared:
            out[node] = Result(check, Verdict.PASS, counts, (), f"passed {counts['passed_trials']} trial(s)")
        else:
            out[node] = Result.unknown(check, "localisation did not finish", counts)
    return out


def text_closed(text: str) -> bool:
    """Whether a text output reached its end: nccl-tests prints a lone '#' after the 'Avg bus
    bandwidth' footer, and from 2.19 '# Collective test concluded' after that (src/common.cu).
    A run that announced itself ('# Collective test starting') is whole only with the concluding
    line; an older one with either. Without them the capture stopped at or before the footer."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last_footer = max((i for i, line in enumerate(lines) if "Avg bus bandwidth" in line), default=None)
    after = lines[last_footer + 1 :] if last_footer is not None else []
    if any(line.startswith("# Collective test starting") for line in lines):
        return any(line.startswith("# Collective test concluded") for line in after)
    return any(line == "#" or line.startswith("# Collective test concluded") for line in after)
