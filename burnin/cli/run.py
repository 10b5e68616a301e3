"""`burnin run`: burn in a rack's nodes (or this machine) and show each node's outcome."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from bringup.cli.common import inventory_dir_from, store_from
from bringup.cli.ui import console, err_console, node_progress, table
from bringup.core.errors import GateRefusal
from bringup.fleet.select import UnknownNodes, split_nodes
from bringup.ssh.fanout import MAX_CONCURRENCY
from burnin.cli.render import styled, usage_error
from burnin.golden.rules import parse_age
from burnin.result import PASSING, Verdict
from burnin.run.session import LaunchOptions, LocalRunRequest, Progress, RackRunRequest, run_local, run_rack
from burnin.stages import STAGE_ORDER, parse_stages
from burnin.stages.jobs import BurninOutcome, StageOutcome
from burnin.stages.spool import run_task


@click.command("run")
@click.option("--rack", help="The rack to burn in (inventories/RACK.yml).")
@click.option("--stages", default=",".join(STAGE_ORDER), show_default=True, help="Comma-separated stages.")
@click.option("--nodes", "only", default=None, help="Comma-separated node names (default: the whole rack).")
@click.option("--local", is_flag=True, help="Run on this machine, without SSH (a node checking itself).")
@click.option(
    "--profile", "profile_name", default=None, help="With --local: the profile name or a .yml path."
)
@click.option("--node", "local_node", default=None, help="With --local: record results under this node.")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=None,
    help=f"Nodes at once over SSH (one session each). Default: every node of the run, at most "
    f"{MAX_CONCURRENCY}, which keeps the controller within 256 threads (docs/fleet-scale.md).",
)
@click.option("--keep-going", is_flag=True, help="Run later stages even after a stage failed.")
@click.option("--force", is_flag=True, help="Also re-test golden nodes (they are in service).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a profile value.")
@click.option(
    "--launcher",
    type=click.Choice(["mpirun", "srun", "slurm"]),
    default=None,
    help="mpirun|srun: how multi-node stages (nccl) start ranks, single-node stages go over SSH; "
    "slurm: single-node stages run as one Slurm job per stage (results via --spool-dir), the ib "
    "stage's discovery and rounds as one Slurm job each, and nccl with srun. Default: inventory "
    "burnin_launcher, else mpirun.",
)
@click.option(
    "--spool-dir",
    default=None,
    help="--launcher slurm: a directory the controller and the nodes mount, where each node's task "
    "writes its results (inventory burnin_spool_dir). With --local: write this machine's results "
    "there, not into the store (what each Slurm task runs).",
)
@click.option(
    "--run-id", type=int, default=None, help="With --local --spool-dir: the run the results are for."
)
@click.option("--partition", default=None, help="Slurm partition for srun (inventory slurm_partition).")
@click.option("--reservation", default=None, help="Slurm reservation for srun (inventory slurm_reservation).")
@click.option(
    "--wait",
    is_flag=False,
    flag_value="1h",
    default=None,
    metavar="[DURATION]",
    help="When another run holds some of the nodes, queue behind it for up to DURATION "
    "(30m, 2h; --wait alone: 1h) instead of refusing.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary on stdout.")
@click.pass_context
def run_cmd(
    ctx: click.Context,
    rack: str | None,
    stages: str,
    only: str | None,
    local: bool,
    profile_name: str | None,
    local_node: str | None,
    concurrency: int | None,
    keep_going: bool,
    force: bool,
    overrides: tuple[str, ...],
    launcher: str | None,
    spool_dir: str | None,
    run_id: int | None,
    partition: str | None,
    reservation: str | None,
    wait: str | None,
    as_json: bool,
) -> None:
    """Run burn-in stages on a rack's nodes (or, with --local, on this machine)."""
    try:
        stage_list = parse_stages(stages)
    except ValueError as exc:
        raise usage_error(exc, "--stages") from None
    try:
        wait_for = parse_age(wait) if wait else None
    except ValueError as exc:
        raise usage_error(exc, "--wait") from None
    progress_bar = node_progress()
    progress = _progress(progress_bar, as_json)
    if local and spool_dir:  # one task of a Slurm job (burnin.stages.slurm_launch)
        if run_id is None or not profile_name or not local_node or len(stage_list) != 1:
            raise click.UsageError("--local --spool-dir needs --run-id, --profile, --node and one stage")
        with progress_bar:
            task = run_task(spool_dir, run_id, local_node, stage_list[0], profile_name, overrides)
        outcomes = [task.outcome]
    elif local:
        if not profile_name and not local_node:
            raise click.UsageError("--local needs --profile P (or --node N of the fleet store)")
        local_request = LocalRunRequest(stage_list, profile_name, local_node, keep_going, overrides)
        store = store_from(ctx) if local_node else None
        with progress_bar:
            outcomes = run_local(store, inventory_dir_from(ctx) / "profiles", local_request, progress)
    else:
        if not rack:
            raise click.UsageError("give --rack R (or --local)")
        request = RackRunRequest(
            rack,
            stage_list,
            split_nodes(only),
            concurrency,
            keep_going,
            force,
            overrides,
            LaunchOptions(launcher, partition, reservation, spool_dir),
            wait_for,
        )
        try:
            with progress_bar:
                outcomes = run_rack(store_from(ctx), inventory_dir_from(ctx), request, progress)
        except UnknownNodes as exc:  # an invalid inventory is an error to fix, exit 1
            raise usage_error(exc) from None
    _print_summary(outcomes, stage_list, as_json)
    if rack and not local and outcomes and all(o.skipped for o in outcomes):
        raise GateRefusal(f"no node of rack {rack} was burnt in: each row says why")
    sys.exit(0 if all(o.verdict in PASSING for o in outcomes) else 1)


def _progress(bar: Any, as_json: bool) -> Progress:
    """A progress bar per stage, and one line per node and stage when stderr is not a terminal."""
    tasks: dict[str, Any] = {}

    def started(stage: str, count: int) -> None:
        tasks[stage] = bar.add_task(f"stage {stage}", total=count)
        if not err_console.is_terminal and not as_json:
            err_console.print(f"stage {stage}: {count} node(s)")

    def done(outcome: StageOutcome) -> None:
        bar.advance(tasks[outcome.stage])
        if not err_console.is_terminal and not as_json:
            err_console.print(f"  {outcome.node}: {outcome.stage} {outcome.verdict.value}", highlight=False)

    def group_line(line: str) -> None:  # multi-node stages report their rounds and trials
        err_console.print(line, highlight=False, markup=False)

    def waiting(what: str) -> None:  # --wait: the run queues behind another
        err_console.print(f"waiting: {what}", highlight=False, markup=False)

    return Progress(started, done, None if as_json else group_line, waiting)


def _print_summary(outcomes: list[BurninOutcome], stage_list: list[str], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([_outcome_dict(o) for o in outcomes], indent=2))
        return
    out = table("burn-in summary", "node", *stage_list, "verdict", "state", "first finding")
    for o in sorted(outcomes, key=lambda o: o.node):
        by_stage = {s.stage: s.verdict for s in o.stages}
        cells = [styled(by_stage[s]) if s in by_stage else "-" for s in stage_list]
        out.add_row(o.node, *cells, styled(o.verdict), o.final_state or "-", _first_finding(o))
    console.print(out)


def _first_finding(o: BurninOutcome) -> str:
    if o.skipped:
        return o.skipped
    for s in o.stages:
        for r in s.results:
            if r.verdict in (Verdict.FAIL, Verdict.UNKNOWN, Verdict.WARN):
                f = next((f for f in r.findings if f.severity.value != "info"), None)
                text = f"{f.message} -> {f.action.value}" if f else r.reason
                return f"{r.check}: {text}"
    return ""


def _outcome_dict(o: BurninOutcome) -> dict[str, Any]:
    return {
        "node": o.node,
        "verdict": o.verdict.value,
        "state": o.final_state,
        "skipped": o.skipped,
        "stages": [
            {
                "stage": s.stage,
                "verdict": s.verdict.value,
                "error": s.error,
                "results": [r.to_dict() for r in s.results],
            }
            for s in o.stages
        ],
    }


COMMANDS = (run_cmd,)
