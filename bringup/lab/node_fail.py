"""`bringup lab fail-node`: a lab node dies under whatever job runs on it, on purpose.

Node-caused job failures (Slurm's ``NODE_FAIL``) are what `burnin lemons` counts, and a lab
needs a way to make them for real. Two ways, as nodes die in a fleet:

- ``down``: ``scontrol update NodeName=X State=DOWN Reason=...``, what an operator or a
  watchdog does when a node hangs. Slurm ends the node's jobs ``NODE_FAIL`` at once (a
  requeuable batch job is requeued, and waits about 2 min for its BeginTime). The lab's
  ``ReturnToService=2`` usually returns the node by itself once its slurmd answers; if it is
  still DOWN once the jobs are ended, it is resumed (``State=RESUME``).
- ``slurmd``: ``kill -9`` of the node's slurmd (over SSH, pinned to the lab's known_hosts),
  as when the host dies. slurmctld marks the node DOWN and ends its jobs ``NODE_FAIL`` after
  ``SlurmdTimeout`` (30 s in the lab: 30-45 s in all); then slurmd is started again and
  ``ReturnToService=2`` returns the node.

Then it waits until the node is back in service and says which jobs it ended and how: the jobs
``squeue`` listed on the node before, each with its run's state in ``sacct`` afterwards and
whether it was requeued (a requeue comes once the job has completed on its other nodes, so that
is waited for too). A node already down or drained is refused: nothing runs there, and an
operator's drain is never undone. The parsing and choosing are pure (``parse_squeue``, ``outcomes``,
``still_running``, ``report_lines``); ``fail_node`` does the rest, with Slurm and SSH
injectable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bringup.core.errors import UserError
from bringup.lab.network import LabError
from bringup.lab.rack import KNOWN_HOSTS
from bringup.lab.slurm import NODE_CONF, SLURMD_PID_FILE
from bringup.lab.state import STATE_FILE, LabNode, LabState
from bringup.ssh.fanout import RemoteResult, SshTarget, run_script
from burnin.parsers import ParseError
from burnin.parsers.sacct import SACCT_FIELDS, SacctJob, expand_hostlist, parse_sacct
from burnin.parsers.slurm import SINFO_FORMAT, SlurmNode, parse_sinfo_nodes
from burnin.service.slurm import TIMEOUT_S, SlurmError, run_slurm

HOWS = ("down", "slurmd")
DEFAULT_TIMEOUT_S = 180.0  # slurmd killed: NODE_FAIL after 30-45 s, then back in a second or two
RETURN_S = 30.0  # at least this long for the node to come back once it is returned
POLL_S = 0.5
SSH_TIMEOUT_S = 30.0
# squeue's columns: the name last, so a '|' in a job name stays in the name.
SQUEUE_FORMAT = "%i|%T|%N|%j"
# A job's run is over (sacct State); REQUEUED is the run before an `scontrol requeue`.
ENDED = frozenset(
    {"NODE_FAIL", "FAILED", "CANCELLED", "COMPLETED", "TIMEOUT", "OUT_OF_MEMORY", "PREEMPTED"}
    | {"BOOT_FAIL", "DEADLINE", "REQUEUED"}
)
ON_NODE = frozenset({"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED"})
# In squeue after its run ended: waiting to run again.
WAITING = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SPECIAL_EXIT"})
IN_SERVICE = frozenset({"idle", "mixed", "allocated"})


@dataclass(frozen=True)
class QueuedJob:
    """One line of ``squeue -h -o '%i|%T|%N|%j'``."""

    job_id: str
    state: str  # RUNNING, PENDING, ...
    nodes: str  # a hostlist as printed: node02, node[01-03]
    name: str


@dataclass(frozen=True)
class JobOutcome:
    """What became of a job that ran on the node."""

    job_id: str
    name: str
    nodes: str
    ended: str  # its run's sacct State (NODE_FAIL, ...); "" without accounting
    requeued: bool
    now: str = ""  # its state in squeue now (PENDING after a requeue); "" when gone

    def line(self) -> str:
        how = self.ended or "ended (no accounting: sacct cannot say how)"
        if self.requeued:
            how += f", requeued (now {self.now or 'pending'})"
        return f"job {self.job_id} {self.name} on {self.nodes}: {how}"


@dataclass
class NodeFailResult:
    node: str
    how: str
    reason: str  # the DOWN reason ("" for slurmd: Slurm's own "Not responding")
    jobs: list[QueuedJob] = field(default_factory=list)  # running on the node before
    outcomes: list[JobOutcome] = field(default_factory=list)
    ended_s: float = 0.0  # from the failure until Slurm had ended every job (and marked the node)
    back_s: float = 0.0  # from the failure until the node was back in service
    returned_by: str = ""  # how the node came back
    state: str = ""  # its Slurm state at the end (idle, ...)
    accounting: bool = True


# -- pure -------------------------------------------------------------------------------------


def parse_squeue(text: str) -> list[QueuedJob]:
    """``squeue -h -o '%i|%T|%N|%j'`` -> jobs; a line of another shape is a ParseError."""
    jobs = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("|", 3)
        if len(fields) != 4 or not fields[0].strip() or not fields[1].strip().isupper():
            raise ParseError(f"squeue line {number}: expected '{SQUEUE_FORMAT}', got {line!r}")
        job_id, state, nodes, name = (f.strip() for f in fields)
        jobs.append(QueuedJob(job_id, state, nodes, name))
    return jobs


def _holds(nodes: str | Sequence[str], node: str) -> bool:
    hosts = expand_hostlist(nodes) if isinstance(nodes, str) else nodes
    return node in hosts


def _runs(rows: Sequence[SacctJob], job_id: str) -> list[SacctJob]:
    return [r for r in rows if r.job_id == job_id]


def _ended_run(runs: Sequence[SacctJob], node: str) -> int | None:
    """Index of the run the failure ended: the first finished run that held the node."""
    finished = [i for i, r in enumerate(runs) if r.state in ENDED]
    held = [i for i in finished if node in runs[i].nodes]
    return (held or finished or [None])[0]


def still_running(
    node: str,
    jobs: Sequence[QueuedJob],
    rows: Sequence[SacctJob],
    queue: Sequence[QueuedJob],
    accounting: bool,
) -> list[str]:
    """The ids of ``jobs`` Slurm has not ended yet: with accounting, those without a finished
    run in sacct (its record is what `burnin lemons` reads); and those squeue still shows in
    the run that held the node (running, or completing on its other nodes: a requeue comes after
    that)."""
    now = {q.job_id: q for q in queue}
    left = []
    for job in jobs:
        runs = _runs(rows, job.job_id)
        i = _ended_run(runs, node)
        current = now.get(job.job_id)
        if accounting and i is None:
            left.append(job.job_id)
        elif current is None or current.state not in ON_NODE:
            continue
        elif i is not None and i == len(runs) - 1:
            left.append(job.job_id)  # no later run in sacct: still the run that held the node
        elif i is None and (current.state == "COMPLETING" or _holds(current.nodes, node)):
            left.append(job.job_id)  # no accounting: completing, or on the node
    return left


def outcomes(
    node: str, jobs: Sequence[QueuedJob], rows: Sequence[SacctJob], queue: Sequence[QueuedJob]
) -> list[JobOutcome]:
    """Each job that ran on the node: how its run ended (sacct; without it, squeue's state while
    it still shows the ended job) and whether it was requeued (a later run in sacct, or waiting
    in squeue)."""
    now = {q.job_id: q for q in queue}
    out = []
    for job in jobs:
        runs = _runs(rows, job.job_id)
        i = _ended_run(runs, node)
        later = runs[i + 1 :] if i is not None else []
        current = now.get(job.job_id)
        ended = runs[i].state if i is not None else ""
        if not ended and current is not None and current.state in ENDED:
            ended = current.state
        requeued = bool(later) or (current is not None and current.state in WAITING)
        state = (
            current.state if current and current.state not in ENDED else (later[-1].state if later else "")
        )
        out.append(JobOutcome(job.job_id, job.name, job.nodes, ended, requeued, state if requeued else ""))
    return out


def report_lines(result: NodeFailResult) -> list[str]:
    """What `bringup lab fail-node` prints once it is done."""
    how = (
        f"set DOWN (reason {result.reason!r})"
        if result.how == "down"
        else "slurmd killed (-9), Slurm marked it DOWN"
    )
    if result.jobs:
        lines = [f"{result.node}: {how}; {len(result.jobs)} job(s) were running on it:"]
        lines += [f"  {o.line()}" for o in result.outcomes]
        lines.append(f"{result.node}: jobs ended {result.ended_s:.1f} s after the failure")
    else:
        lines = [f"{result.node}: {how}; no job was running on it, so none ended"]
    lines.append(
        f"{result.node}: back in service ({result.state or '?'}) {result.back_s:.1f} s after the failure: "
        f"{result.returned_by}"
    )
    return lines


def check_options(how: str, reason: str | None) -> None:
    if how not in HOWS:
        raise LabError(f"--how {how!r}: one of {', '.join(HOWS)}")
    if reason is not None and how != "down":
        raise LabError("--reason is for --how down: a killed slurmd gets Slurm's own reason (Not responding)")


def lab_state(state_dir: Path, lab: str) -> LabState:
    """The lab's state as `lab up` left it; a LabError when it is not up."""
    state = LabState.load(state_dir)
    if state is None:
        raise LabError(
            f"lab {lab!r} is not up (no {state_dir / STATE_FILE}): run `bringup lab up --name {lab}` first"
        )
    return state


def lab_node(state: LabState, node: str, how: str, reason: str | None) -> LabNode:
    """The refusals that need no Slurm call: the lab has Slurm, it has the node, and the options
    fit. The node's record, else a LabError with one line."""
    check_options(how, reason)
    if not state.inventory_vars.get("slurm_conf"):
        raise LabError(
            f"lab {state.name!r} runs without Slurm (no slurmctld/munged on this host or no slurmd in its "
            "image): no job runs there to fail"
        )
    for n in state.nodes:
        if n.name == node:
            return n
    names = ", ".join(n.name for n in state.nodes)
    raise LabError(f"lab {state.name!r} has no node {node!r} (its nodes: {names})")


# -- doing it ---------------------------------------------------------------------------------

SlurmRun = Callable[[list[str]], str]
SshRun = Callable[[LabNode, str], RemoteResult]


def _lab_ssh(state: LabState) -> SshRun:
    """Run a script on a lab node as root, with the lab's key, host key checked against the
    known_hosts file `lab up` wrote."""

    def run(node: LabNode, script: str) -> RemoteResult:
        target = SshTarget(
            node.name,
            node.ip,
            key_file=state.ssh_key,
            host_key_policy="strict",
            connect_timeout=10,
            known_hosts_file=str(Path(state.state_dir) / KNOWN_HOSTS),
        )
        return run_script(target, script, SSH_TIMEOUT_S)

    return run


class _Failer:
    def __init__(
        self,
        state: LabState,
        node: LabNode,
        slurm: SlurmRun | None,
        ssh: SshRun | None,
        progress: Callable[[str], None],
        clock: Callable[[], float],
        sleep: Callable[[float], None],
    ):
        conf = state.inventory_vars["slurm_conf"]
        self.state, self.node, self.progress, self.clock, self.sleep = state, node, progress, clock, sleep
        self.slurm = slurm or (lambda argv: run_slurm(argv, conf, TIMEOUT_S))
        self.ssh = ssh or _lab_ssh(state)
        self.accounting = bool(state.inventory_vars.get("slurm_accounting"))

    def slurm_node(self) -> SlurmNode:
        nodes = {n.name: n for n in parse_sinfo_nodes(self.slurm(["sinfo", "-N", "-h", "-o", SINFO_FORMAT]))}
        if self.node.name not in nodes:
            raise LabError(f"Slurm has no node {self.node.name!r} in this lab's cluster")
        return nodes[self.node.name]

    def queue(self, *args: str) -> list[QueuedJob]:
        return parse_squeue(self.slurm(["squeue", "-h", "-o", SQUEUE_FORMAT, *args]))

    def job_queue(self, jobs: Sequence[QueuedJob]) -> list[QueuedJob]:
        """These jobs as squeue shows them now, in any state (an ended one for MinJobAge, 60 s in
        the lab). All jobs, filtered here: `squeue -j` fails on an id it no longer knows."""
        ids = {j.job_id for j in jobs}
        return [q for q in self.queue("-t", "all") if q.job_id in ids] if jobs else []

    def sacct(self, jobs: Sequence[QueuedJob]) -> list[SacctJob]:
        if not jobs or not self.accounting:
            return []
        ids = ",".join(j.job_id for j in jobs)
        fields = ",".join(SACCT_FIELDS)
        return parse_sacct(self.slurm(["sacct", "-a", "-X", "-D", "-P", f"--format={fields}", "-j", ids]))

    def on_node(self, script: str, what: str) -> str:
        res = self.ssh(self.node, script)
        if res.error or res.rc != 0:
            why = res.error or res.stderr.decode(errors="replace").strip() or f"exit {res.rc}"
            raise LabError(f"{self.node.name}: {what}: {why}")
        return res.stdout.decode(errors="replace")

    def wait(self, what: str, probe: Callable[[], str], started: float, deadline: float) -> None:
        """Until ``probe()`` says "" (done); else a LabError with what it said last."""
        while True:
            left = probe()
            if not left:
                return
            if self.clock() >= deadline:
                raise LabError(
                    f"{self.node.name}: {what} within {deadline - started:.0f} s of the failure ({left})"
                )
            self.sleep(POLL_S)

    def run(self, how: str, reason: str, timeout_s: float) -> NodeFailResult:
        name = self.node.name
        before = self.slurm_node()
        if before.state.startswith("down"):
            raise LabError(
                f"{name} is down in Slurm already ({before.reason or 'no reason'}): nothing runs there"
            )
        if before.drain:
            raise LabError(
                f"{name} is drained ({before.reason or 'no reason'}): an operator's drain is not undone; "
                "resume it first"
            )
        jobs = [j for j in self.queue("-w", name) if j.state in ON_NODE]
        result = NodeFailResult(name, how, reason if how == "down" else "", jobs, accounting=self.accounting)
        listed = ", ".join(f"{j.job_id} ({j.name})" for j in jobs) or "none"
        self.progress(f"{name}: running job(s) before: {listed}")
        started = self.clock()
        deadline = started + timeout_s
        if how == "down":
            self.slurm(["scontrol", "update", f"NodeName={name}", "State=DOWN", f"Reason={reason}"])
            self.progress(f"{name}: set DOWN; waiting for Slurm to end its jobs")
        else:
            self.on_node(f"kill -9 $(cat {SLURMD_PID_FILE})", f"kill slurmd (pid file {SLURMD_PID_FILE})")
            self.progress(
                f"{name}: slurmd killed; waiting for Slurm to mark it DOWN (SlurmdTimeout, 30-45 s)"
            )

        def not_ended() -> str:
            # a job Slurm ended may complete on its other nodes for a while (with this node's
            # slurmd dead, longer): that is cleaning up, waited for once the node is back
            queue = [q for q in self.job_queue(jobs) if q.state != "COMPLETING"]
            left = still_running(name, jobs, self.sacct(jobs), queue, self.accounting)
            if left:
                return f"still running: job(s) {', '.join(left)}"
            if how == "slurmd" and not (n := self.slurm_node()).state.startswith("down"):
                return f"Slurm still says {n.label}"
            return ""

        try:
            what = "Slurm did not end its jobs" if jobs else "Slurm did not mark it down"
            self.wait(what, not_ended, started, deadline)
        except LabError as exc:
            try:  # the lab is not left with a dead slurmd or a DOWN node
                restored = self._restore(how)
            except UserError as again:
                raise LabError(f"{exc}; returning it to service failed too: {again}") from exc
            raise LabError(f"{exc}; {restored}") from exc
        result.ended_s = self.clock() - started
        result.returned_by = self._restore(how)
        self.progress(f"{name}: {result.returned_by}; waiting for it to be back in service")

        def not_back() -> str:
            n = self.slurm_node()
            back = n.state in IN_SERVICE and "not_responding" not in n.flags and not n.drain
            if not back:
                return f"Slurm says {n.label}" + (f": {n.reason}" if n.reason else "")
            settling = still_running(name, jobs, self.sacct(jobs), self.job_queue(jobs), self.accounting)
            if settling:  # a requeue comes after that: the report waits for it
                return f"job(s) {', '.join(settling)} still completing"
            result.state = n.label
            return ""

        # whatever the failure took, slurmd gets RETURN_S to register again
        self.wait("not back in service", not_back, started, max(deadline, self.clock() + RETURN_S))
        result.back_s = self.clock() - started
        result.outcomes = outcomes(name, jobs, self.sacct(jobs), self.job_queue(jobs))
        return result

    def _restore(self, how: str) -> str:
        """Return the node to service the way it failed; how it came back."""
        name = self.node.name
        if how == "slurmd":
            self.on_node(f"setsid slurmd -f /{NODE_CONF} </dev/null >/dev/null 2>&1", "restart slurmd")
            return "slurmd restarted; ReturnToService=2 returns the node once it registers"
        if not self.slurm_node().state.startswith("down"):
            return "ReturnToService=2 returned it once its slurmd answered"
        try:
            self.slurm(["scontrol", "update", f"NodeName={name}", "State=RESUME"])
        except SlurmError:
            # ReturnToService=2 got there between the two calls: scontrol refuses a node not down
            if self.slurm_node().state.startswith("down"):
                raise
            return "ReturnToService=2 returned it once its slurmd answered"
        return "resumed (scontrol update State=RESUME)"


def fail_node(
    state: LabState,
    node: str,
    how: str = "down",
    reason: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    progress: Callable[[str], None] | None = None,
    slurm: SlurmRun | None = None,
    ssh: SshRun | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> NodeFailResult:
    """Make ``node`` die under whatever job runs on it (``how``: down | slurmd, see the module
    docstring), wait until Slurm has ended its jobs and the node is back in service (within
    ``timeout_s``, else a LabError saying what is still missing), and say what it ended."""
    lab = lab_node(state, node, how, reason)
    failer = _Failer(state, lab, slurm, ssh, progress or (lambda _line: None), clock, sleep)
    return failer.run(how, reason or f"bringup lab fail-node {node}", timeout_s)
