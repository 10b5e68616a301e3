"""`burnin nightly`: the scheduled re-test of repaired nodes (docs/in-service.md, "The nightly").
The systemd timer of the bringup_controller role runs it every night."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.markup import escape

from bringup.cli.common import inventory_dir_from, store_from
from bringup.cli.ui import console, err_console, table
from bringup.core.errors import UserError
from bringup.ssh.fanout import DEFAULT_CONCURRENCY
from burnin.cli.render import note, usage_error
from burnin.golden.rules import parse_age
from burnin.service.nightly import NightlyRequest, NightlyResult, run_nightly
from burnin.service.nightly_lock import NightlyBusy
from burnin.stages import STAGE_ORDER, parse_stages

EXIT_BUSY = 2  # as a bad option: nothing was done
# A rack's night could not run (its inventory, Slurm, the store): not a finished night. Apart
# from 1 and 2, which the systemd unit counts as finished nights, so the failure shows there.
EXIT_ERROR = 3


class Percent(click.ParamType):
    """A share in percent, 0 to 100, its '%' sign optional ('5%' or '5')."""

    name = "N%"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        number = text[:-1].rstrip() if text.endswith("%") else text
        try:
            pct = float(number)
        except ValueError:
            pct = float("nan")
        if not 0 <= pct <= 100:  # nan too
            self.fail(f"{text!r} is not a percentage from 0 to 100 (5% or 5)", param, ctx)
        return pct


@click.command("nightly")
@click.option("--rack", "racks", multiple=True, help="The rack (inventories/RACK.yml); may be repeated.")
@click.option(
    "--all", "all_racks", is_flag=True, help="Every rack of the inventory directory with nodes in the store."
)
@click.option("--stages", default=",".join(STAGE_ORDER), show_default=True, help="Comma-separated stages.")
@click.option(
    "--revalidate",
    "revalidate_pct",
    type=Percent(),
    default=0.0,
    metavar="N%",
    help="Also re-test N% of the golden nodes, '5%' or '5' (those proven longest ago; at least one above 0).",
)
@click.option(
    "--partners",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Golden idle nodes beside the tested ones (ib partners, nccl anchors), of each tested "
    "node's hardware profile: at most N per profile among the tested nodes "
    "[default: one per tested node of the profile, at least 2].",
)
@click.option(
    "--drain-timeout",
    default="1h",
    show_default=True,
    help="How long to wait for running jobs on a drained node (30m, 2h).",
)
@click.option(
    "--reservation",
    default=None,
    help="Test inside this Slurm maintenance reservation instead of draining first.",
)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a profile value.")
@click.option("--concurrency", type=click.IntRange(min=1), default=DEFAULT_CONCURRENCY, show_default=True)
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write the night's HTML and JUnit reports here.",
)
@click.option(
    "--notify", default=None, metavar="CMD", help="A shell command fed the night's summary as JSON on stdin."
)
@click.option(
    "--idle",
    is_flag=True,
    help="Instead: re-test idle golden nodes as preemptible lowest-priority Slurm jobs "
    "(single-node stages; a preempted test is not run).",
)
@click.option(
    "--idle-partition",
    default=None,
    help="With --idle: the preemptible partition (inventory slurm_idle_partition, else bringup-idle).",
)
@click.option(
    "--idle-timeout",
    default="2h",
    show_default=True,
    help="With --idle: cancel a test job not ended by then.",
)
@click.option("--json", "as_json", is_flag=True, help="The summary as JSON on stdout.")
@click.pass_context
def nightly_cmd(
    ctx: click.Context,
    racks: tuple[str, ...],
    all_racks: bool,
    stages: str,
    revalidate_pct: float,
    partners: int | None,
    drain_timeout: str,
    reservation: str | None,
    overrides: tuple[str, ...],
    concurrency: int,
    report_dir: Path | None,
    notify: str | None,
    idle: bool,
    idle_partition: str | None,
    idle_timeout: str,
    as_json: bool,
) -> None:
    """Re-test the repaired nodes (and --revalidate N% of the golden ones): drain them without
    killing jobs, burn them in beside golden partners, resume those that come back golden.

    Exit status: 0 every tested node is golden again (or none to test); 1 some are not; 2 bad
    option or another nightly holds the rack; 3 a rack's night could not run (the others still
    run)."""
    if bool(racks) == all_racks:
        raise click.UsageError("give --rack R (one or more) or --all")
    try:
        timeout = parse_age(drain_timeout).total_seconds()
    except ValueError as exc:
        raise usage_error(exc, "--drain-timeout") from None
    try:
        idle_timeout_s = parse_age(idle_timeout).total_seconds()
    except ValueError as exc:
        raise usage_error(exc, "--idle-timeout") from None
    try:
        stage_list = parse_stages(stages)
    except ValueError as exc:
        raise usage_error(exc, "--stages") from None
    store, inv = store_from(ctx), inventory_dir_from(ctx)
    names = list(racks) or sorted(p.stem for p in inv.glob("*.yml") if store.list_nodes(rack=p.stem))
    results: list[NightlyResult] = []
    busy = broken = False
    for rack in names:
        req = NightlyRequest(
            rack,
            stage_list,
            revalidate_pct,
            partners,
            timeout,
            reservation,
            overrides,
            concurrency,
            report_dir,
            notify,
            idle=idle,
            idle_partition=idle_partition,
            idle_timeout_s=idle_timeout_s,
        )
        try:
            results.append(run_nightly(store, inv, req, say=_say))
        except NightlyBusy as exc:  # not a failed night: this rack's was not run; the others go on
            click.echo(f"burnin nightly: {exc}", err=True)
            busy = True
        except UserError as exc:  # this rack's night could not run; one broken rack stops no other
            click.echo(f"burnin nightly: rack {rack}: {exc}", err=True)
            broken = True
    if as_json:
        click.echo(json.dumps([r.summary() for r in results], indent=2))
    else:
        for r in results:
            _render(r)
    sys.exit(EXIT_ERROR if broken else EXIT_BUSY if busy else max((r.exit_code for r in results), default=0))


def _say(line: str) -> None:
    err_console.print(line, markup=False, highlight=False)


def _render(r: NightlyResult) -> None:
    out = table(
        f"nightly of rack {r.rack}" + (f" (run {r.run_id})" if r.run_id else ""),
        "node",
        "role",
        "state",
        "burn-in",
        "slurm",
        "finding",
    )
    for row in r.rows:
        state = (
            row.state_after
            if row.state_after == row.state_before
            else f"{row.state_before} -> {row.state_after}"
        )
        out.add_row(
            row.node,
            row.role,
            state,
            row.verdict or "-",
            escape(row.slurm or "-"),
            escape(row.finding[:120] or row.why),
        )
    console.print(out)
    for line in r.notes:  # said when the night started too; the end of the output is what is read
        note(line)
    for path in r.reports:
        note(f"wrote {path}")
    if r.notified:
        note(r.notified)


COMMANDS = (nightly_cmd,)
