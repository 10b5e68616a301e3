"""The ib stage through Slurm (``burnin run --launcher slurm``): its discovery and each of its
rounds as one Slurm job, one task per node, each task running the bash script the SSH path
sends that node (burnin.stages.ib builds it: the same commands, the same frames), its stdout
written into the run's spool directory, where the controller reads it back and the ib stage
judges it with the same code as an SSH answer.

Why the same scripts: over SSH a round is one session per node carrying all its servers and
clients, every session started at once; here it is one task per node, every task started at
once by one ``srun`` step. A node's script starts its servers, then (a second later) its
clients, and a client retries while its partner's server is not listening yet
(ib.CLIENT_TRIES): the ordering across nodes holds in a Slurm step as it does across SSH
sessions. No waves: they exist to bound the controller's SSH sessions, and a Slurm job holds
none on the controller, whatever its size.

Each job, in the run's spool directory (``run-N/``):

- ``ib/<label>/<node>.sh``: the node's script, written by the controller before submitting;
- ``ib/<label>/<node>.out``: what the script printed, renamed into place whole once it ended
  (a reader never sees half of it), with ``<node>.rc`` its exit status beside it;
- ``logs/ib-<label>-<node>.out``: what the task itself printed (srun's output), whose last
  line explains a node that never reported.

A node Slurm will not run (drained, down, unknown to it) is left out of the job and answers
with Slurm's reason; a node whose file never appears answers with what Slurm says of the job
and the node (slurm_launch.silence_reason). The ib stage files either as it files an
unreachable node over SSH. Ctrl-C cancels the job (slurm_launch.watch_job).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import Any

from bringup.core.cut import mb
from bringup.local.capture import STREAM_CAP
from burnin.service.slurm import SlurmError, cluster_nodes
from burnin.stages.batch import TIMEOUT_RCS
from burnin.stages.slurm_launch import (
    NODE_PATH,
    SlurmStageSettings,
    batch_script,
    job_minutes,
    last_line,
    node_trouble,
    sbatch_argv,
    show_job,
    silence_reason,
    submit,
    watch_job,
)
from burnin.stages.spool import LOGS, SpoolError, result_name, run_dir

# The ib stage's key in GroupContext.settings (burnin.run.session sets it with --launcher slurm;
# burnin.stages.ib.NODE_SCRIPTS reads it: ib cannot import this module, which imports the runner).
SETTING = "ib_node_scripts"
IB_DIR = "ib"

# node -> (what its script printed, why it has nothing or was cut short: '' when it ran)
Answers = dict[str, tuple[bytes, str]]


# ---- pure ---------------------------------------------------------------------------------------


def job_dir(spool: str | Path, run_id: int, label: str) -> Path:
    """Where one job's scripts and answers are, under the spool root as a side mounts it."""
    return run_dir(spool, run_id) / IB_DIR / label


def task_line(node_dir: str | Path, limit_s: float) -> str:
    """What every task runs (``sh -c``): its node's script from the spool in a clean environment
    (the PATH sshd gives root, as over SSH), under a time limit, its stdout into a dot file
    renamed to ``<node>.out`` once it is whole, after ``<node>.rc``."""
    d = shlex.quote(str(node_dir))
    limit = int(limit_s)
    return (
        f'd={d}; n="$SLURMD_NODENAME"; PATH="$PATH:{NODE_PATH}"; '
        f'/usr/bin/env -i PATH={NODE_PATH} HOME="$HOME" timeout -k 5 {limit} bash "$d/$n.sh" '
        '</dev/null >"$d/.$n.out"; '
        'echo $? >"$d/.$n.rc"; mv -f "$d/.$n.rc" "$d/$n.rc"; exec mv -f "$d/.$n.out" "$d/$n.out"'
    )


def answer_error(rc_text: str | None, limit_s: float) -> str:
    """The error of a script that did end, from its exit status (pure): the SSH path's words for
    a script stopped at its time limit; '' otherwise (a round's script ends with its frames,
    and its status is that of the last one)."""
    try:
        rc = int((rc_text or "").strip())
    except ValueError:
        return ""
    return f"time limit of {limit_s:.0f} s ran out" if rc in TIMEOUT_RCS else ""


# ---- I/O ----------------------------------------------------------------------------------------


def read_answer(
    directory: Path, node: str, limit_s: float, cap: int = STREAM_CAP
) -> tuple[bytes, str] | None:
    """The node's answer once its file is there (None before): its bytes, at most ``cap`` of
    them as over SSH, and the error of a script that ran out of time."""
    path = directory / f"{node}.out"
    try:
        with open(path, "rb") as f:
            raw = f.read(cap + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return b"", f"cannot read {path}: {exc}"
    error = ""
    if len(raw) > cap:
        raw, error = raw[:cap], f"{path}: over {mb(cap)}, cut"
    try:
        rc_text: str | None = (directory / f"{node}.rc").read_text()
    except OSError:
        rc_text = None
    return raw, answer_error(rc_text, limit_s) or error


def _finish(gen: Generator[Any, None, Any]) -> Any:
    """Run a generator that yields nothing of interest to its end; its return value."""
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


class SlurmScripts:
    """``scripts(label, {node: script}, limit_s) -> {node: (stdout, error)}``: the scripts as one
    Slurm job, every node's answer (or why there is none) once the job is over."""

    def __init__(
        self,
        settings: SlurmStageSettings,
        run_id: int,
        on_progress: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.settings, self.run_id = settings, int(run_id)
        self.on_progress, self.clock, self.sleep = on_progress, clock, sleep
        self.jobs: dict[str, str] = {}  # label -> Slurm job id

    def __call__(self, label: str, scripts: Mapping[str, str], limit_s: float) -> Answers:
        settings = self.settings
        answers: Answers = {}
        try:
            slurm_nodes = {n.name: n for n in cluster_nodes(settings.slurm_conf)}
        except SlurmError as exc:
            return {n: (b"", f"Slurm cannot be asked about the nodes: {exc}") for n in scripts}
        for node in scripts:
            trouble = node_trouble(slurm_nodes.get(node))
            try:
                result_name(self.run_id, node, IB_DIR)  # a name fit for a file
            except SpoolError as exc:
                trouble = trouble or str(exc)
            if trouble:
                answers[node] = (b"", f"not run through Slurm: {trouble}")
        runnable = sorted(n for n in scripts if n not in answers)
        if not runnable:
            return answers
        stage = f"{IB_DIR}-{label}"
        directory = job_dir(settings.spool_dir, self.run_id, label)
        directory.mkdir(parents=True, exist_ok=True)
        (run_dir(settings.spool_dir, self.run_id) / LOGS).mkdir(exist_ok=True)
        for node in runnable:
            (directory / f"{node}.sh").write_text(scripts[node])
        task = task_line(job_dir(settings.node_spool_dir, self.run_id, label), limit_s)
        script = batch_script(settings, self.run_id, stage, [(runnable, task)])
        argv = sbatch_argv(settings, self.run_id, stage, runnable, job_minutes(limit_s + 10), script)
        submitted = self.clock()
        try:
            job = submit(argv, settings.slurm_conf)
        except SlurmError as exc:
            answers.update({n: (b"", f"the Slurm job could not be submitted: {exc}") for n in runnable})
            return answers
        self.jobs[label] = job
        if self.on_progress:
            self.on_progress(f"ib {label}: Slurm job {job} on {len(runnable)} node(s)")
        waiting = set(runnable)

        def take() -> list[None]:
            for node in sorted(waiting):
                got = read_answer(directory, node, limit_s)
                if got is not None:
                    answers[node] = got
                    waiting.discard(node)
            return []

        watched = watch_job(
            job, settings, submitted, limit_s, take, lambda: bool(waiting), self.clock, self.sleep
        )
        end = _finish(watched)
        if not waiting:
            return answers
        view = end.view
        try:
            view = show_job(job, settings.slurm_conf)
            slurm_nodes = {n.name: n for n in cluster_nodes(settings.slurm_conf)}
        except SlurmError:
            pass
        for node in sorted(waiting):
            said = last_line(run_dir(settings.spool_dir, self.run_id) / LOGS / f"{stage}-{node}.out")
            answers[node] = (
                b"",
                silence_reason(job, view, node_trouble(slurm_nodes.get(node)), said, end.cancelled),
            )
        return answers
