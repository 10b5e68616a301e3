"""`burnin fabric verify --plan FILE [--ibnetdiscover FILE ...] [--pkeys FILE] [--json]`: the
InfiniBand fabric against its cabling plan (docs/fabric.md). `burnin fabric ufm-events --events
FILE [--plan FILE] [--ib-results FILE] [--json]`: UFM's event log turned into proposed port
actions (docs/fabric.md, "The UFM event log").

Exit status: 0 when the fabric is as planned, 1 when there are findings (one line each, both
ends named, with an action), 2 when an input cannot be read (a malformed plan, an output that is
not ``ibnetdiscover -p``, ``ibnetdiscover`` missing or failing) or the options are wrong.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from bringup.cli.common import store_from
from burnin.fabric.live import verify_fabric
from burnin.fabric.plan import PlanError
from burnin.fabric.ufm import UfmError
from burnin.fabric.ufm_live import ufm_report
from burnin.fabric.verify import EXIT_INPUT_ERROR


@click.group("fabric")
def fabric_group() -> None:
    """The InfiniBand fabric against its cabling plan."""


@fabric_group.command("verify")
@click.option(
    "--plan",
    "plan",
    type=click.Path(path_type=Path),
    required=True,
    help="The cabling plan: a CSV, or a YAML plan.",
)
@click.option(
    "--ibnetdiscover",
    "saved",
    type=click.Path(path_type=Path),
    multiple=True,
    help="A saved 'ibnetdiscover -p' output (repeat for each part of a split fabric); default: run it here.",
)
@click.option(
    "--pkeys",
    type=click.Path(path_type=Path),
    default=None,
    help="smpquery pkeys tables, one '== NODE HCA PORT ==' section each.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable result on stdout.")
def verify_cmd(plan: Path, saved: tuple[Path, ...], pkeys: Path | None, as_json: bool) -> None:
    """Compare the fabric with the plan: missing, unexpected, swapped and misplaced cables, links
    at the wrong speed or width, islands, duplicate GUIDs, disagreeing P_Key tables.

    Exit 0: as planned; 1: findings; 2: an input cannot be read."""
    try:
        done = verify_fabric(plan, list(saved), pkeys)
    except PlanError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INPUT_ERROR)
    if as_json:
        click.echo(json.dumps(done.to_dict(), indent=2))
    else:
        for finding in done.findings:
            click.echo(finding.line())
        pkeys_said = "P_Keys compared" if done.pkeys_checked else "P_Keys not checked (no --pkeys)"
        click.echo(
            f"{len(done.findings)} finding(s); {done.seen_links} cable(s) seen, {done.planned_links} planned;"
            f" {done.islands} island(s); {pkeys_said}"
        )
    sys.exit(done.exit_code)


@fabric_group.command("ufm-events")
@click.option(
    "--events",
    type=click.Path(path_type=Path),
    required=True,
    help="UFM's events: the JSON of GET /ufmRest/app/events, or the event log text.",
)
@click.option(
    "--plan",
    "plan",
    type=click.Path(path_type=Path),
    default=None,
    help="The cabling plan, to name both ends.",
)
@click.option(
    "--ib-results",
    "results",
    type=click.Path(path_type=Path),
    default=None,
    help="ib-stage results (a JSON list of {node, check, time, metrics}); default: none.",
)
@click.option(
    "--store", "use_store", is_flag=True, help="Read the ib stage's newest results from the store too."
)
@click.option("--tz", "zone", default=None, help="The zone UFM's timestamps are in (default UTC).")
@click.option(
    "--flaps", type=click.IntRange(min=2), default=3, show_default=True, help="Link downs that make a flap..."
)
@click.option(
    "--window",
    "window_s",
    type=click.IntRange(min=1),
    default=600,
    show_default=True,
    help="...within these seconds.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable cases and proposals on stdout.")
@click.pass_context
def ufm_events_cmd(
    ctx: click.Context,
    events: Path,
    plan: Path | None,
    results: Path | None,
    use_store: bool,
    zone: str | None,
    flaps: int,
    window_s: int,
    as_json: bool,
) -> None:
    """Classify UFM's events by port (link down, flapping, high BER, thermal) and propose actions:
    disable the switch port and file a ticket naming both ends, or re-enable it once the ib stage
    has loaded it clean. Proposals only: nothing is applied.

    Exit 0: nothing to do; 1: proposals; 2: an input cannot be read."""
    try:
        store = store_from(ctx) if use_store else None
        report = ufm_report(events, plan, results, store, zone=zone, flaps=flaps, window_s=window_s)
    except (UfmError, PlanError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INPUT_ERROR)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        for case in report.cases:
            click.echo(case.line())
        click.echo(
            f"{len(report.cases)} port(s) to act on; {report.events} event(s) read, {report.ignored} of no kind"
            f" judged here, {report.unplaced} naming no port; proposals only, nothing applied"
        )
    sys.exit(1 if any(c.proposals for c in report.cases) else 0)


COMMANDS = (fabric_group,)
