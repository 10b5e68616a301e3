"""`burnin breaker status|reset`: the fleet-wide circuit breaker that `burnin health --breaker-db`
drains through (docs/in-service.md, "The circuit breaker")."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.markup import escape

from bringup.cli.common import store_from
from bringup.cli.ui import console, table
from bringup.fleet import breaker as records
from burnin.cli.render import note
from burnin.service.breaker import reset_command


def _row(b: records.BreakerState) -> dict[str, Any]:
    return {
        "partition": b.partition,
        "check": b.check,
        "tripped": b.tripped,
        "tripped_at": b.tripped_at.isoformat(timespec="seconds") if b.tripped_at else None,
        "drained": b.drained,
        "held": b.held,
        "reset_at": b.reset_at.isoformat(timespec="seconds") if b.reset_at else None,
        "reset_by": b.reset_by,
        "resume": reset_command(b.check, b.partition) if b.tripped else None,
    }


@click.group("breaker")
def breaker_group() -> None:
    """The fleet-wide circuit breaker: a check that drained too large a share of a partition in
    its window drains no more until reset."""


@breaker_group.command("status")
@click.option("--all", "show_all", is_flag=True, help="Also the breakers that are not tripped.")
@click.option(
    "--notify",
    default=None,
    metavar="CMD",
    help="When a breaker is tripped, feed the tripped ones as JSON to this shell command's stdin.",
)
@click.option("--json", "as_json", is_flag=True, help="The breakers as JSON on stdout.")
@click.pass_context
def status_cmd(ctx: click.Context, show_all: bool, notify: str | None, as_json: bool) -> None:
    """The tripped breakers (suspect checks), each with its drained and held nodes and the command
    that resumes it. Exit status 1 when any is tripped (for a timer or an alert), else 0."""
    rows = [_row(b) for b in records.states(store_from(ctx), tripped_only=not show_all)]
    tripped = [r for r in rows if r["tripped"]]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    else:
        out = table("circuit breakers", "partition", "check", "state", "drained", "held", "resume with")
        for r in rows:
            state = f"TRIPPED {r['tripped_at']}" if r["tripped"] else "closed"
            out.add_row(
                r["partition"],
                r["check"],
                state,
                str(r["drained"]),
                str(r["held"]),
                escape(r["resume"] or "-"),
            )
        console.print(out)
        note(
            f"{len(tripped)} tripped: "
            + (", ".join(f"{r['check']} in {r['partition']}" for r in tripped) or "-")
        )
    if notify and tripped:
        from burnin.service.nightly import notify as send  # the nightly's --notify, the same contract

        click.echo(f"burnin breaker: {send(notify, {'breakers': tripped})}", err=True)
    ctx.exit(1 if tripped else 0)


@breaker_group.command("reset")
@click.argument("check")
@click.option("--partition", required=True, help="The Slurm partition whose breaker to reset.")
@click.pass_context
def reset_cmd(ctx: click.Context, check: str, partition: str) -> None:
    """Close CHECK's breaker in PARTITION: its drains go through again, counted afresh. Fix the
    check first: nodes it still fails on drain at their next health run, up to the cap again."""
    state = records.reset(store_from(ctx), partition, check)
    was = (
        f"tripped at {state.tripped_at.isoformat(timespec='seconds')}" if state.tripped_at else "not tripped"
    )
    note(f"breaker of {check} in {partition} reset ({was}); drains of {check} count from now")


COMMANDS = (breaker_group,)
