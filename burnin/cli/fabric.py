"""`burnin fabric verify --plan FILE [--ibnetdiscover FILE ...] [--pkeys FILE] [--json]`: the
InfiniBand fabric against its cabling plan (docs/fabric.md).

Exit status: 0 when the fabric is as planned, 1 when there are findings (one line each, both
ends named, with an action), 2 when an input cannot be read (a malformed plan, an output that is
not ``ibnetdiscover -p``, ``ibnetdiscover`` missing or failing) or the options are wrong.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from burnin.fabric.live import verify_fabric
from burnin.fabric.plan import PlanError
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


COMMANDS = (fabric_group,)
