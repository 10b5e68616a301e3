"""`burnin rejudge --run N [--set KEY=VALUE]`: judge a saved run's results again from their
evidence (nothing runs on any node) and show what changed.

Exit status: 0 when no verdict got worse, 1 when at least one did (a node that passed does not
any more under the new values), 2 for a usage error. Results that cannot be judged again are
listed with why, and do not change the exit status.
"""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from bringup.cli.common import inventory_dir_from, store_from
from bringup.cli.ui import console, table
from burnin.cli.render import note, styled
from burnin.run.rejudge import Rejudgement, first_finding, rejudge_run


@click.command("rejudge")
@click.option("--run", "run_id", type=int, required=True, help="The run whose results to judge again.")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a profile value (as burnin run --set), on top of the run's own --set items.",
)
@click.option("--dry-run", is_flag=True, help="Show what would change; record nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable result on stdout.")
@click.pass_context
def rejudge_cmd(
    ctx: click.Context, run_id: int, overrides: tuple[str, ...], dry_run: bool, as_json: bool
) -> None:
    """Judge every result of a saved run again from its stored evidence, without running anything.

    The new verdicts are recorded as a new run of kind 'rejudge' (unless --dry-run); the
    original results stay as they are. Exit 1 when a verdict got worse."""
    done = rejudge_run(
        store_from(ctx), inventory_dir_from(ctx) / "profiles", run_id, overrides, record=not dry_run
    )
    if as_json:
        click.echo(json.dumps(done.to_dict(), indent=2))
    else:
        _print(done)
    sys.exit(1 if done.worse else 0)


def _print(done: Rejudgement) -> None:
    changed = [i for i in done.items if i.changed]
    if changed:
        out = table(f"run {done.of_run} judged again: what changed", "node", "check", "was", "now", "finding")
        for i in changed:
            out.add_row(
                i.node, f"{i.stage}/{i.check}", styled(i.old), styled(i.new.verdict), escape(first_finding(i))
            )  # type: ignore[union-attr]
        console.print(out)
    cannot = [i for i in done.items if i.new is None]
    if cannot:
        out = table("cannot re-judge", "node", "check", "was", "why")
        for i in cannot:
            out.add_row(i.node, f"{i.stage}/{i.check}", styled(i.old), escape(i.cannot))
        console.print(out)
    s = done.summary()
    where = f"recorded as run {done.run_id}" if done.run_id is not None else "not recorded"
    sets = f" with --set {' '.join(done.overrides)}" if done.overrides else ""
    console.print(
        f"run {done.of_run}{sets}: {s['rejudged']} of {s['results']} result(s) judged again, "
        f"{s['changed']} changed ({s['worse']} worse, {s['better']} better), "
        f"{s['cannot_rejudge']} cannot be re-judged"
        + (f", {s['superseded']} measured again since (not recorded)" if s["superseded"] else "")
        + f"; {where}",
        highlight=False,
        soft_wrap=True,
    )
    if done.run_set:
        note(f"the run's own --set items were applied first: {' '.join(done.run_set)}")


COMMANDS = (rejudge_cmd,)
