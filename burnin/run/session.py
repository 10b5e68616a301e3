"""A burn-in run as one call: which nodes may start, their jobs, the stages, the run record.

``run_rack`` burns in a rack's nodes over SSH, ``run_local`` this machine. Both take a typed
request (what the command line asked for) and progress hooks, and return each node's outcome;
they print nothing. Which nodes may start is the lifecycle gate (``Step.BURNIN``) applied by
``bringup.fleet.select``: a node it refuses is returned as skipped, with the gate's reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from bringup.core.errors import BadInput
from bringup.fleet.lifecycle import State, Step, gate_refusal, parse_state
from bringup.fleet.runs import run_ledger
from bringup.fleet.select import select
from bringup.fleet.store import FleetStore
from bringup.fleet.transitions import Transition, transition_many
from bringup.profiles.load import apply_overrides, find_profile
from bringup.profiles.suggest import mismatch, shipped_profiles
from bringup.ssh.fanout import default_concurrency, target_for_node
from burnin.result import Verdict
from burnin.stages.beside import run_beside_partners
from burnin.stages.group import GROUP_STAGES
from burnin.stages.jobs import BurninOutcome, NodeJob, StageOutcome
from burnin.stages.launch import group_settings
from burnin.stages.runner import BurninRun, record_for
from burnin.stages.slurm_launch import SlurmStages, stage_settings


@dataclass(frozen=True)
class LaunchOptions:
    """How multi-node stages start ranks (None: the inventory's setting, else the default)."""

    launcher: str | None = None  # mpirun | srun | slurm (single-node stages as Slurm jobs too)
    partition: str | None = None
    reservation: str | None = None
    spool_dir: str | None = None  # --launcher slurm: where the nodes write their results


@dataclass(frozen=True)
class RackRunRequest:
    rack: str
    stages: Sequence[str]
    nodes: Sequence[str] = ()  # --nodes; empty: the whole rack
    concurrency: int | None = None  # nodes at once; None: every node, up to remote.MAX_CONCURRENCY
    keep_going: bool = False  # run later stages even after a stage failed
    force: bool = False  # also re-test golden nodes
    overrides: Sequence[str] = ()  # --set KEY=VALUE
    launch: LaunchOptions = field(default_factory=LaunchOptions)
    wait: timedelta | None = None  # --wait: queue this long behind a run holding the nodes
    tags: Mapping[str, Any] = field(default_factory=dict)  # kept in Run.params (an acceptance's iteration)
    # Proven nodes beside the tested ones in the group stages (burnin/stages/beside.py): claimed by
    # the run, never gated, moved or given the single-node stages. An acceptance's re-delivery.
    partners: Sequence[str] = ()
    # Every single-node stage runs on a node even after one failed (the group stages still take
    # only the nodes that passed them): an acceptance, whose vendor wants every finding and
    # whose pcie stage reads the PCI tree that names a part the OS lost (docs/acceptance.md).
    single_keep_going: bool = False


@dataclass(frozen=True)
class LocalRunRequest:
    stages: Sequence[str]
    profile: str | None = None  # a profile name or .yml path; default: the node's profile
    node: str | None = None  # record results under this fleet node (None: print only)
    keep_going: bool = False
    overrides: Sequence[str] = ()


@dataclass
class Progress:
    """What the caller hears while a run goes on (all optional)."""

    on_stage_start: Callable[[str, int], None] | None = None  # stage, how many nodes
    on_node_done: Callable[[StageOutcome], None] | None = None
    on_group_progress: Callable[[str], None] | None = None  # a line from a multi-node stage
    on_wait: Callable[[str], None] | None = None  # --wait: what the run queues behind


def previous_check_time(store: FleetStore, node: str, check: str) -> str | None:
    """When ``check`` last ran on the node (ISO), for checks that read what is new since."""
    for r in store.latest_results(node):
        if r.check == check:
            return r.time.isoformat()
    return None


def run_rack(
    store: FleetStore, inventory_dir: Path | None, request: RackRunRequest, progress: Progress | None = None
) -> list[BurninOutcome]:
    """Burn in the rack's nodes the gate admits; the refused ones come back skipped, first.

    The run claims the admitted nodes (a live run holding one of them: NodesBusy, or with
    ``request.wait`` the run queues) and records how it ended, whatever happens (run_ledger)."""
    selection = select(store, request.rack, inventory_dir, list(request.nodes), Step.BURNIN, request.force)
    stages = list(request.stages)
    admitted = selection.gate.admitted
    # --set is checked before anything is recorded: a bad value starts no run and moves no node.
    profiles = {
        a.host.name: apply_overrides(selection.rack.profiles[a.host.profile], request.overrides)
        for a in admitted
    }
    skipped = [BurninOutcome(r.name, skipped=r.reason) for r in selection.gate.refused]
    params = {
        **request.tags,
        "stages": stages,
        "nodes": [h.name for h in selection.hosts],
        "set": list(request.overrides),
    }
    launch = request.launch
    rack_vars = selection.hosts[0].vars if selection.hosts else {}
    settings = group_settings(  # rack-wide vars + the command line
        rack_vars,
        burnin_launcher=launch.launcher,
        slurm_partition=launch.partition,
        slurm_reservation=launch.reservation,
    )
    slurm = None
    if settings.get("burnin_launcher") == "slurm":  # checked before the run starts
        settings["burnin_launcher"] = "srun"  # and the multi-node stages launch with srun
        slurm = stage_settings(
            rack_vars,
            burnin_spool_dir=launch.spool_dir,
            slurm_partition=launch.partition,
            slurm_reservation=launch.reservation,
        )
        params["launcher"] = "slurm"
    tested = {a.host.name for a in admitted}
    partners = [p for p in dict.fromkeys(request.partners) if p not in tested]
    if partners:
        params["partners"] = partners
    with run_ledger(
        store,
        "burnin",
        request.rack,
        nodes=[a.host.name for a in admitted] + partners,
        params=params,
        wait=request.wait,
        on_wait=progress.on_wait if progress is not None else None,
    ) as run:
        jobs = []
        # Fresh (a queued run waited), and one query each for the whole rack, not two per node.
        records = {n.name: n for n in store.list_nodes(request.rack)}
        nodes = {a.host.name: records.get(a.host.name) or store.get_node(a.host.name) for a in admitted}
        latest = store.latest_results_of_rack(request.rack)
        # Every move into burnin is one transaction; a node another process moved since the gate
        # saw it is refused there and comes back skipped with why, the others run.
        reason = f"burn-in run {run.id}: {','.join(stages)}"
        moves = [
            Transition(n, State.BURNIN, reason, run.id)
            for n, r in nodes.items()
            if r.state != State.BURNIN.value
        ]
        refused = {m.move.node: m.error for m in transition_many(store, moves) if not m.done}
        skipped += [BurninOutcome(n, skipped=f"could not enter burn-in: {why}") for n, why in refused.items()]
        for a in admitted:
            host = a.host
            node = nodes[host.name]
            if host.name in refused:
                continue
            previous = next(
                (r.time.isoformat() for r in latest.get(node.name, []) if r.check == "bmc_event_log"), None
            )
            target = target_for_node(host.name, host.vars, selection.rack.path.parent, node)
            jobs.append(NodeJob(host.name, profiles[host.name], target, record_for(node.hardware, previous)))
        partner_jobs = []
        for name in partners:
            host, node = selection.rack.host(name), records.get(name) or store.get_node(name)
            profile = apply_overrides(selection.rack.profiles[host.profile], request.overrides)
            target = target_for_node(name, host.vars, selection.rack.path.parent, node)
            partner_jobs.append(NodeJob(name, profile, target, record_for(node.hardware, None)))
        concurrency = request.concurrency or default_concurrency(len(jobs) + len(partner_jobs))
        on_line = progress.on_group_progress if progress is not None else None
        if slurm is not None:
            for stage in GROUP_STAGES:  # what each group stage needs to run through Slurm too
                settings.update(stage.slurm_settings(slurm, run.id, on_line))

        def make_run(these: list[str], beside: frozenset[str] = frozenset()) -> BurninRun:
            keep = request.keep_going or (request.single_keep_going and not beside)
            runner = BurninRun(
                store, run.id, these, concurrency, not keep, group_settings=settings, partners=beside
            )
            if slurm is not None:
                runner.stage_engine = SlurmStages(slurm, run.id, request.overrides, on_line)
            if progress is not None:
                runner.on_stage_start = progress.on_stage_start
                runner.on_node_done = progress.on_node_done
                runner.on_group_progress = progress.on_group_progress
            return runner

        if partners or request.single_keep_going:
            every = {j.name: j for j in [*jobs, *partner_jobs]}
            tested_names = [j.name for j in jobs]
            beside = run_beside_partners(make_run, every, stages, tested_names, partners)
            outcomes = [beside[n] for n in tested_names if n in beside]
        else:
            outcomes = _execute(make_run(stages), jobs, progress)
        run.finish("failed" if any(o.verdict is Verdict.FAIL for o in outcomes) else "done")
    return skipped + outcomes


def run_local(
    store: FleetStore | None, profiles_dir: Path, request: LocalRunRequest, progress: Progress | None = None
) -> list[BurninOutcome]:
    """Burn in this machine. With ``request.node`` (and its ``store``) the results are recorded
    under that fleet node, which must pass the gate and is claimed like a rack run's; without,
    they are only returned."""
    if request.node is not None and store is None:
        raise ValueError("run_local: a node to record under needs the fleet store")
    node = store.get_node(request.node) if store is not None and request.node is not None else None
    if request.profile:
        profile = find_profile(request.profile, profiles_dir)
    elif node is not None:
        profile = find_profile(node.profile, profiles_dir)
    else:
        raise BadInput("--local needs --profile P (or --node N of the fleet store)")
    profile = apply_overrides(profile, request.overrides)
    stages = list(request.stages)
    if store is None or node is None or request.node is None:
        job = NodeJob("localhost", profile, None, record_for({}, None))
        return _execute(BurninRun(None, None, stages, 1, not request.keep_going), [job], progress)
    # --force is not offered here: a golden node is re-tested from the rack, on purpose.
    why = gate_refusal(Step.BURNIN, parse_state(node.state), False)
    if why is not None:
        raise BadInput(f"node {request.node} cannot start a burn-in: {why}")
    # The profile gate of a rack run (bringup/fleet/select.py), unless --profile names one.
    if not request.profile:
        go_on = "pass --profile P to burn in against another profile"
        shipped = shipped_profiles(profiles_dir)
        wrong = mismatch(request.node, node.hardware or {}, node.profile, profile, shipped, go_on)
        if wrong is not None:
            raise BadInput(wrong)
    params = {"stages": stages, "local": True, "nodes": [request.node], "set": list(request.overrides)}
    with run_ledger(store, "burnin", node.rack, nodes=[request.node], params=params) as run:
        if store.get_node(request.node).state != State.BURNIN.value:
            store.transition(request.node, State.BURNIN, f"local burn-in run {run.id}", run_id=run.id)
        record = record_for(node.hardware, previous_check_time(store, request.node, "bmc_event_log"))
        job = NodeJob(request.node, profile, None, record)
        outcomes = _execute(BurninRun(store, run.id, stages, 1, not request.keep_going), [job], progress)
        run.finish("failed" if any(o.verdict is Verdict.FAIL for o in outcomes) else "done")
    return outcomes


def _execute(runner: BurninRun, jobs: list[NodeJob], progress: Progress | None) -> list[BurninOutcome]:
    if not jobs:
        return []
    if progress is not None:
        runner.on_stage_start = progress.on_stage_start
        runner.on_node_done = progress.on_node_done
        runner.on_group_progress = progress.on_group_progress
    return runner.run(jobs)
