"""`bringup configure`: run playbooks/site.yml on a rack's provisioned nodes, record the outcome."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator

import click

from bringup.cli.common import inventory_dir_from, store_from
from bringup.cli.ui import console, err_console, node_progress, table
from bringup.configure.outcome import HostOutcome
from bringup.configure.rack import ConfigureRequest, configure_rack
from bringup.configure.record import ConfigureResult
from bringup.configure.runner import DEFAULT_BATCH, DEFAULT_TASK_TIMEOUT, PER_BATCH_TIMEOUT
from bringup.core.errors import GateRefusal
from bringup.fleet.select import UnknownNodes

ROLES = (
    "base",
    "nvidia_driver",
    "fabric_manager",
    "nvidia_imex",
    "doca_ofed",
    "dcgm",
    "container_toolkit",
    "burnin_tools",
    "storage",
)
RESULT_STYLE = {
    "configured": "green",
    "applied": "green",
    "checked": "cyan",
    "failed": "red",
    "unreachable": "red",
    "not-run": "magenta",
    "timed-out": "red",
    "skipped": "yellow",
}


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


@click.command("configure")
@click.option("--rack", required=True, help="The rack to configure (inventories/RACK.yml).")
@click.option("--nodes", "only", default=None, help="Comma-separated node names (default: the whole rack).")
@click.option(
    "--tags", default=None, help=f"Comma-separated roles to run (default: all): {', '.join(ROLES)}."
)
@click.option("--check", is_flag=True, help="Ansible check mode: report what would change, change nothing.")
@click.option("--batch", default=DEFAULT_BATCH, show_default=True, help="Hosts configured at once (serial).")
@click.option("--force", is_flag=True, help="Also re-configure golden nodes (they are in service).")
@click.option(
    "--timeout",
    type=click.IntRange(min=1),
    default=None,
    help=f"Limit for the whole run, seconds [default: {PER_BATCH_TIMEOUT} per batch].",
)
@click.option(
    "--task-timeout",
    type=click.IntRange(min=1),
    default=DEFAULT_TASK_TIMEOUT,
    show_default=True,
    help="Limit for one Ansible task, seconds (a hung mirror or dpkg lock fails the host).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary on stdout.")
@click.pass_context
def configure(
    ctx: click.Context,
    rack: str,
    only: str | None,
    tags: str | None,
    check: bool,
    batch: int,
    force: bool,
    timeout: int | None,
    task_timeout: int,
    as_json: bool,
) -> None:
    """Install drivers, fabric manager, OFED, DCGM and the burn-in tools on a rack's nodes."""
    tag_list = _split(tags)
    unknown = sorted(set(tag_list) - set(ROLES))
    if unknown:
        raise click.BadParameter(
            f"unknown role(s) {', '.join(unknown)}; roles: {', '.join(ROLES)}", param_hint="--tags"
        )
    if batch < 1:
        raise click.BadParameter("must be at least 1", param_hint="--batch")
    req = ConfigureRequest(
        rack, inventory_dir_from(ctx), only, tag_list, check, batch, force, timeout, task_timeout
    )
    try:
        report = configure_rack(store_from(ctx), req, _progress(check, as_json))
    except UnknownNodes as exc:
        raise click.UsageError(f"not in rack {exc.rack}: {', '.join(exc.names)}") from None
    if report.run_id is None:
        _print_summary(report.results, as_json)
        raise GateRefusal(f"no node of rack {report.rack} can be configured: each row says why")
    if report.playbook_failure:
        raise click.ClickException(report.playbook_failure)
    _print_summary(report.results, as_json, report.run_id)
    sys.exit(1 if report.bad else 0)


def _progress(check: bool, as_json: bool) -> Callable[[list[str]], contextlib.AbstractContextManager]:
    """A bar of hosts done on stderr (a line per host when stderr is not a terminal)."""
    verb = "check" if check else "configure"
    plain = not err_console.is_terminal and not as_json

    @contextlib.contextmanager
    def watch(hosts: list[str]) -> Iterator[Callable[[HostOutcome], None]]:
        progress = node_progress()
        bar = progress.add_task(f"{verb}: starting", total=len(hosts))
        finished: set[str] = set()

        def on_event(outcome: HostOutcome) -> None:
            progress.update(bar, description=f"{verb}: {outcome.name} {outcome.last_task}"[:100])
            if outcome.done and outcome.name not in finished:
                finished.add(outcome.name)
                progress.advance(bar)
                if plain:
                    err_console.print(f"  {outcome.name}: {_line(outcome)}", highlight=False, soft_wrap=True)

        with progress:
            yield on_event
            progress.update(bar, description=f"{verb}: done", completed=len(hosts))

    return watch


def _line(o: HostOutcome) -> str:
    if o.status == "ok":
        return f"ok, {o.changed} changed ({', '.join(o.changed_roles) or 'nothing'})"
    return f"{o.status.upper()} in {o.role}/{o.task}: {o.message}"


def _print_summary(results: list[ConfigureResult], as_json: bool, run_id: int | None = None) -> None:
    if as_json:
        click.echo(json.dumps({"run": run_id, "nodes": [r.as_dict() for r in results]}, indent=2))
        return
    out = table(
        f"configure run {run_id}" if run_id else "configure", "node", "result", "state", "changed", "detail"
    )
    for r in sorted(results, key=lambda r: r.node):
        style = RESULT_STYLE.get(r.result, "white")
        if r.result in ("configured", "applied", "checked"):
            detail = ", ".join(r.changed_roles) or "no change"
            if r.reboot_required:
                detail += "; reboot required"
        elif r.role:
            detail = f"{r.role}/{r.task}: {r.message}"
        else:
            detail = r.message
        out.add_row(r.node, f"[{style}]{r.result}[/]", r.state, str(r.changed), detail)
    console.print(out)
