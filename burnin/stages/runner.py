"""Run burn-in stages over nodes: one round trip per node per stage, results saved as they arrive.

The runner is the I/O edge of the check model: it builds each node's batch (burnin.stages.batch),
sends it (SSH fan-out or this machine), judges each check (pure), and writes every result to
the fleet store as soon as that node's answer is in (with those that come within ``GATHER_S``),
so an interrupted run keeps all it had.
A node stops at its first failing stage (unless told to keep going) and leaves ``burnin`` for
``failed`` with the findings that failed it; a node that passes every stage stays ``burnin``,
ready for the next stage or the golden selection.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from bringup.fleet.transitions import Note, Transition, states_of, transition_many
from bringup.local.capture import run_bounded
from bringup.profiles.load import Profile
from bringup.ssh.fanout import fan_out_batches
from burnin.checks.base import Check, CommandOutput, judge
from burnin.checks.cut import told_of_cut
from burnin.result import Result, Severity, Verdict, worst
from burnin.stages import group_stages, is_group_stage, stage_checks
from burnin.stages.batch import Job, build_script, job_keys, parse_output
from burnin.stages.jobs import BurninOutcome, GroupContext, NodeJob, StageOutcome

# The node's own time limit on top of its checks' (connecting, the shell, the framing).
_OVERHEAD_S = 30
# Answers that come within this long of one another are judged and saved together: a store
# transaction costs about 1.5 ms of CPU whatever it holds, and one answer arrives every few ms
# of a 1,000-node preflight. An answer waits at most this long before it is saved.
GATHER_S = 0.2
# Allocations between two collections of the young generation during a run (Python's default: 700).
YOUNG_GC_THRESHOLD = 20_000
# How a check's evidence joins its output's parts: stdout, then these when there is something.
STDERR_MARK = "\n--- stderr ---\n"
EXIT_MARK = "\n--- exit status "  # then the non-zero exit status and ' ---'


# ---- pure: a stage's batch and its judgement -----------------------------------------------


def stage_batch(
    checks: list[Check], profile: Profile, token: str | None = None
) -> tuple[str, str, dict[str, str]]:
    """The batch script for a node, its frame token, and check name -> job key."""
    commands = {c.name: c.command(profile) for c in checks}
    keys = job_keys({name: cmd for name, cmd in commands.items() if cmd is not None})
    jobs: dict[str, Job] = {}
    for check in checks:
        key = keys.get(check.name)
        if key is None:
            continue
        timeout = check.timeout(profile)
        if key in jobs:  # a shared command gets the longest time any of its checks allows
            timeout = max(timeout, jobs[key].timeout_s)
        jobs[key] = Job(key, commands[check.name] or "", timeout)
    script, token = build_script(list(jobs.values()), token)
    return script, token, keys


def batch_time_limit(checks: list[Check], profile: Profile) -> float:
    return sum(c.timeout(profile) + 5 for c in checks if c.command(profile) is not None) + _OVERHEAD_S


def judge_stage(
    checks: list[Check],
    profile: Profile,
    outputs: dict[str, CommandOutput],
    keys: dict[str, str],
    record: dict[str, Any],
) -> list[tuple[Result, str]]:
    """Each check's result and the evidence kept with it (its raw output)."""
    judged = []
    for check in checks:
        if check.name in keys:
            output = outputs[keys[check.name]]
            if check.needs_record:
                output = replace(output, stdout=check.with_record(record, output.stdout))
        else:
            output = CommandOutput(stdout=check.from_record(record))
        evidence = output.stdout + (f"{STDERR_MARK}{output.stderr}" if output.stderr.strip() else "")
        if output.rc not in (0, None):  # checks that judge the exit status: `burnin rejudge` reads it back
            evidence += f"{EXIT_MARK}{output.rc} ---\n"
        result = judge(check, output, profile)
        judged.append((told_of_cut(result, output.cut) if output.cut else result, evidence))
    return judged


# ---- I/O: sending batches ----------------------------------------------------------------------


def run_local(script: str, time_limit: float) -> tuple[bytes, str, tuple[float, float], str]:
    """The batch on this machine: (its stdout, an error, the time window, what was cut)."""
    started = time.time()
    done = run_bounded(["bash", "-s"], script.encode(), time_limit)
    return done.stdout.getvalue(), done.error, (started, time.time()), done.stdout.note()


Answer = tuple[str, bytes, str, tuple[float, float], str]


def _send(
    batches: dict[str, tuple[NodeJob, str]], time_limits: dict[str, float], concurrency: int
) -> Iterator[list[Answer]]:
    """Lists of (node, raw answer, error, controller time window, what was cut): every answer
    that is in when the caller asks or comes within ``GATHER_S`` of the first
    (bringup.ssh.fanout.fan_out_batches), so the caller saves them in one transaction. The answer
    is bounded (bringup.local.capture): a node that prints without end loses the middle of its
    answer, never the controller's memory."""
    remote = {}
    for name, (job, script) in batches.items():
        if job.target is None:
            yield [(name, *run_local(script, time_limits[name]))]
        else:
            remote[job.target.name] = (name, script)
    if not remote:
        return
    targets = [batches[name][0].target for name, _ in remote.values()]
    limit = max(time_limits[name] for name, _ in remote.values())
    gathered = fan_out_batches(
        targets,  # type: ignore[arg-type]
        lambda t: remote[t.name][1],
        limit,
        concurrency,
        gather_s=GATHER_S,
    )
    with contextlib.closing(gathered):  # closed with this one: the fan-out starts no other node
        for answers in gathered:
            yield [
                (remote[res.name][0], res.stdout, res.error, (res.started_at, res.finished_at), res.cut)
                for res in answers
            ]


# ---- the run -----------------------------------------------------------------------------------


@dataclass
class BurninRun:
    store: FleetStore | None  # None: --local without a node record: print only
    run_id: int | None
    stages: list[str]
    concurrency: int = 64
    stop_on_fail: bool = True
    on_stage_start: Callable[[str, int], None] | None = None
    on_node_done: Callable[[StageOutcome], None] | None = None
    group_settings: dict[str, Any] = field(default_factory=dict)  # launcher options for ib/nccl
    on_group_progress: Callable[[str], None] | None = None
    partners: frozenset[str] = frozenset()  # proven nodes beside the tested ones (GroupContext)
    # Runs single-node stages instead of the SSH batches (burnin.stages.slurm_launch.SlurmStages):
    # (stage, active jobs) -> lists of (node, judged, error), every node once, each list what is
    # in at one moment: the runner saves a list in one transaction before asking for the next.
    stage_engine: (
        Callable[[str, dict[str, NodeJob]], Iterable[list[tuple[str, list[tuple[Result, str]], str]]]] | None
    ) = None

    def run(self, jobs: list[NodeJob]) -> list[BurninOutcome]:
        # What exists when the run starts (modules, the inventory, profiles, the store's mappers)
        # lives as long as the run: frozen, the collector stops walking it after every few
        # thousand allocations the parsers make. At 1,000 simulated nodes that walk was 2.9 of
        # 14.8 ms of controller CPU per node (benchmarks/fleet.py).
        gc.collect()
        gc.freeze()
        # The parsers' objects die by reference counting as each answer is judged; the cycle
        # collector still walked them every 700 allocations (775 young collections, 0.42 s of a
        # 1,000-node preflight). Every 20,000: 0.28 s, and the cycles it frees wait a little longer.
        threshold = gc.get_threshold()
        gc.set_threshold(max(threshold[0], YOUNG_GC_THRESHOLD), *threshold[1:])
        try:
            return self._run(jobs)
        finally:
            gc.set_threshold(*threshold)
            gc.unfreeze()

    def _run(self, jobs: list[NodeJob]) -> list[BurninOutcome]:
        outcomes = {j.name: BurninOutcome(j.name) for j in jobs}
        active = {j.name: j for j in jobs}
        for stage in self.stages:
            if not active:
                break
            if is_group_stage(stage):
                self._run_group_stage(stage, active, outcomes)
                self._drop_finished(active, outcomes)
                continue
            if self.stage_engine is not None:
                if self.on_stage_start:
                    self.on_stage_start(stage, len(active))
                for batch in self.stage_engine(stage, dict(active)):
                    self._record_many(
                        stage, [(outcomes[name], judged, error) for name, judged, error in batch]
                    )
                self._drop_finished(active, outcomes)
                continue
            self._run_batches(stage, active, outcomes)
            self._drop_finished(active, outcomes)
        self._conclude_all(outcomes)
        return list(outcomes.values())

    def _run_batches(
        self, stage: str, active: dict[str, NodeJob], outcomes: dict[str, BurninOutcome]
    ) -> None:
        """A single-node stage over SSH (or this machine): each node's batch sent, its answer
        judged and saved with those that came in together."""
        plans = {n: stage_checks(stage, j.profile) for n, j in active.items()}
        if self.on_stage_start:
            self.on_stage_start(stage, len(active))
        batches, keys, tokens, limits = {}, {}, {}, {}
        for name, job in active.items():
            script, tokens[name], keys[name] = stage_batch(plans[name], job.profile)
            batches[name] = (job, script)
            limits[name] = batch_time_limit(plans[name], job.profile)
        # Closed however the loop ends: a Ctrl-C while an answer is judged or saved lands
        # outside the fan-out, which must still stop starting nodes at once.
        with contextlib.closing(_send(batches, limits, self.concurrency)) as sent:
            for answers in sent:
                done = []
                for name, raw, error, window, cut in answers:
                    job = active[name]
                    outputs = parse_output(raw, tokens[name], sorted(set(keys[name].values())), window)
                    if cut:  # the answer was over the controller's bound: frames lost in its middle
                        error = f"{cut}; {error}" if error else cut
                    if error:  # the batch did not finish: frames that came back still count
                        outputs = {
                            k: (o if not o.error else CommandOutput("", rc=None, error=error))
                            for k, o in outputs.items()
                        }
                    judged = judge_stage(plans[name], job.profile, outputs, keys[name], job.record)
                    done.append((outcomes[name], judged, error))
                self._record_many(stage, done)

    def _drop_finished(self, active: dict[str, NodeJob], outcomes: dict[str, BurninOutcome]) -> None:
        for name in list(active):
            last = outcomes[name].stages[-1]
            if last.verdict is Verdict.FAIL and self.stop_on_fail:
                del active[name]
            elif last.error and not any(r.verdict is not Verdict.UNKNOWN for r in last.results):
                del active[name]  # unreachable: nothing later can run either

    def _run_group_stage(
        self, stage: str, active: dict[str, NodeJob], outcomes: dict[str, BurninOutcome]
    ) -> None:
        """A multi-node stage: one call for all active nodes; a node it says nothing of is UNKNOWN."""
        if self.on_stage_start:
            self.on_stage_start(stage, len(active))
        context = GroupContext(
            list(active.values()),
            self.run_id,
            self.group_settings,
            self.on_group_progress,
            self.concurrency,
            self.partners,
            earlier={n: [r for s in outcomes[n].stages for r in s.results] for n in active},
        )
        error = ""
        try:
            results = group_stages()[stage](context)
        except Exception as exc:  # the stage as a whole could not run: every node is UNKNOWN
            results, error = {}, f"stage {stage} could not run: {type(exc).__name__}: {exc}"
        done = []
        for name in active:
            judged = results.get(name) or [
                (Result.unknown(stage, error or f"stage {stage} returned no result for this node"), "")
            ]
            done.append((outcomes[name], judged, error))
        self._record_many(stage, done)

    def _record_many(
        self, stage: str, done: list[tuple[BurninOutcome, list[tuple[Result, str]], str]]
    ) -> None:
        """Nodes whose stage is judged: save them in one transaction, then add each to its
        node's outcome and tell the caller."""
        if not done:
            return
        self._save(stage, [(outcome.node, judged) for outcome, judged, _ in done])
        for outcome, judged, error in done:
            results = [r for r, _ in judged]
            stage_done = StageOutcome(outcome.node, stage, worst(r.verdict for r in results), results, error)
            outcome.stages.append(stage_done)
            if self.on_node_done:
                self.on_node_done(stage_done)

    def _save(self, stage: str, judged_nodes: list[tuple[str, list[tuple[Result, str]]]]) -> None:
        """One transaction for the nodes whose answers are in, committed before the next are
        judged: a run stopped midway keeps every answer it had judged (when answers arrive one
        at a time, each is its own transaction, at once)."""
        if self.store is None:
            return
        batches = [
            (node, [result_row(stage, result, evidence) for result, evidence in judged])
            for node, judged in judged_nodes
        ]
        self.store.add_results_many(batches, run_id=self.run_id)

    def _conclude_all(self, outcomes: dict[str, BurninOutcome]) -> None:
        """Close every node's run in one transaction: a failed node in ``burnin`` moves to
        ``failed`` with the findings that failed it, the others get a ``burnin`` event. A move
        refused because another process moved the node meanwhile leaves it where that put it
        (``final_state``); the other nodes' moves are still made (bringup.fleet.transitions)."""
        if self.store is None:
            for outcome in outcomes.values():
                outcome.final_state = ""
            return
        states = states_of(self.store, outcomes)
        moves, notes = [], []
        for node, outcome in outcomes.items():
            outcome.final_state = states.get(node, "")
            failed = [s for s in outcome.stages if s.verdict is Verdict.FAIL]
            # A partner is an anchor, proven before this run (an acceptance's accepted node is
            # still in burnin): the group stage's findings are recorded, it is never failed here.
            if failed and outcome.final_state == State.BURNIN.value and node not in self.partners:
                stage = failed[0]
                findings = [
                    f.to_dict() for r in stage.results for f in r.findings if f.severity is Severity.CRITICAL
                ]
                first = findings[0]["message"] if findings else "a check failed"
                reason = f"burn-in stage {stage.stage} failed: {first}"
                details = {"stage": stage.stage, "findings": findings}
                moves.append(Transition(node, State.FAILED, reason, self.run_id, details))
                continue
            ran = ",".join(s.stage for s in outcome.stages)
            details = {s.stage: s.verdict.value for s in outcome.stages}
            notes.append(Note(node, "burnin", f"stages {ran}: {outcome.verdict.value}", self.run_id, details))
        for moved in transition_many(self.store, moves, notes=notes):
            outcomes[moved.move.node].final_state = moved.state


def result_row(stage: str, result: Result, evidence: str) -> dict[str, Any]:
    """One judged check as FleetStore.add_results takes it (the reason kept among the metrics)."""
    metrics = dict(result.metrics)
    if result.reason:
        metrics.setdefault("reason", result.reason)
    return {
        "stage": stage,
        "check": result.check,
        "verdict": result.verdict.value,
        "metrics": metrics,
        "findings": [f.to_dict() for f in result.findings],
        "evidence": evidence,
    }


def record_for(hardware: dict[str, Any], previous_bmc_check: str | None) -> dict[str, Any]:
    """What record-based checks read about a node (kept small and JSON-able)."""
    return {"hardware": hardware or {}, "previous_check_at": previous_bmc_check}
