"""Single-node stages as Slurm jobs (``burnin run --launcher slurm``): one job per stage, one task
per node, each task ``burnin run --local --spool-dir`` on its node (burnin.stages.spool).

Why: over SSH the controller holds a session per node and runs the stage in waves of
``--concurrency``; the gpu stage runs tens of minutes per node, so 2,048 nodes take 32 waves
or 2,048 sessions. As a Slurm job every node runs at once under slurmd, and the controller only
submits, watches one job and ingests result files.

For each stage the controller

1. asks Slurm for its nodes (``sinfo``): a node Slurm does not know, or shows drained, down or
   not responding, is UNKNOWN at once with Slurm's reason, and is left out of the job;
2. submits one batch job (``sbatch --nodelist=... --ntasks-per-node=1 --exclusive --no-kill``)
   whose script starts one ``srun`` step per profile: every task runs
   ``burnin run --local --spool-dir DIR --run-id N --node $SLURMD_NODENAME --stages S
   --profile DIR/run-N/profiles/P.yml [--set ...]``, with the profile file the controller copied
   there and its ``--set`` items, so each node judges with exactly the controller's profile;
3. ingests each node's result file as it appears (the runner records it as it records an SSH
   answer), and checks the job's state every few polls (``scontrol show job``): a job still
   pending after ``slurm_start_timeout_s`` is cancelled; once it has ended, the files still
   missing get ``slurm_spool_grace_s`` (NFS shows another client's new file late);
4. judges a node that never reported as the SSH path judges an unreachable node: each check
   UNKNOWN, the reason saying what Slurm says (the job's state and reason, the node's state and
   drain reason) and the last line the task printed.

Ctrl-C (or the run being aborted) cancels the job (``scancel``) before the run ledger records
the ending. The nodes need the ``burnin`` program (``burnin_node_program``, default the
burnin_tools role's ``/opt/bringup/venv/bin/burnin``) and the spool directory mounted.
"""

from __future__ import annotations

import contextlib
import math
import re
import shlex
import shutil
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bringup.core.errors import BadInput
from burnin.checks.base import CommandOutput
from burnin.result import Result
from burnin.service.slurm import TIMEOUT_S, SlurmError, cluster_nodes, run_slurm
from burnin.stages import stage_checks
from burnin.stages.batch import job_keys
from burnin.stages.jobs import NodeJob
from burnin.stages.runner import batch_time_limit, judge_stage
from burnin.stages.spool import (
    LOGS,
    PROFILES,
    SpoolProblem,
    SpoolResult,
    SpoolWatcher,
    digest,
    merge_judged,
    run_dir,
)

DEFAULT_PROGRAM = "/opt/bringup/venv/bin/burnin"  # the burnin_tools role's burnin_tools_health_burnin
NODE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # sshd's PATH for root
JOB_PREFIX = "burnin-run"
ENDED = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"}
    | {"PREEMPTED", "REVOKED", "SPECIAL_EXIT"}
)
_UNUSABLE = frozenset({"down", "drained", "draining", "fail", "failing", "future", "unknown", "maint"})
_FIELD = re.compile(r"(?:^|\s)(\w+)=(\S*)")
# One job state check every this many polls of the spool (scontrol is one RPC to slurmctld).
_CHECK_EVERY = 3

Judged = list[tuple[Result, str]]
T = TypeVar("T")


@dataclass(frozen=True)
class SlurmStageSettings:
    spool_dir: str  # the spool root as the controller mounts it
    node_spool_dir: str  # the same directory as the nodes mount it
    program: str = DEFAULT_PROGRAM
    partition: str | None = None
    reservation: str | None = None
    account: str | None = None
    slurm_conf: str | None = None  # the controller's SLURM_CONF (sbatch, scontrol, sinfo)
    node_slurm_conf: str | None = None  # the nodes' (None: their own default, not the controller's)
    start_timeout_s: float = 300.0
    grace_s: float = 30.0
    poll_s: float = 1.0
    chdir: str = "/tmp"


# inventory variable (all.vars) -> SlurmStageSettings field
SETTING_VARS: dict[str, str] = {
    "burnin_spool_dir": "spool_dir",
    "burnin_spool_dir_on_nodes": "node_spool_dir",
    "burnin_node_program": "program",
    "slurm_partition": "partition",
    "slurm_reservation": "reservation",
    "slurm_account": "account",
    "slurm_conf": "slurm_conf",
    "slurm_conf_on_nodes": "node_slurm_conf",
    "slurm_start_timeout_s": "start_timeout_s",
    "slurm_spool_grace_s": "grace_s",
    "slurm_spool_poll_s": "poll_s",
    "slurm_chdir": "chdir",
}
_NUMBERS = ("start_timeout_s", "grace_s", "poll_s")


def stage_settings(inventory_vars: Mapping[str, Any], **overrides: Any) -> SlurmStageSettings:
    """The settings from a rack's ``all.vars`` with command-line ``overrides`` (by variable name,
    None = not given) on top; BadInput names the variable that is wrong or missing."""
    values = {k: v for k, v in inventory_vars.items() if k in SETTING_VARS and v is not None}
    values.update({k: v for k, v in overrides.items() if v is not None})
    unknown = sorted(set(overrides) - set(SETTING_VARS))
    if unknown:
        raise ValueError(f"stage_settings: unknown settings {unknown}")
    kwargs: dict[str, Any] = {}
    for var, name in SETTING_VARS.items():
        if var not in values:
            continue
        value = values[var]
        if name in _NUMBERS:
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise BadInput(f"inventory var {var}: expected a number of seconds, got {value!r}") from None
            if value <= 0:
                raise BadInput(f"inventory var {var}: expected a positive number of seconds, got {value!r}")
        kwargs[name] = value if name in _NUMBERS else str(value)
    if not kwargs.get("spool_dir"):
        raise BadInput(
            "--launcher slurm needs a spool directory that the controller and the nodes both mount "
            "(NFS, Lustre): give --spool-dir DIR or the inventory var burnin_spool_dir"
        )
    kwargs.setdefault("node_spool_dir", kwargs["spool_dir"])
    for name in ("spool_dir", "node_spool_dir"):
        if not str(kwargs[name]).startswith("/"):
            raise BadInput(f"{name.replace('_', ' ')} {kwargs[name]!r}: give an absolute path")
    return SlurmStageSettings(**kwargs)


# ---- pure: the job ---------------------------------------------------------------------------------


def job_name(run_id: int, stage: str) -> str:
    return f"{JOB_PREFIX}{run_id}-{stage}"


def node_run_dir(settings: SlurmStageSettings, run_id: int) -> str:
    return str(run_dir(settings.node_spool_dir, run_id))


def task_argv(
    settings: SlurmStageSettings, run_id: int, stage: str, profile_file: str, overrides: Sequence[str]
) -> list[str]:
    """What every task of one profile runs (the node name is added on the node: --node)."""
    argv = [
        settings.program,
        "run",
        "--local",
        "--spool-dir",
        settings.node_spool_dir,
        "--run-id",
        str(run_id),
    ]
    argv += ["--stages", stage, "--profile", f"{node_run_dir(settings, run_id)}/{PROFILES}/{profile_file}"]
    for item in overrides:
        argv += ["--set", item]
    return argv


def task_shell(argv: Sequence[str]) -> str:
    """The task as an ``sh -c`` line: a clean environment (the PATH sshd gives root, not the
    submitting shell's, which Slurm exports) and the node's Slurm name as ``--node``."""
    words = " ".join(shlex.quote(a) for a in argv)
    return f'exec /usr/bin/env -i PATH={NODE_PATH} HOME="$HOME" {words} --node "$SLURMD_NODENAME"'


def batch_script(
    settings: SlurmStageSettings, run_id: int, stage: str, steps: Sequence[tuple[Sequence[str], str]]
) -> str:
    """The job's script: one ``srun`` step per (nodes, task line), all at once, then wait."""
    log = f"{node_run_dir(settings, run_id)}/{LOGS}/{stage}-%N.out"
    lines = [
        f"# burn-in run {run_id}, stage {stage}: one task per node, each writing its result file",
        # sbatch exports the submitting shell's environment: its SLURM_CONF names the controller's
        # file, which the node may not have; srun here reads the node's own (or the one given).
        f"export SLURM_CONF={shlex.quote(settings.node_slurm_conf)}"
        if settings.node_slurm_conf
        else "unset SLURM_CONF",
        f'PATH="$PATH:{NODE_PATH}"',
    ]
    for nodes, task in steps:
        srun = [
            "srun",
            f"--nodes={len(nodes)}",
            f"--ntasks={len(nodes)}",
            "--ntasks-per-node=1",
            f"--nodelist={','.join(nodes)}",
            "--kill-on-bad-exit=0",
            f"--output={log}",
            f"--chdir={settings.chdir}",
            "/bin/sh",
            "-c",
            task,
        ]
        lines.append(" ".join(shlex.quote(a) for a in srun) + " &")
    lines.append("wait")
    return "\n".join(lines) + "\n"


def sbatch_argv(
    settings: SlurmStageSettings, run_id: int, stage: str, nodes: Sequence[str], minutes: int, script: str
) -> list[str]:
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={job_name(run_id, stage)}",
        f"--nodes={len(nodes)}",
        f"--ntasks={len(nodes)}",
        "--ntasks-per-node=1",
        f"--nodelist={','.join(nodes)}",
        "--exclusive",  # a burn-in shares its node with nothing
        "--no-requeue",
        "--no-kill",  # a node that dies ends its own task, not the others'
        f"--time={minutes}",
        f"--chdir={settings.chdir}",
        f"--output={node_run_dir(settings, run_id)}/{LOGS}/{stage}-job%j.out",
    ]
    for flag, value in (
        ("--partition", settings.partition),
        ("--reservation", settings.reservation),
        ("--account", settings.account),
    ):
        if value:
            argv.append(f"{flag}={value}")
    return [*argv, "--wrap", script]


def job_minutes(limit_s: float) -> int:
    """Slurm's time limit for a stage whose batch may take ``limit_s``: whole minutes, plus one
    for starting burnin on the node."""
    return max(1, math.ceil(limit_s / 60)) + 1


@dataclass(frozen=True)
class JobView:
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, NODE_FAIL, ...
    reason: str = ""
    exit_code: str = ""


def parse_job(text: str) -> JobView:
    """``scontrol show job -o ID``: its state, reason and exit code (pure)."""
    fields = dict(_FIELD.findall(text))
    state = fields.get("JobState", "")
    if not state:
        raise SlurmError(f"scontrol show job printed no JobState: {text.strip()[:200]!r}")
    reason = fields.get("Reason", "")
    return JobView(state, "" if reason in ("None", "(null)") else reason, fields.get("ExitCode", ""))


def node_trouble(node: Any) -> str:
    """Why Slurm will not run a task on this node now ('' when it will): a SlurmNode from sinfo."""
    if node is None:
        return "Slurm has no such node"
    states = {node.state, *node.flags}
    if node.drain or states & _UNUSABLE or "not_responding" in node.flags:
        return f"Slurm shows it {node.label}" + (f": {node.reason}" if node.reason else "")
    return ""


def silence_reason(job: str, view: JobView | None, trouble: str, task_said: str, cancelled: str) -> str:
    """Why a node has no result (pure): what Slurm says of the job and of the node."""
    if view is None:
        what = f"Slurm job {job} is gone from slurmctld"
    else:
        what = f"Slurm job {job} {view.state}" + (f" ({view.reason})" if view.reason else "")
        if view.exit_code and view.exit_code != "0:0":
            what += f", exit code {view.exit_code}"
    parts = [f"no result from the node: {cancelled or what}"]
    if trouble:
        parts.append(trouble)
    if task_said:
        parts.append(f"its task's last line: {task_said}")
    return "; ".join(parts)


# ---- I/O: Slurm --------------------------------------------------------------------------------------


def submit(argv: list[str], conf: str | None) -> str:
    return run_slurm(argv, conf, TIMEOUT_S).strip().split(";")[0]


def show_job(job: str, conf: str | None) -> JobView | None:
    """The job now; None when slurmctld no longer knows it (purged after MinJobAge)."""
    try:
        return parse_job(run_slurm(["scontrol", "show", "job", "-o", job], conf, TIMEOUT_S))
    except SlurmError as exc:
        if "Invalid job id" in str(exc):
            return None
        raise


def cancel(job: str, conf: str | None) -> None:
    with contextlib.suppress(SlurmError):
        run_slurm(["scancel", job], conf, TIMEOUT_S)


def last_line(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 2000))
            lines = [line for line in f.read().decode("utf-8", "replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:300] if lines else ""


@dataclass(frozen=True)
class JobEnd:
    """How watching a job stopped: Slurm's last view of it and why it was cancelled ('' : not)."""

    view: JobView | None
    cancelled: str = ""


def watch_job(
    job: str,
    settings: SlurmStageSettings,
    submitted: float,
    limit_s: float,
    take: Callable[[], Iterable[T]],
    waiting: Callable[[], bool],
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> Generator[T, None, JobEnd]:
    """Poll the spool until nothing is ``waiting``, yielding what ``take()`` hands over each
    poll, and ask Slurm about the job every few polls: a job pending past
    ``start_timeout_s`` or running past the stage's limit is cancelled; once it has ended, the
    files still missing get ``grace_s`` (NFS shows another client's new file late). Ctrl-C,
    an abort or the consumer stopping cancels the job before it goes on; so does giving up
    while the job still runs. Returns how it stopped (the single-node stages and the ib stage's
    rounds both watch their jobs with it)."""
    deadline = submitted + settings.start_timeout_s + limit_s + 60 + settings.grace_s
    view: JobView | None = JobView("PENDING")
    ended_at: float | None = None
    cancelled = ""
    polls = 0
    try:
        while waiting():
            yield from take()
            if not waiting():
                break
            now = clock()
            if polls % _CHECK_EVERY == 0 and ended_at is None:
                with contextlib.suppress(SlurmError):  # slurmctld busy: ask again later
                    view = show_job(job, settings.slurm_conf)
                if view is None or view.state in ENDED:
                    ended_at = now
                elif view.state == "PENDING" and now - submitted > settings.start_timeout_s:
                    cancelled = (
                        f"Slurm job {job} did not start within {settings.start_timeout_s:g} s "
                        f"(pending: {view.reason or 'no reason given'}); cancelled"
                    )
                    cancel(job, settings.slurm_conf)
                    break
            polls += 1
            if ended_at is not None and now - ended_at >= settings.grace_s:
                break
            if now > deadline:
                cancelled = (
                    f"Slurm job {job} ran past the stage's limit of {deadline - submitted:.0f} s; cancelled"
                )
                cancel(job, settings.slurm_conf)
                break
            sleep(settings.poll_s)
    except BaseException:  # Ctrl-C, an abort, the runner stopping: the job must not run on
        cancel(job, settings.slurm_conf)
        raise
    if waiting() and ended_at is None and not cancelled:
        cancel(job, settings.slurm_conf)
    return JobEnd(view, cancelled)


# ---- the engine -------------------------------------------------------------------------------------


class SlurmStages:
    """The runner's ``stage_engine``: ``engine(stage, active_jobs)`` yields lists of (node,
    judged, error), every node once, as results are ingested (a list is what the runner commits
    as one transaction) or given up on."""

    def __init__(
        self,
        settings: SlurmStageSettings,
        run_id: int,
        overrides: Sequence[str] = (),
        on_progress: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.settings, self.run_id, self.overrides = settings, int(run_id), tuple(overrides)
        self.on_progress, self.clock, self.sleep = on_progress, clock, sleep
        self.directory = run_dir(settings.spool_dir, run_id)
        self.jobs: dict[str, str] = {}  # stage -> Slurm job id

    def _say(self, line: str) -> None:
        if self.on_progress:
            self.on_progress(line)

    def _profiles(self, jobs: Sequence[NodeJob]) -> dict[str, str]:
        """Copy each node's profile file into the run's directory; node -> its file name there."""
        out = {}
        (self.directory / PROFILES).mkdir(parents=True, exist_ok=True)
        (self.directory / LOGS).mkdir(parents=True, exist_ok=True)
        for job in jobs:
            source = job.profile.path
            if source is None:
                raise BadInput(f"node {job.name}: its profile has no file to send to the node")
            target = self.directory / PROFILES / Path(source).name
            if not target.exists():
                shutil.copyfile(source, target)
            out[job.name] = target.name
        return out

    def __call__(self, stage: str, active: Mapping[str, NodeJob]) -> Iterator[list[tuple[str, Judged, str]]]:
        plans = {name: stage_checks(stage, job.profile) for name, job in active.items()}
        try:
            slurm_nodes = {n.name: n for n in cluster_nodes(self.settings.slurm_conf)}
        except SlurmError as exc:
            why = f"Slurm cannot be asked about the nodes: {exc}"
            yield [(name, unheard(job, plans[name], why), str(exc)) for name, job in active.items()]
            return
        troubled = {name: node_trouble(slurm_nodes.get(name)) for name in active}
        refused = {name: f"not run through Slurm: {why}" for name, why in troubled.items() if why}
        if refused:
            yield [(name, unheard(active[name], plans[name], why), why) for name, why in refused.items()]
        runnable = {n: j for n, j in active.items() if not troubled[n]}
        if not runnable:
            return
        yield from self._run_job(stage, runnable, plans, slurm_nodes)

    def _taken(
        self,
        item: SpoolResult | SpoolProblem,
        jobs: Mapping[str, NodeJob],
        plans: Mapping[str, list],
        profile_sha: str,
        submitted: float,
    ) -> tuple[str, Judged, str]:
        """One result file the watcher handed over: the node's judged checks, or why it is unheard."""
        name = item.node
        if isinstance(item, SpoolProblem):
            why = f"its result file cannot be taken: {item.message}"
            return name, unheard(jobs[name], plans[name], why), why
        if item.profile_sha256 != profile_sha or item.overrides != self.overrides:
            why = f"{item.path}: judged with another profile or --set than this run's"
            return name, unheard(jobs[name], plans[name], why), why
        window = (submitted, self.clock())
        return (
            name,
            merge_judged(plans[name], jobs[name].profile, item, jobs[name].record, window),
            item.error,
        )

    def _run_job(
        self,
        stage: str,
        jobs: Mapping[str, NodeJob],
        plans: Mapping[str, list],
        slurm_nodes: Mapping[str, Any],
    ) -> Iterator[list[tuple[str, Judged, str]]]:
        settings = self.settings
        files = self._profiles(list(jobs.values()))
        digests = {f: digest((self.directory / PROFILES / f).read_bytes()) for f in set(files.values())}
        steps = []
        for profile_file in sorted(set(files.values())):
            nodes = sorted(n for n, f in files.items() if f == profile_file)
            steps.append(
                (nodes, task_shell(task_argv(settings, self.run_id, stage, profile_file, self.overrides)))
            )
        limit_s = max(batch_time_limit(plans[n], j.profile) for n, j in jobs.items())
        script = batch_script(settings, self.run_id, stage, steps)
        argv = sbatch_argv(settings, self.run_id, stage, sorted(jobs), job_minutes(limit_s), script)
        watcher = SpoolWatcher(self.directory, self.run_id, stage, list(jobs))
        submitted = self.clock()
        try:
            job = submit(argv, settings.slurm_conf)
        except SlurmError as exc:
            why = f"the Slurm job could not be submitted: {exc}"
            yield [(name, unheard(node_job, plans[name], why), why) for name, node_job in jobs.items()]
            return
        self.jobs[stage] = job
        self._say(f"stage {stage}: Slurm job {job} on {len(jobs)} node(s), results into {self.directory}")
        end = yield from watch_job(
            job,
            settings,
            submitted,
            limit_s,
            lambda: (
                [self._taken(item, jobs, plans, digests[files[item.node]], submitted) for item in items]
                for items in watcher.batches()  # into ingested/ once the runner has committed them
            ),
            lambda: bool(watcher.waiting),
            self.clock,
            self.sleep,
        )
        left = watcher.waiting
        if not left:
            return
        view, cancelled = end.view, end.cancelled
        with contextlib.suppress(SlurmError):
            view = show_job(job, settings.slurm_conf)
            slurm_nodes = {n.name: n for n in cluster_nodes(settings.slurm_conf)}
        unheard_nodes = []
        for name in left:
            said = last_line(self.directory / LOGS / f"{stage}-{name}.out")
            why = silence_reason(job, view, node_trouble(slurm_nodes.get(name)), said, cancelled)
            unheard_nodes.append((name, unheard(jobs[name], plans[name], why), why))
        yield unheard_nodes


def unheard(job: NodeJob, plan: list, error: str) -> Judged:
    """The stage of a node that never answered, judged as the runner judges an unreachable node
    over SSH: every command UNKNOWN with ``error``; record-based checks still judged."""
    commands = {c.name: c.command(job.profile) for c in plan}
    keys = job_keys({name: cmd for name, cmd in commands.items() if cmd is not None})
    outputs = {key: CommandOutput("", rc=None, error=error) for key in set(keys.values())}
    return judge_stage(plan, job.profile, outputs, keys, job.record)
