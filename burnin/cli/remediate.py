"""`burnin remediate`: the ladder's next rung for a rack's failed nodes, opt-in
(docs/in-service.md, "Remediation")."""

from __future__ import annotations

import json

import click
from rich.markup import escape

from bringup.cli.common import inventory_dir_from, store_from
from bringup.cli.ui import console, table
from burnin.cli.render import note
from burnin.service.remediate import remediate_rack
from burnin.service.remediate_ladder import Policy


@click.command("remediate")
@click.option("--rack", required=True, help="The rack whose failed nodes to remediate.")
@click.option(
    "--enable",
    is_flag=True,
    help="Act (opt-in; or set burnin_remediate: true in the rack's inventory). Without it only --dry-run runs.",
)
@click.option("--dry-run", is_flag=True, help="Print the plan; act on nothing.")
@click.option(
    "--node-max",
    type=click.IntRange(0),
    default=2,
    show_default=True,
    help="Actions per node per --node-window.",
)
@click.option(
    "--node-window",
    type=click.FloatRange(min=0, min_open=True),
    default=24.0,
    show_default=True,
    help="Hours.",
)
@click.option(
    "--fleet-max",
    type=click.IntRange(0),
    default=5,
    show_default=True,
    help="Nodes acted on fleet-wide per --fleet-window.",
)
@click.option(
    "--fleet-window",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Hours.",
)
@click.option("--json", "as_json", is_flag=True, help="The plan (and what was done) as JSON on stdout.")
@click.pass_context
def remediate_cmd(
    ctx: click.Context,
    rack: str,
    enable: bool,
    dry_run: bool,
    node_max: int,
    node_window: float,
    fleet_max: int,
    fleet_window: float,
    as_json: bool,
) -> None:
    """Carry out the action each failed node's finding names, cheapest rung first (reset the GPU
    of an idle node, reconfigure, power cycle through the BMC, then a person), within a budget;
    a node acted on goes to repair, and the nightly re-tests it before it is resumed."""
    policy = Policy(
        node_max=node_max,
        node_window_s=node_window * 3600,
        fleet_max=fleet_max,
        fleet_window_s=fleet_window * 3600,
    )
    result = remediate_rack(
        store_from(ctx), rack, inventory_dir_from(ctx), dry_run=dry_run, enabled=enable, policy=policy
    )
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    title = f"rack {rack}: remediation" + (" (dry run: nothing done)" if dry_run else "")
    out = table(title, "node", "decision", "rung", "check", "why", "done", "state")
    for r in result.rows:
        out.add_row(
            r.node,
            r.decision,
            r.rung or "-",
            r.check or "-",
            escape(r.why),
            escape(r.done or "-"),
            r.state_after or "-",
        )
    console.print(out)
    if not result.rows:
        note(f"rack {rack}: no failed node")


COMMANDS = (remediate_cmd,)
