"""`burnin runs`: the runs in the fleet store and how each ended; `burnin runs abort N` ends one.

Listing first records as abandoned every running run whose controller is gone (bringup/fleet/runs.py).
"""

from __future__ import annotations

import json

import click
from rich.markup import escape

from bringup.cli.common import store_from
from bringup.cli.ui import console, table
from bringup.fleet.models import utcnow
from bringup.fleet.run_list import RunView, list_runs
from bringup.fleet.runs import abort_run, format_duration
from burnin.cli.render import note

_STATE_STYLE = {
    "running": "cyan",
    "done": "green",
    "ok": "green",
    "partial": "yellow",
    "failed": "red",
    "error": "red",
    "interrupted": "yellow",
    "abandoned": "magenta",
    "aborted": "magenta",
}


@click.group("runs", invoke_without_command=True)
@click.option("--rack", default=None, help="Only this rack's runs.")
@click.option(
    "--all", "show_all", is_flag=True, help="Every run (default: the running ones and the last 20)."
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable list on stdout.")
@click.pass_context
def runs_cmd(ctx: click.Context, rack: str | None, show_all: bool, as_json: bool) -> None:
    """List runs (burn-in, configure, provision, discover) with their state, nodes and controller."""
    if ctx.invoked_subcommand is not None:
        return
    views = list_runs(store_from(ctx), rack, limit=None if show_all else 20)
    if as_json:
        click.echo(json.dumps([v.as_dict() for v in views], indent=2))
        return
    now = utcnow()
    out = table(
        "runs", "run", "kind", "rack", "state", "nodes", "controller", "started", "took", "end reason"
    )
    for v in views:
        out.add_row(
            str(v.id),
            v.kind,
            v.rack or "-",
            f"[{_STATE_STYLE.get(v.status, 'white')}]{v.status}[/]",
            escape(_nodes(v)),
            escape(f"{v.host or '?'}:{v.pid if v.pid is not None else '?'}"),
            f"{format_duration((now - v.started_at).total_seconds())} ago",
            format_duration(((v.finished_at or now) - v.started_at).total_seconds()),
            escape(v.end_reason or ""),
        )
    console.print(out)
    if not views:
        note("no runs" + (f" for rack {rack}" if rack else ""))


@runs_cmd.command("abort")
@click.argument("run_id", type=int)
@click.option("--reason", required=True, help="Why (recorded on the run and on each node it held).")
@click.pass_context
def abort_cmd(ctx: click.Context, run_id: int, reason: str) -> None:
    """End running run RUN_ID: it becomes `aborted`, its nodes are free, each gets an event.

    A controller still alive stops at its next heartbeat."""
    run = abort_run(store_from(ctx), run_id, reason)
    note(f"{run.kind} run {run.id} aborted: {run.end_reason}")


def _nodes(v: RunView) -> str:
    names = list(v.nodes)
    shown = ",".join(names[:4]) + (f" +{len(names) - 4}" if len(names) > 4 else "")
    return f"{shown} ({len(names)})" if names else "-"


COMMANDS = (runs_cmd,)
