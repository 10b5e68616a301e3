"""`burnin reliability`, `burnin lemons` and `burnin clear-lemon`: the fleet's history read back
(burnin/history/, docs/reliability.md)."""

from __future__ import annotations

import json
import math
from datetime import timedelta

import click

from bringup.cli.common import inventory_dir_from, store_from
from bringup.cli.ui import console, table
from burnin.cli.render import note, usage_error
from burnin.golden.rules import parse_age
from burnin.history.figures import JobPlan, Reliability
from burnin.history.fleet import LemonReport, clear_lemon, fleet_lemons, fleet_reliability
from burnin.history.reliability import ETTR_FORMULA, FORMULA_SOURCE


def _duration(text: str | None, option: str) -> timedelta | None:
    if text is None:
        return None
    try:
        return parse_age(text)
    except ValueError as exc:
        raise usage_error(exc, option) from None


@click.command("reliability")
@click.option("--rack", default=None, help="Only this rack's nodes (default: the whole fleet in the store).")
@click.option("--window", default="28d", show_default=True, help="How far back to count failures (28d, 12w).")
@click.option(
    "--failure-rate",
    type=float,
    default=None,
    help="Failures per 1,000 node-days to plan with instead of the measured rate (RSC-1: 6.5, RSC-2: 2.34).",
)
@click.option("--job-gpus", type=int, default=None, help="A job size in GPUs, for E[ETTR].")
@click.option("--checkpoint", default="60m", show_default=True, help="The job's checkpoint interval.")
@click.option("--restart", default="5m", show_default=True, help="The job's restart cost (u0).")
@click.option(
    "--target-ettr", type=float, default=None, help="The ETTR wanted: print the checkpoint interval it needs."
)
@click.option("--gpus-per-node", type=int, default=None, help="Override the profile's GPU count per node.")
@click.option(
    "--sacct/--no-sacct",
    default=True,
    show_default=True,
    help="Count the node failures only Slurm accounting saw (NODE_FAIL jobs; needs slurmdbd).",
)
@click.option("--json", "as_json", is_flag=True, help="The figures as JSON (mttf_hours: GPU count -> hours).")
@click.pass_context
def reliability_cmd(
    ctx: click.Context,
    rack: str | None,
    window: str,
    failure_rate: float | None,
    job_gpus: int | None,
    checkpoint: str,
    restart: str,
    target_ettr: float | None,
    gpus_per_node: int | None,
    sacct: bool,
    as_json: bool,
) -> None:
    """Failure rate per 1,000 node-days, MTTF by job size, E[ETTR] and the checkpoint interval a
    target ETTR needs (Kokolis et al. 2024, Meta's RSC study). Node failures only Slurm saw
    (jobs ended NODE_FAIL, the store has no failure of the node then) count too."""
    span = _duration(window, "--window")
    plan = JobPlan(
        job_gpus, _duration(checkpoint, "--checkpoint"), _duration(restart, "--restart"), target_ettr
    )
    result = fleet_reliability(
        store_from(ctx),
        rack,
        span,
        inventory_dir_from(ctx),
        failure_rate=failure_rate,
        plan=plan,
        gpus=gpus_per_node,
        sacct=sacct,
    )
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    _render_reliability(result)


def _render_reliability(r: Reliability) -> None:
    where = f"rack {r.rack}" if r.rack else "the fleet"
    console.print(
        f"{where}: {r.nodes} nodes, {r.node_days:.1f} node-days, {r.failures} failures "
        f"({r.start.date()} .. {r.end.date()})",
        highlight=False,
    )
    measured = "n/a" if r.measured_rate is None else f"{r.measured_rate:.2f}"
    console.print(f"failure rate per 1,000 node-days: measured {measured}", highlight=False)
    console.print(
        f"failures from the store {r.failures - len(r.slurm_failures)}, only in Slurm accounting "
        f"{len(r.slurm_failures)} (NODE_FAIL jobs the store counts already: {r.slurm_runs_in_store}); "
        f"Slurm accounting {r.accounting}",
        highlight=False,
    )
    if r.by_component:
        t = table("failures by component", "component", "count", "per 1,000 node-days")
        for kind, v in r.by_component.items():
            rate = v["per_1000_node_days"]
            t.add_row(kind, str(int(v["count"])), "n/a" if rate is None else f"{rate:.2f}")
        console.print(t)
    if r.top_causes:
        t = table("top failure causes", "cause", "count")
        for cause, n in r.top_causes:
            t.add_row(cause, str(n))
        console.print(t)
    if r.rate is None:
        note("no node-days in the window: give --failure-rate to plan with")
        return
    console.print(
        f"planning with {r.rate:.2f} per 1,000 node-days ({r.rate_source}); "
        f"{r.gpus_per_node} GPUs per node: {r.gpus_per_node_source}",
        highlight=False,
    )
    t = table("MTTF by job size", "GPUs", "nodes", "MTTF (hours)")
    for gpus, hours in r.mttf_hours.items():
        t.add_row(
            str(gpus), str(math.ceil(gpus / r.gpus_per_node)), "inf" if math.isinf(hours) else f"{hours:.2f}"
        )
    console.print(t)
    p = r.plan
    if p.gpus and r.ettr is not None:
        console.print(
            f"E[ETTR] of a {p.gpus}-GPU job, checkpoint every {p.checkpoint}, restart {p.restart}: {r.ettr:.3f}",
            highlight=False,
        )
        if p.target_ettr is not None:
            need = r.checkpoint_needed
            what = (
                "unreachable (the restart cost alone is too much)"
                if need is None
                else "any (no failures expected)"
                if need == timedelta.max
                else f"checkpoint at least every {need.total_seconds() / 60:.1f} min"
            )
            console.print(f"for E[ETTR] >= {p.target_ettr:g}: {what}", highlight=False)
        console.print(f"formula: {ETTR_FORMULA} ({FORMULA_SOURCE})", highlight=False)


@click.command("lemons")
@click.option("--rack", default=None, help="Only this rack's nodes (default: the whole fleet in the store).")
@click.option("--window", default=None, help="How far back to look (default: the policy's window_days, 28).")
@click.option("--apply", is_flag=True, help="Flag the candidates: out of the golden list until cleared.")
@click.option(
    "--sacct/--no-sacct",
    default=True,
    show_default=True,
    help="Read Slurm accounting too (sacct: NODE_FAIL jobs, requeues; needs slurmdbd).",
)
@click.option("--json", "as_json", is_flag=True, help="The candidates and their evidence as JSON.")
@click.pass_context
def lemons_cmd(
    ctx: click.Context, rack: str | None, window: str | None, apply: bool, sacct: bool, as_json: bool
) -> None:
    """Lemon nodes: those that keep failing after repair, with the evidence behind each
    (the policy: <inventory>/policies/lemons.yml, docs/reliability.md). Never retires a node."""
    report = fleet_lemons(
        store_from(ctx),
        rack,
        _duration(window, "--window"),
        inventory_dir_from(ctx),
        apply=apply,
        sacct=sacct,
    )
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    _render_lemons(report, apply)


def _render_lemons(r: LemonReport, apply: bool) -> None:
    if not r.lemons:
        console.print(
            f"no lemon among {r.nodes} nodes over {r.window} (policy: {r.policy_source}; "
            f"Slurm accounting {r.accounting})",
            highlight=False,
        )
        return
    t = table(f"lemon candidates over {r.window}", "node", "rules", "evidence")
    for lemon in r.lemons:
        t.add_row(lemon.node, ", ".join(lemon.rules), lemon.summary)
    console.print(t)
    note(f"{len(r.lemons)} of {r.nodes} nodes; policy: {r.policy_source}; Slurm accounting {r.accounting}")
    if apply:
        note(
            f"flagged now: {', '.join(r.flagged) or 'none'}; already flagged: {', '.join(r.already) or 'none'}"
        )
    else:
        note("nothing recorded: --apply flags them (out of the golden list until `burnin clear-lemon`)")


@click.command("clear-lemon")
@click.argument("node")
@click.option("--reason", required=True, help="What was done (ticket, part swapped, baseboard replaced).")
@click.pass_context
def clear_lemon_cmd(ctx: click.Context, node: str, reason: str) -> None:
    """Clear NODE's lemon flag, so the golden selection may take it again."""
    flag = clear_lemon(store_from(ctx), node, reason)
    click.echo(f"{node}: lemon flag cleared (was: {flag.get('evidence', '')})")


COMMANDS = (reliability_cmd, lemons_cmd, clear_lemon_cmd)
