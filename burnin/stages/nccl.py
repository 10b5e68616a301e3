"""The ``nccl`` stage: a multi-node NCCL soak, then adaptive group testing to find the bad node.

1. Soak: the nodes in groups (``diag.nccl_group_size``, 0 = the whole rack), all groups at once;
   with the context's ``partners`` (a nightly's golden nodes) one group per node under test,
   padded with partners (``plan_anchored_groups``), the partners anchors of the localisation;
   each group runs the configured nccl-tests (``diag.nccl_tests``) again and again until
   ``diag.nccl_soak_minutes`` is over (at least once), launched by mpirun or srun
   (burnin.stages.launch). A watchdog ends a run that prints no new line for
   ``diag.nccl_iteration_timeout_s``: a hang, recorded with the hosts that went silent. A group
   stops soaking at its first failed iteration. With ``diag.nccl_group_by_leaf`` the groups are
   the nodes under each leaf switch, from the ib stage's discovery (burnin.plan.leaf_groups),
   and a leaf whose every node the localisation blamed is named as the leaf.
2. Localise: the groups' outcomes go into the ``Localizer`` (burnin.plan.nccl_groups); each of
   its rounds is a set of disjoint trials run at once (one iteration of the tests each), until
   every culprit is isolated.
3. Judge (burnin.checks.nccl): every node gets one ``nccl_soak`` Result. A node whose group
   passed: the group's soak (busbw per iteration). A node whose group failed: the localisation's
   verdict (culprit FAIL with the soak's findings and the trials that isolate it; cleared PASS;
   UNKNOWN when it could not be told). Evidence: the raw outputs of the runs the node was in, then
   its group's soak runs whole (burnin.checks.nccl_replay), which `burnin rejudge` judges again.

A launch that never gets going (no rank printed anything, or the watchdog ended it before its
first result row) is tried once more before it counts, in the soak and in localisation alike;
one whose rank crashed as it started (a signal: MPI start-up races do that now and then) twice
more. One that cannot start at all in every soak group is a broken launcher setup or a crashing
rank, not a judged node: every node is UNKNOWN with the launcher's error or the crashed rank.
"""

from __future__ import annotations

import os
import secrets
import shlex
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from bringup.profiles.load import Profile
from bringup.ssh.fanout import openssh_known_hosts
from burnin.checks.cut import told_of_cut
from burnin.checks.nccl import (
    GROUP_SLOW_CAUSE,
    NVLINK_SLOW_CAUSE,
    SOAK_CHECK,
    Hang,
    busbw_floor,
    judge_output,
    judge_soak,
    node_results,
    nvlink_domain_floor,
)
from burnin.checks.nccl_replay import record_text, soak_run
from burnin.parsers import ParseError
from burnin.parsers.nccl_tests import NcclTestRun, is_result_row, parse_nccl_tests
from burnin.plan.leaf_groups import LeafGroups, leaf_findings, leaf_groups, node_leaves
from burnin.plan.nccl_groups import MIN_TEST_NODES, Localizer
from burnin.result import Finding, Result, Severity, Verdict, info
from burnin.stages import ib as ib_stage
from burnin.stages.jobs import GroupContext, GroupResults
from burnin.stages.launch import (
    LaunchError,
    LaunchHost,
    LaunchOutcome,
    LaunchSettings,
    build_launch,
    crashed_rank,
    run_watched,
    settings_from,
)
from burnin.stages.nccl_nvlink import run_nvlink_passes

DEFAULT_TEST_ARGS = "-b 8 -e 16G -f 2 -g 1"  # every size up to 16 GiB; one GPU per rank
# RCCL's environment on AMD (rccl-tests: the same all_reduce_perf, linked against RCCL), as one
# cloud's MI300X health check runs it: relaxed PCIe ordering for the HCAs, GPUs in PCI bus order
# (https://github.com/Azure/azurehpc-health-checks, customTests/azure_rccl_allreduce.nhc). The
# inventory's burnin_launch_env wins over these.
VENDOR_ENV: dict[str, dict[str, str]] = {
    "amd": {"NCCL_IB_PCI_RELAXED_ORDERING": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "NCCL_DEBUG": "VERSION"},
}
MAX_PARALLEL = 64  # trials run at once
START_TRIES = 2  # tries of a launch that never gets going
# One that a rank's crash ended (a signal): MPI start-up races crash a rank now and then (docs/lab.md;
# https://github.com/open-mpi/ompi/issues/11438); a rank that crashes every time does so thrice.
CRASH_TRIES = 3
EVIDENCE_LINES = 60  # head and tail of a run's output kept as evidence
EVIDENCE_RUNS = 8  # runs of a node kept as evidence (the failing ones first)
_now = time.monotonic  # the soak's clock (tests replace it)


@dataclass(frozen=True)
class NcclPlan:
    """What the stage runs, from the profile (diag.*) and the launcher settings (inventory/CLI)."""

    tests: tuple[str, ...]
    test_args: tuple[str, ...]
    tests_dir: str
    group_size: int
    soak_s: float
    timeout_s: float

    def argv(self, test: str) -> list[str]:
        program = os.path.join(self.tests_dir, test) if self.tests_dir else test
        return [program, *self.test_args]


def plan_from(profile: Profile, settings: Mapping[str, Any]) -> NcclPlan:
    diag = profile.diag
    args = settings.get("nccl_test_args") or DEFAULT_TEST_ARGS
    return NcclPlan(
        tests=diag.nccl_tests,
        test_args=tuple(shlex.split(args) if isinstance(args, str) else (str(a) for a in args)),
        tests_dir=str(settings.get("nccl_tests_dir") or ""),
        group_size=diag.nccl_group_size,
        soak_s=diag.nccl_soak_minutes * 60,
        timeout_s=diag.nccl_iteration_timeout_s,
    )


def ssh_settings(targets: Iterable[Any]) -> dict[str, Any]:
    """The SSH key, user, port and host-key options mpirun needs, from the runner's SSH targets.
    When the store recorded every node's host keys, mpirun's ssh checks against those only."""
    targets = list(targets)
    target = targets[0] if targets else None
    if target is None:
        return {}
    options = {
        "off": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        "accept-new": "-o StrictHostKeyChecking=accept-new -o LogLevel=ERROR",
        "strict": "-o StrictHostKeyChecking=yes -o LogLevel=ERROR",
    }.get(target.host_key_policy, "")
    known = openssh_known_hosts(targets)
    if known is not None:
        options = f"-o StrictHostKeyChecking=yes -o UserKnownHostsFile={known} -o LogLevel=ERROR"
    return {
        "ssh_key": target.key_file,
        "ssh_user": target.user,
        "ssh_port": target.port,
        "ssh_options": options,
    }


# ---- pure: who went silent -----------------------------------------------------------------------


def host_matcher(nodes: Mapping[str, str]) -> dict[str, str]:
    """Printed host name -> node name: the node name, its short name and its address all match."""
    out: dict[str, str] = {}
    for name, address in nodes.items():
        for key in (name, name.split(".")[0], address):
            out.setdefault(key, name)
    return out


def silent_nodes(text: str, run: NcclTestRun | None, nodes: Mapping[str, str]) -> tuple[str, ...]:
    """Nodes whose ranks never showed up: no device line (or, with NCCL_DEBUG=INFO, no
    ``Init COMPLETE`` line) from them. () when nothing tells (no rank printed anything, or all
    joined and the collective stalled: nccl-tests' stdout is rank 0's alone)."""
    match = host_matcher(nodes)
    joined: set[str] = set()
    for line in text.splitlines():
        if "NCCL INFO" in line and "Init COMPLETE" in line:
            host = line.split(":", 1)[0]
            joined.add(match.get(host, match.get(host.split(".")[0], host)))
    if not joined and run is not None:
        joined = {match.get(h, match.get(h.split(".")[0], h)) for h in run.hosts}
    if not joined:
        return ()
    return tuple(n for n in nodes if n not in joined)


def trim(text: str, lines: int = EVIDENCE_LINES) -> str:
    """Head and tail of an output: the header, the rank lines, the last rows and the footer."""
    all_lines = text.splitlines()
    if len(all_lines) <= 2 * lines:
        return text.rstrip("\n")
    cut = len(all_lines) - 2 * lines
    return "\n".join([*all_lines[:lines], f"... [{cut} lines cut] ...", *all_lines[-lines:]])


# ---- one run of one test over some nodes ---------------------------------------------------------


@dataclass(frozen=True)
class TestRun:
    label: str  # 'soak group 1 iteration 3 all_reduce_perf', 'round 2 trial 4 all_reduce_perf'
    nodes: tuple[str, ...]
    result: Result  # the judged iteration (burnin.checks.nccl.judge_output)
    outcome: LaunchOutcome
    launched: bool  # some rank printed something (or hung): the launcher itself worked
    counted: bool = True  # False: a launch that never got going, tried again (evidence only)
    hang: Hang | None = None  # what the watchdog saw, as judged (kept for `burnin rejudge`)

    @property
    def passed(self) -> bool:
        return self.result.verdict in (Verdict.PASS, Verdict.WARN)

    @property
    def crash(self) -> str | None:
        """The rank that crashed before any rank printed anything (``NODE: task N: SIGNAL``)."""
        return None if self.launched else crashed_rank(self.outcome.stderr + "\n" + self.outcome.stdout)

    @property
    def got_going(self) -> bool:
        """It started ranks and, if the watchdog ended it, only after its first result row."""
        return self.launched and not (self.outcome.killed and not self.outcome.started_up)

    def evidence(self) -> str:
        head = f"=== {self.label}: {self.result.verdict.value} on {', '.join(self.nodes)}"
        if self.outcome.killed:
            head += f" (watchdog: {self.outcome.killed})"
        elif self.outcome.rc not in (0, None):
            head += f" (exit {self.outcome.rc})"
        body = trim(self.outcome.stdout)
        if self.outcome.stderr.strip():
            body += "\n--- stderr ---\n" + trim(self.outcome.stderr, 20)
        if self.outcome.after_kill.strip():
            body += "\n--- after the watchdog ended it ---\n" + trim(self.outcome.after_kill, 10)
        return f"{head} ===\n{body}"

    def detail(self) -> str:
        """One line for the localiser's trial record."""
        if self.outcome.killed:
            return f"hang: {self.outcome.killed}"
        crit = next((f for f in self.result.findings if f.severity is Severity.CRITICAL), None)
        if crit:
            return crit.message[:160]
        return self.result.reason[:160] if self.result.verdict is Verdict.UNKNOWN else ""


class Executor:
    """Runs tests over node sets with the configured launcher; thread-safe."""

    def __init__(
        self,
        plan: NcclPlan,
        launch: LaunchSettings,
        hosts: Mapping[str, LaunchHost],
        profile,
        ctx,
        nvlink_domain: bool = False,
    ):
        self.plan = plan
        self.nvlink_domain = nvlink_domain  # trays of one NVLink domain, multi-node NVLink on
        self.launch = launch
        self.hosts = hosts
        self.profile = profile
        self.ctx = ctx
        self.token = secrets.token_hex(3)
        self._seq = 0
        self._lock = threading.Lock()

    def _job_name(self) -> str:
        with self._lock:
            self._seq += 1
            return f"burnin-nccl-{self.ctx.run_id or 0}-{self.token}-{self._seq}"

    def run(self, test: str, nodes: Sequence[str], label: str) -> TestRun:
        hosts = [self.hosts[n] for n in nodes]
        hostfile = ""
        if self.launch.launcher == "mpirun":  # run_watched writes it and removes it afterwards
            fd, hostfile = tempfile.mkstemp(prefix="burnin-nccl-", suffix=".hosts")
            os.close(fd)
        launch = build_launch(self.launch, hosts, self.plan.argv(test), self._job_name(), hostfile)
        outcome = run_watched(
            launch, self.plan.timeout_s, startup_s=self.launch.startup_timeout_s, ends_startup=is_result_row
        )
        text = outcome.stdout + ("\n" + outcome.stderr if outcome.stderr.strip() else "")
        try:
            run: NcclTestRun | None = parse_nccl_tests(outcome.stdout)
        except ParseError:
            run = None
        hang = None
        if outcome.killed:
            addresses = {n: self.hosts[n].address for n in nodes}
            hang = Hang(self.plan.timeout_s, silent_nodes(text, run, addresses), outcome.last_line)
        floor = busbw_floor(self.profile, len(nodes), nvlink_domain=self.nvlink_domain)
        nvlink_floor = self.nvlink_domain and nvlink_domain_floor(self.profile, len(nodes)) is not None
        result = judge_output(
            text,
            floor,
            hang=hang,
            rc=outcome.rc,
            seconds=outcome.elapsed_s,
            slow_cause=NVLINK_SLOW_CAUSE if nvlink_floor else GROUP_SLOW_CAUSE,
        )
        if outcome.cut:  # the launch printed past the bound: what its middle held was not judged
            result = told_of_cut(result, outcome.cut)
        # Whether any rank ran: a device line or a row, or a hang (a rank that never joins hangs).
        launched = bool(outcome.killed) or (run is not None and bool(run.ranks or run.rows))
        return TestRun(label, tuple(nodes), result, outcome, launched, hang=hang)

    def run_settled(self, test: str, nodes: Sequence[str], label: str) -> list[TestRun]:
        """``run``, once more when the launch never got going (nothing started, or the watchdog
        ended it before the first result row): a slow start on a loaded launcher or fabric must
        not read as a hang that blames a node. A node that really hangs at start-up does so
        twice, and the second run counts; a rank that crashed as it started gets a third try
        (CRASH_TRIES). Returns the runs, the uncounted ones first."""
        runs = [self.run(test, nodes, label)]
        while not runs[-1].got_going and len(runs) < (CRASH_TRIES if runs[-1].crash else START_TRIES):
            again = "again" if len(runs) == 1 else f"try {len(runs) + 1}"
            runs.append(self.run(test, nodes, f"{label} ({again})"))
        return [replace(r, counted=False) for r in runs[:-1]] + runs[-1:]


# ---- the stage -----------------------------------------------------------------------------------


def run_nccl_stage(ctx: GroupContext) -> GroupResults:
    jobs = list(ctx.jobs)
    local = [j.name for j in jobs if j.target is None]
    results: GroupResults = {
        n: [
            (Result.unknown(SOAK_CHECK, "the nccl stage runs across nodes: it needs a rack, not --local"), "")
        ]
        for n in local
    }
    jobs = [j for j in jobs if j.target is not None]
    if not jobs:
        return results
    by_profile: dict[str, list[Any]] = {}
    for j in jobs:
        by_profile.setdefault(j.profile.name, []).append(j)
    for group_jobs in by_profile.values():  # one soak per hardware kind: floors differ
        if group_jobs[0].profile.gpu.multi_node_nvlink and len(group_jobs) >= 2:
            # NVL72: per NVLink domain, with multi-node NVLink on, then off (docs/burnin.md)
            results.update(run_nvlink_passes(ctx, group_jobs, _run_profile))
            continue
        results.update(_run_profile(ctx, group_jobs))
    return results


def _run_profile(
    ctx: GroupContext,
    jobs: list[Any],
    *,
    soak_groups: Sequence[Sequence[str]] | None = None,
    env: Mapping[str, str] | None = None,
    stop: Callable[[Localizer], bool] | None = None,
    nvlink_domain: bool = False,
) -> GroupResults:
    """One soak and its localisation over ``jobs``. ``soak_groups``: the soak groups when the caller
    has them (NVLink domains); ``env``: added to the ranks' environment (NCCL_MNNVL_ENABLE);
    ``stop``: ends localisation early when it says so (the rack rule: burnin/stages/nccl_nvlink.py);
    ``nvlink_domain``: ``jobs`` are trays of one NVLink domain with multi-node NVLink on, judged
    against the profile's NVLink-domain floor where it covers the group, and localised in trials no
    smaller than the trays that floor covers, so that no trial falls back to the network floor."""
    profile = jobs[0].profile
    names = [j.name for j in jobs]
    if len(jobs) < 2:
        # One node measures no network (busbw 0 with one rank, NVLink with eight): not a pass,
        # and not the node's failure either (a nightly with no golden partner free).
        why = "the nccl soak needs at least 2 nodes of a profile; this node reached it alone"
        return {n: [(Result.unknown(SOAK_CHECK, why), "")] for n in names}
    try:
        plan = plan_from(profile, ctx.settings)
        ssh = ssh_settings(j.target for j in jobs)
        if ctx.settings.get("mpirun_ssh_options"):  # the inventory's own ssh options win
            ssh.pop("ssh_options", None)
        launch = settings_from(ctx.settings, **ssh)
        launch = replace(launch, env={**VENDOR_ENV.get(profile.gpu.vendor, {}), **launch.env})
        if env:
            launch = replace(launch, env={**launch.env, **env})
    except (LaunchError, ValueError, TypeError) as exc:
        return {n: [(Result.unknown(SOAK_CHECK, f"nccl stage settings: {exc}"), "")] for n in names}
    hosts = {j.name: LaunchHost(j.name, j.target.host) for j in jobs}
    executor = Executor(plan, launch, hosts, profile, ctx, nvlink_domain=nvlink_domain)
    # Partners anchor only beside nodes under test: a profile of partners alone soaks as usual.
    anchors = [n for n in names if n in ctx.partners] if set(names) - ctx.partners else []
    # NVLink domains (the caller's soak_groups) win; otherwise leaves, where the profile asks.
    by_leaf = soak_groups is None and profile.diag.nccl_group_by_leaf and not anchors
    leaves = _leaf_grouping(ctx, jobs) if by_leaf else None
    if leaves is not None:
        soak_groups = leaves.groups
    min_nodes = MIN_TEST_NODES
    if nvlink_domain and nvlink_domain_floor(profile, len(names)) is not None:
        min_nodes = profile.floors.nccl_busbw_nvlink_domain_min_nodes
    loc = Localizer(
        names,
        plan.group_size,
        min_nodes=min_nodes,
        max_parallel=MAX_PARALLEL,
        anchors=anchors,
        groups=soak_groups,
    )
    runs: list[TestRun] = []  # every run, for the evidence

    groups = loc.next_tests()
    ctx.progress(
        f"nccl: {len(groups)} group(s) of {len(names)} node(s)"
        + (f" ({len(anchors)} golden partner(s) as anchors)" if anchors else "")
        + f", soak {plan.soak_s / 60:g} min, launcher {launch.launcher}, tests {', '.join(plan.tests)}"
    )
    soaks = _soak(ctx, executor, [loc.ordered(g) for g in groups])
    for soak in soaks.values():
        runs += soak
    counted = {g: [r for r in soak if r.counted] for g, soak in soaks.items()}
    if counted and all(not any(r.launched for r in soak) for soak in counted.values()):
        return _launcher_broken(names, runs)
    soak_results: dict[frozenset[str], Result] = {}
    trial_results: dict[int, Result] = {}
    for group in groups:
        soak = counted[frozenset(group)]
        soak_results[frozenset(group)] = judge_soak(
            [r.result for r in soak],
            per_iteration=len(plan.tests),
            steady_fraction=profile.floors.nccl_busbw_steady_fraction,
        )
        failed = [r for r in soak if not r.passed]
        trial = loc.record(group, not failed, failed[0].detail() if failed else "")
        trial_results[trial.index] = (failed or soak)[0].result
    while not (stop and stop(loc)) and (tests := loc.next_tests()):
        ctx.progress(f"nccl: localisation round {loc.round}: {len(tests)} trial(s)")
        with ThreadPoolExecutor(max_workers=min(len(tests), MAX_PARALLEL)) as pool:
            done = list(pool.map(lambda t: _trial(executor, loc, t), tests))
        for test, trial_runs in zip(tests, done, strict=True):
            runs += trial_runs
            trial_runs = [r for r in trial_runs if r.counted]
            failed = [r for r in trial_runs if not r.passed]
            trial = loc.record(test, not failed, failed[0].detail() if failed else "")
            trial_results[trial.index] = (failed or trial_runs)[0].result
            ctx.progress(
                f"  trial {trial.index} [{trial.purpose}] {', '.join(loc.ordered(test))}: "
                f"{'passed' if trial.passed else 'FAILED ' + trial.detail}"
            )
    if loc.culprits:
        ctx.progress(f"nccl: culprit(s): {', '.join(loc.culprits)}")
    out = _node_results(loc, groups, soak_results, trial_results, runs, soaks)
    for node, note in ({} if stop else _shared_groups(loc, groups)).items():
        out[node] = [(replace(r, findings=(*r.findings, note)), e) for r, e in out[node]]
    if leaves is not None:
        for node, said in leaf_findings(leaves, loc.culprits).items():
            first = [f for f in said if f.severity is Severity.CRITICAL]
            rest = [f for f in said if f.severity is not Severity.CRITICAL]
            out[node] = [(replace(r, findings=(*first, *r.findings, *rest)), e) for r, e in out[node]]
    return out


def _leaf_grouping(ctx: GroupContext, jobs: list[Any]) -> LeafGroups:
    """Round 1 by leaf switch (burnin.plan.leaf_groups), from the ib stage's discovery: each
    node's HCA port GUIDs, and ``ibnetdiscover -p`` from the first node."""
    found = ib_stage.discover({j.name: j.target for j in jobs}, ctx.concurrency)
    fabric = next((d.fabric for d in found.values() if d.fabric), None) or []
    guids = {j.name: [p.guid for p in found[j.name].ports] if j.name in found else [] for j in jobs}
    grouping = leaf_groups([j.name for j in jobs], node_leaves(fabric, guids))
    ctx.progress(
        "nccl: soak groups by leaf: "
        + "; ".join(
            f"{label} ({len(g)} node(s))" for label, g in zip(grouping.labels, grouping.groups, strict=True)
        )
        + ("" if fabric else " (no fabric map: ibnetdiscover -p gave nothing)")
    )
    return grouping


def _shared_groups(loc: Localizer, groups: Sequence[frozenset[str]]) -> dict[str, Finding]:
    """Nodes under test that soaked beside another one although partners were given: too few."""
    if not loc.anchors:
        return {}
    tested = len(loc.nodes) - len(loc.anchors)
    out = {}
    for group in groups:
        suspects = loc.ordered(group - loc.anchors)
        for node in suspects if len(suspects) > 1 else ():
            out[node] = info(
                f"soaked in one group with {', '.join(n for n in suspects if n != node)}, also under test: "
                f"{len(loc.anchors)} golden partner(s) for {tested} node(s) under test were too few "
                "for a group each"
            )
    return out


def _soak(
    ctx: GroupContext, executor: Executor, groups: list[list[str]]
) -> dict[frozenset[str], list[TestRun]]:
    """Every group soaks at once; a group stops at its first failed run."""
    deadline = _now() + executor.plan.soak_s

    def one(index: int, group: list[str]) -> list[TestRun]:
        out: list[TestRun] = []
        iteration = 0
        while True:
            iteration += 1
            for test in executor.plan.tests:
                out += executor.run_settled(test, group, f"soak group {index} iteration {iteration} {test}")
                run = out[-1]
                busbw = run.result.metrics.get("busbw_gbps")
                ctx.progress(
                    f"  group {index} iteration {iteration} {test}: {run.result.verdict.value}"
                    + (f" busbw {busbw:g} GB/s" if isinstance(busbw, (int, float)) else "")
                    + (f" ({run.detail()})" if not run.passed else "")
                )
                if not run.passed:
                    return out
            if _now() >= deadline:
                return out

    with ThreadPoolExecutor(max_workers=min(len(groups), MAX_PARALLEL) or 1) as pool:
        done = list(pool.map(lambda ig: one(*ig), enumerate(groups, 1)))
    return {frozenset(g): d for g, d in zip(groups, done, strict=True)}


def _trial(executor: Executor, loc: Localizer, test: frozenset[str]) -> list[TestRun]:
    """One localisation trial: one run of each test, stopping at the first failure."""
    nodes = loc.ordered(test)
    out = []
    for name in executor.plan.tests:
        out += executor.run_settled(name, nodes, f"localisation round {loc.round} {name}")
        if not out[-1].passed:
            break
    return out


def _launcher_broken(names: list[str], runs: list[TestRun]) -> GroupResults:
    first = runs[0] if runs else None
    why = "no rank of any group printed anything: the launcher could not start the test"
    crashed = [r for r in runs if r.crash]
    if crashed:  # ranks started and one died of a signal: the node it names, or a start-up race
        why = (
            "no rank of any group printed anything: a rank crashed as it started "
            f"({'; '.join(dict.fromkeys(r.crash or '' for r in crashed))}) "
            f"in {len(crashed)} of {len(runs)} launch(es); its stderr is in the evidence"
        )
    elif first is not None:
        lines = (first.outcome.stderr.strip() or first.outcome.stdout.strip()).splitlines()
        # The launcher's first error is the cause (srun: "task 0: Exited with exit code 1"); the
        # lines after it are mostly the ranks it took down with it ("task 2: Terminated").
        cause = next((line for line in lines if "error" in line.lower()), None)
        shown = [cause, *lines[-2:]] if cause is not None and cause not in lines[-2:] else lines[-3:]
        why += f" ({' | '.join(shown)})" if shown else ""
    evidence = "\n\n".join(r.evidence() for r in runs[:EVIDENCE_RUNS])
    return {n: [(Result.unknown(SOAK_CHECK, why), evidence)] for n in names}


def _node_results(
    loc: Localizer,
    groups: list[frozenset[str]],
    soak_results: Mapping[frozenset[str], Result],
    trial_results: Mapping[int, Result],
    runs: list[TestRun],
    soaks: Mapping[frozenset[str], list[TestRun]],
) -> GroupResults:
    localised = node_results(loc, trial_results)
    out: GroupResults = {}
    for group in groups:
        soak = soak_results[frozenset(group)]
        record = _record(loc.ordered(group), soak, soaks[frozenset(group)])
        for node in loc.ordered(group):
            mine = [r for r in runs if node in r.nodes]
            mine.sort(key=lambda r: r.passed)  # failures first
            evidence = "\n\n".join(r.evidence() for r in mine[:EVIDENCE_RUNS])
            if len(mine) > EVIDENCE_RUNS:
                evidence += f"\n\n... {len(mine) - EVIDENCE_RUNS} more run(s) not kept"
            evidence += f"\n\n{record}"
            if soak.verdict in (Verdict.PASS, Verdict.WARN) and node not in loc.culprits:
                out[node] = [(soak, evidence)]
            else:
                out[node] = [(_combine(node, soak, localised[node]), evidence)]
    return out


def _record(group: Sequence[str], soak: Result, runs: Sequence[TestRun]) -> str:
    """The group's soak runs whole, as judged: what `burnin rejudge` judges the group again from."""
    kept = [
        soak_run(
            r.nodes,
            r.outcome.stdout + ("\n" + r.outcome.stderr if r.outcome.stderr.strip() else ""),
            rc=r.outcome.rc,
            seconds=r.outcome.elapsed_s,
            cut=r.outcome.cut,
            hang=r.hang,
            counted=r.counted,
        )
        for r in runs
    ]
    # the runs of the first iteration: one per test (burnin.checks.nccl.judge_soak numbers them)
    per_iteration = sum(1 for row in soak.metrics.get("iterations") or () if row.get("index") == 1) or 1
    return record_text(group, soak.verdict not in (Verdict.PASS, Verdict.WARN), kept, per_iteration)


def _combine(node: str, soak: Result, localised: Result) -> Result:
    """A node of a group whose soak failed: the localisation decides its verdict."""
    metrics = {**soak.metrics, "localisation": localised.metrics, "group_soak": soak.verdict.value}
    if localised.verdict is Verdict.FAIL:
        findings: tuple[Finding, ...] = localised.findings + tuple(
            f for f in soak.findings if f.severity is Severity.CRITICAL
        )
        return Result(SOAK_CHECK, Verdict.FAIL, metrics, findings, localised.reason)
    note = info(
        f"the group soak failed ({_first_critical(soak)}); localisation: "
        f"{localised.reason or localised.verdict.value}"
    )
    return Result(SOAK_CHECK, localised.verdict, metrics, (note,), localised.reason)


def _first_critical(result: Result) -> str:
    return next((f.message for f in result.findings if f.severity is Severity.CRITICAL), result.reason or "")
