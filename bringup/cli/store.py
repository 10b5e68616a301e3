"""`bringup store prune`: drop old evidence from the fleet store (library: bringup/fleet/prune.py)."""

from __future__ import annotations

import json

import click

from bringup.cli.common import FriendlyGroup, store_from
from bringup.core.cut import mb
from bringup.fleet.prune import parse_older_than, prune


@click.group("store", cls=FriendlyGroup)
def store_group() -> None:
    """Look after the fleet store itself."""


@store_group.command("prune")
@click.option(
    "--older-than",
    "older_than",
    required=True,
    metavar="AGE",
    help="Drop the evidence of results older than this: 180d, 26w, 48h.",
)
@click.option("--dry-run", is_flag=True, help="Say what would be freed; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def prune_cmd(ctx: click.Context, older_than: str, dry_run: bool, as_json: bool) -> None:
    """Drop the raw tool output (evidence) of old results, keeping their verdicts, metrics and
    findings, and every event and run. Shown evidence of a pruned result says it was pruned."""
    out = prune(store_from(ctx), parse_older_than(older_than), dry_run=dry_run)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "cutoff": out.cutoff.isoformat(),
                    "dry_run": out.dry_run,
                    "results": out.results,
                    "blobs": out.blobs,
                    "stored_bytes": out.stored_bytes,
                    "raw_bytes": out.raw_bytes,
                    "runs": out.runs,
                    "run_bytes": out.run_bytes,
                },
                indent=2,
            )
        )
        return
    verb = "would free" if dry_run else "freed"
    click.echo(
        f"evidence from before {out.cutoff:%Y-%m-%d %H:%M} UTC: {out.results} result(s) and {out.runs} run(s); "
        f"{verb} {mb(out.stored_bytes + out.run_bytes)} in the store ({out.blobs} blob(s) holding "
        f"{mb(out.raw_bytes)} of output, and the runs' own output); verdicts, findings and events kept"
    )
