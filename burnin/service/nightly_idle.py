"""`burnin nightly --idle`: re-test golden nodes without taking capacity, as the lowest-priority,
preemptible Slurm job on nodes that are idle (the public clouds' "active health checks").

For each golden node Slurm shows idle and not drained (``--revalidate N`` bounds them to N % of
the pool, proven longest ago first), one job in the rack's idle partition (inventory
``slurm_idle_partition``, default ``bringup-idle``: a partition with the lowest PriorityTier,
where jobs of every other partition preempt, PreemptMode=CANCEL; docs/in-service.md), pinned to
the node, ``--exclusive``, ``--no-requeue``. The job runs the checks of the single-node stages as
one batch (the same script `burnin run` sends over SSH) and writes the framed answer to a file
on the node; the controller reads it back over SSH and judges it as `burnin run` does.

A user's job preempts it at once. A preempted (or cancelled, or never started) test is **not
run**: an event on the node, no result, the node stays golden. A test that ran and failed
leaves golden as any golden node with a failing result does, and is drained with the finding.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bringup.fleet.runs import ActiveRun
from bringup.fleet.store import FleetStore
from bringup.inventory.rack import Rack
from bringup.profiles.load import apply_overrides
from bringup.ssh.fanout import fan_out, target_for_node
from burnin.result import Verdict, worst
from burnin.service import slurm
from burnin.service.nightly_moves import note, write_events
from burnin.stages import is_group_stage, stage_checks
from burnin.stages.batch import parse_output
from burnin.stages.runner import batch_time_limit, judge_stage, record_for, result_row, stage_batch

DEFAULT_PARTITION = "bringup-idle"
JOB_PREFIX = "bringup-idle-run"
OUT_DIR = "/var/tmp"
FETCH_LIMIT_S = 30.0
RAN = frozenset({"COMPLETED", "FAILED"})  # the script ran to its end (its frames say what)
ENDED = RAN | frozenset(
    {"PREEMPTED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED"}
)
_FIELD = re.compile(r"(\w+)=(\S*)")


@dataclass(frozen=True)
class JobView:
    state: str  # PENDING, RUNNING, COMPLETED, PREEMPTED, ...
    reason: str = ""
    node: str = ""


def parse_job(text: str) -> JobView:
    """``scontrol show job -o ID``: its state, reason and node (pure)."""
    fields = dict(_FIELD.findall(text))
    state = fields.get("JobState", "")
    if not state:
        raise slurm.SlurmError(f"scontrol show job printed no JobState: {text.strip()[:200]!r}")
    node = fields.get("NodeList", "")
    return JobView(state, fields.get("Reason", ""), "" if node == "(null)" else node)


def not_run(job: JobView) -> bool:
    """The test did not run to its end: a preempted, cancelled or failed-to-start job."""
    return job.state in ENDED and job.state not in RAN


def output_path(run_id: int, node: str) -> str:
    return f"{OUT_DIR}/{JOB_PREFIX}{run_id}-{node}.out"


@dataclass
class IdleOutcome:
    node: str
    job: str = ""
    job_state: str = ""
    verdict: str = ""  # the checks' worst verdict; "not run" when preempted or never started
    finding: str = ""


def as_wrap(script: str) -> str:
    """The batch script as ``sbatch --wrap`` text: Slurm runs it with /bin/sh, which hands it to
    bash on stdin, as `burnin run` does over SSH (``bash -s``). The job's launcher variables
    (SLURM_*, PMI*, OMPI_*) are dropped first, so the checks run as they do over SSH: with
    SLURM_PROCID set, an MPI-built ``all_reduce_perf -g 8`` takes itself for one rank of a
    launched job."""
    marker = "BRINGUP_IDLE_" + "EOF"
    while marker in script:
        marker += "_"
    drop = (
        "for v in $(env | sed -n 's/^\\(SLURM_[A-Za-z0-9_]*\\|PMIX*_[A-Za-z0-9_]*\\|OMPI_[A-Za-z0-9_]*\\)=.*/\\1/p'); "
        'do unset "$v"; done\n'
    )
    return f"{drop}exec bash -s <<'{marker}'\n{script.rstrip()}\n{marker}\n"


def submit(run: ActiveRun, node: str, script: str, minutes: int, partition: str, conf: str | None) -> str:
    """The node's test as a preemptible batch job; its id."""
    argv = [
        "sbatch",
        "--parsable",
        f"--partition={partition}",
        f"--nodelist={node}",
        "--nodes=1",
        "--exclusive",
        "--no-requeue",
        f"--job-name={JOB_PREFIX}{run.id}",
        f"--time={minutes}",
        f"--output={output_path(run.id, node)}",
        f"--chdir={OUT_DIR}",
        "--wrap",
        script,
    ]
    return slurm.run_slurm(argv, conf, slurm.TIMEOUT_S).strip().split(";")[0]


def show_job(job: str, conf: str | None) -> JobView:
    return parse_job(slurm.run_slurm(["scontrol", "show", "job", "-o", job], conf, slurm.TIMEOUT_S))


def cancel(job: str, conf: str | None) -> None:
    slurm.run_slurm(["scancel", job], conf, slurm.TIMEOUT_S)


def wait_jobs(
    jobs: dict[str, str],
    conf: str | None,
    timeout_s: float,
    poll_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, JobView]:
    """node -> its job's end; a job not ended by ``timeout_s`` is cancelled (not run)."""
    deadline = clock() + timeout_s
    ended: dict[str, JobView] = {}
    while True:
        for node, job in jobs.items():
            if node not in ended:
                view = show_job(job, conf)
                if view.state in ENDED:
                    ended[node] = view
        if len(ended) == len(jobs):
            return ended
        if clock() >= deadline:
            for node, job in jobs.items():
                if node not in ended:
                    cancel(job, conf)
                    ended[node] = JobView("CANCELLED", f"not ended after {timeout_s:g} s: cancelled")
            return ended
        sleep(poll_s)


def idle_tests(
    store: FleetStore,
    rack: Rack,
    run: ActiveRun,
    nodes: Sequence[str],
    stages: Sequence[str],
    overrides: Sequence[str],
    partition: str,
    conf: str | None,
    timeout_s: float,
    poll_s: float,
    say: Callable[[str], None],
) -> list[IdleOutcome]:
    """Submit each node's test, wait for every job, judge what ran and record it."""
    single = [s for s in stages if not is_group_stage(s)]
    plans: dict[str, tuple[Any, ...]] = {}
    jobs: dict[str, str] = {}
    started = time.time()
    for name in nodes:
        host = rack.host(name)
        profile = apply_overrides(rack.profiles[host.profile], overrides)
        checks = [c for s in single for c in stage_checks(s, profile)]
        script, token, keys = stage_batch(checks, profile)
        minutes = math.ceil(batch_time_limit(checks, profile) / 60) + 1
        jobs[name] = submit(run, name, as_wrap(script), minutes, partition, conf)
        plans[name] = (profile, checks, token, keys)
    say(
        f"idle tests submitted to partition {partition}: {', '.join(f'{n} (job {j})' for n, j in jobs.items())}"
    )
    ended = wait_jobs(jobs, conf, timeout_s, poll_s)
    ran = [n for n in nodes if not not_run(ended[n])]
    answers = _fetch(store, rack, run.id, ran)
    finished = time.time()
    missed = {n: _not_run_why(jobs[n], ended[n], n in ran) for n in nodes if n not in answers}
    write_events(  # the tests that did not run, in one transaction
        store,
        [
            note(
                n,
                f"idle test not run: {why}",
                run.id,
                {"status": "not run", "job": jobs[n], "job_state": ended[n].state},
            )
            for n, why in missed.items()
        ],
    )
    outcomes = []
    for name in nodes:
        job, view = jobs[name], ended[name]
        if name in missed:
            outcomes.append(IdleOutcome(name, job, view.state, "not run", missed[name]))
            continue
        profile, checks, token, keys = plans[name]
        node = store.get_node(name)
        outputs = parse_output(answers[name], token, sorted(set(keys.values())), (started, finished))
        judged = judge_stage(checks, profile, outputs, keys, record_for(node.hardware, None))
        by_stage: dict[str, list[dict[str, Any]]] = {}
        for check, (result, evidence) in zip(checks, judged, strict=True):  # one result per check, in order
            by_stage.setdefault(check.stage, []).append(result_row(check.stage, result, evidence))
        for rows in by_stage.values():
            store.add_results(name, rows, run_id=run.id)
        verdict = worst(r.verdict for r, _ in judged)
        finding = next(
            (
                f"{r.check}: {r.findings[0].message if r.findings else r.reason}"
                for r, _ in judged
                if r.verdict is Verdict.FAIL
            ),
            "",
        )
        outcomes.append(IdleOutcome(name, job, view.state, verdict.value, finding))
    return outcomes


def _not_run_why(job: str, view: JobView, ran: bool) -> str:
    if ran:
        return f"job {job} {view.state.lower()}; its output could not be read"
    return f"job {job} {view.state.lower()}" + (
        f" ({view.reason})" if view.reason not in ("", "None") else ""
    )


def _fetch(store: FleetStore, rack: Rack, run_id: int, names: Sequence[str]) -> dict[str, bytes]:
    """Each job's answer, read back from its node (and removed there)."""
    if not names:
        return {}
    targets = [target_for_node(n, rack.host(n).vars, rack.path.parent, store.get_node(n)) for n in names]
    by_target = {t.name: n for t, n in zip(targets, names, strict=True)}

    def script(target: Any) -> str:
        path = json.dumps(output_path(run_id, by_target[target.name]))
        return f"cat {path} && rm -f {path}\n"

    return {
        by_target[r.name]: r.stdout
        for r in fan_out(targets, script, FETCH_LIMIT_S, len(targets))
        if not r.error
    }
