"""`burnin golden` and `burnin report`: the rack's golden nodes as an export, and its report.

Only the export goes to stdout (pipe it); what changed and the summary go to stderr.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import click

from bringup.cli.common import inventory_dir_from, store_from
from bringup.fleet.models import utcnow
from bringup.fleet.select import load_valid_rack
from bringup.fleet.store import FleetStore
from bringup.inventory.rack import Rack
from bringup.local.files import atomic_write
from burnin.cli.render import note, usage_error
from burnin.golden.rules import parse_age
from burnin.stages import parse_stages

_MAX_AGE_HELP = (
    "Results older than this do not count (7d, 36h, 90m). Default: the inventory's "
    "golden_max_age_days, else 7d."
)
_STAGES_HELP = (
    "Stages a golden node must have passed (default: the inventory's golden_stages, else all; ib is "
    "dropped for profiles without HCAs). E.g. preflight,gpu,pcie for a rack without IB."
)


def _setup(
    ctx: click.Context, rack_name: str, max_age: str | None, stages: str | None
) -> tuple[Rack, FleetStore, timedelta | None, list[str] | None]:
    """The rack, the store and the command-line rules shared by `golden` and `report`."""
    rack, _warnings = load_valid_rack(rack_name, inventory_dir_from(ctx))  # InvalidRack: exit 1
    try:
        age = parse_age(max_age) if max_age else None
    except ValueError as exc:
        raise usage_error(exc, "--max-age") from None
    try:
        stage_list = parse_stages(stages) if stages else None
    except ValueError as exc:
        raise usage_error(exc, "--stages") from None
    return rack, store_from(ctx), age, stage_list


@click.command("golden")
@click.option("--rack", required=True, help="The rack (inventories/RACK.yml).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["hostfile", "slurm", "json", "csv", "topology-block"]),
    default="hostfile",
    show_default=True,
    help="hostfile: OpenMPI 'HOST slots=N'; slurm: a compressed hostlist; json, csv: full records; "
    "topology-block: Slurm's topology.conf, one block per NVLink domain (NVL72 racks).",
)
@click.option("--excluded", is_flag=True, help="The excluded nodes with their reasons instead of the golden.")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to FILE (atomically: temp file + rename) instead of stdout.",
)
@click.option("--max-age", default=None, help=_MAX_AGE_HELP)
@click.option("--stages", default=None, help=_STAGES_HELP)
@click.option(
    "--address",
    type=click.Choice(["ip", "hostname", "name"]),
    default="ip",
    show_default=True,
    help="How the hostfile names a node: the address mpirun reaches (ip: store IP, else ansible_host).",
)
@click.option("--dry-run", is_flag=True, help="Print the lifecycle moves and the export; record nothing.")
@click.option(
    "--ignore-scheduler",
    is_flag=True,
    help="Do not read Slurm: export golden nodes even when Slurm will not run them (drained, DOWN).",
)
@click.pass_context
def golden_cmd(
    ctx: click.Context,
    rack: str,
    fmt: str,
    excluded: bool,
    output: Path | None,
    max_age: str | None,
    stages: str | None,
    address: str,
    dry_run: bool,
    ignore_scheduler: bool,
) -> None:
    """Select the rack's golden nodes, record who enters or leaves golden, and export the list.
    A golden node Slurm will not run (drained, DOWN) is excluded with Slurm's reason and stays
    golden (docs/golden.md).

    Only the export goes to stdout (pipe it); what changed and the summary go to stderr.
    """
    from burnin.golden import export
    from burnin.golden.select import SchedulerView, read_scheduler, select_and_apply

    rack_obj, store, age, stage_list = _setup(ctx, rack, max_age, stages)
    hardware = export.needs_hardware(fmt, excluded)
    scheduler = SchedulerView({}) if ignore_scheduler else read_scheduler(rack_obj)
    if scheduler.note:
        note(scheduler.note)
    sel = select_and_apply(
        store,
        rack_obj,
        utcnow(),
        age,
        stage_list,
        dry_run=dry_run,
        address=address,
        hardware=hardware,
        not_run=scheduler.not_run,
    )
    for line in sel.abandoned:
        note(line)
    if dry_run:
        for m in sel.moves:
            note(f"would move {m.node} -> {m.target.value}: {m.reason}")
    for a in sel.applied:
        note(
            f"{a.move.node} -> {a.move.target.value}: {a.move.reason}" if a.done else f"not moved: {a.error}"
        )
    text = export.render(fmt, sel.meta, sel.golden, sel.excluded, excluded)
    if output is None:
        click.echo(text, nl=False)
    else:
        atomic_write(output, text)
        note(f"wrote {output}")
    summary = f"rack {rack_obj.name}: {len(sel.golden)} golden of {sel.total} node(s)"
    if dry_run:
        summary += " (dry run: nothing recorded)"
    note(summary)
    for r in sel.excluded:
        note(f"  excluded {r['name']} ({r['state']}): {'; '.join(r['reasons'])}")


@click.command("report")
@click.option("--rack", required=True, help="The rack (inventories/RACK.yml).")
@click.option(
    "--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the HTML page."
)
@click.option(
    "--junit", "junit_path", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML."
)
@click.option("--max-age", default=None, help=_MAX_AGE_HELP)
@click.option("--stages", default=None, help=_STAGES_HELP)
@click.pass_context
def report_cmd(
    ctx: click.Context,
    rack: str,
    html_path: Path | None,
    junit_path: Path | None,
    max_age: str | None,
    stages: str | None,
) -> None:
    """Write the rack's burn-in report: a self-contained HTML page and/or JUnit XML (changes nothing)."""
    from burnin.report import collect
    from burnin.report.html import render_html
    from burnin.report.junit import render_junit
    from burnin.report.reliability import fleet_section

    if html_path is None and junit_path is None:
        raise click.UsageError("give --html FILE and/or --junit FILE")
    rack_obj, store, age, stage_list = _setup(ctx, rack, max_age, stages)
    report = collect(store, rack_obj, utcnow(), age, stage_list)
    if html_path is not None:
        fleet = fleet_section(store, rack, inventory_dir_from(ctx), report.made_at, loaded=rack_obj)
        atomic_write(html_path, render_html(report, [fleet]))
        note(f"wrote {html_path}")
    if junit_path is not None:
        atomic_write(junit_path, render_junit(report))
        note(f"wrote {junit_path}")
    note(f"rack {report.rack}: {len(report.golden)} of {len(report.nodes)} node(s) qualify as golden")


COMMANDS = (golden_cmd, report_cmd)
