"""`burnin accept`: a hardware delivery accepted or rejected against its order, node by node."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from bringup.cli.common import inventory_dir_from, store_from
from bringup.cli.ui import console, node_progress, table
from bringup.fleet.select import UnknownNodes
from bringup.inventory.delivery import parse_duration
from bringup.ssh.fanout import DEFAULT_CONCURRENCY
from burnin.accept.outcome import AcceptanceResult
from burnin.accept.run import AcceptProgress, AcceptRequest, NothingToTest, accept_delivery
from burnin.cli.render import note, usage_error
from burnin.run.session import Progress
from burnin.stages.jobs import StageOutcome


@click.command("accept")
@click.option("--rack", required=True, help="The rack the delivery stands in (inventories/RACK.yml).")
@click.option(
    "--delivery", required=True, help="The order: a name in inventories/deliveries/ or a .yml path."
)
@click.option(
    "--soak", default=None, metavar="DURATION", help="Soak length (72h, 30m); default: the order's."
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for the report (HTML, CSV, JSON, JUnit) and the RMA bundles. Default: acceptance-RACK-DELIVERY.",
)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a profile value.")
@click.option("--concurrency", default=DEFAULT_CONCURRENCY, show_default=True, help="Nodes at once.")
@click.pass_context
def accept_cmd(
    ctx: click.Context,
    rack: str,
    delivery: str,
    soak: str | None,
    out_dir: Path | None,
    overrides: tuple[str, ...],
    concurrency: int,
) -> None:
    """Test a delivery against its order: burn-in, soak, a decision per node, RMA bundles.

    Run it again after a crash to continue; after the vendor's fixes, it tests the rejected
    nodes again. Exit status 0 when the delivery is accepted, 1 when it is not."""
    try:
        soak_s = parse_duration(soak) if soak is not None else None
    except ValueError as exc:
        raise usage_error(exc, "--soak") from None
    request = AcceptRequest(
        rack,
        delivery,
        soak_s,
        overrides,
        concurrency,
        out_dir or Path(f"acceptance-{rack}-{Path(delivery).stem}"),
    )
    bar = node_progress()
    try:
        with bar:
            result = accept_delivery(store_from(ctx), inventory_dir_from(ctx), request, _progress(bar))
    except UnknownNodes as exc:  # an invalid inventory is an error to fix, exit 1
        raise usage_error(exc) from None
    except NothingToTest as exc:
        note(str(exc))
        sys.exit(0 if exc.accepted else 1)
    _print(result)
    sys.exit(0 if result.delivery_decision.accepted else 1)


def _progress(bar: Any) -> AcceptProgress:
    tasks: dict[str, Any] = {}

    def started(stage: str, count: int) -> None:
        tasks[stage] = bar.add_task(f"stage {stage}", total=count)

    def done(outcome: StageOutcome) -> None:
        bar.advance(tasks[outcome.stage])

    return AcceptProgress(note, Progress(started, done, note))


def _print(result: AcceptanceResult) -> None:
    out = table(
        f"acceptance #{result.acceptance_id} of {result.delivery}", "node", "serial", "decision", "reasons"
    )
    for d in sorted(result.decisions, key=lambda d: d.node):
        style = "green" if d.accepted else "red"
        reasons = "\n".join(r.line() for r in d.reasons) or "-"
        out.add_row(escape(d.node), escape(d.serial or "-"), f"[{style}]{d.decision}[/]", escape(reasons))
    for node, why in sorted(result.waiting.items()):
        out.add_row(escape(node), "-", "[red]not re-tested[/]", escape(why))
    console.print(out)
    decision = result.delivery_decision
    verdict = "[green]ACCEPTED[/]" if decision.accepted else "[red]REJECTED[/]"
    console.print(f"delivery {result.delivery}: {verdict}: {decision.why}", highlight=False)
    for problem in decision.problems:
        console.print(f"  {problem}", highlight=False, markup=False, soft_wrap=True)
    for path in result.outputs:
        console.print(f"  wrote {path}", highlight=False, markup=False, soft_wrap=True)


COMMANDS = (accept_cmd,)
