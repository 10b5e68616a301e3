"""`burnin health` (on the node, for Slurm's HealthCheckProgram, a prolog or NHC) and `burnin sync`
(on the controller): the in-service loop (docs/in-service.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click
from rich.markup import escape

from bringup.cli.common import inventory_dir_from, store_from
from bringup.cli.ui import console, table
from bringup.core.errors import UserError
from bringup.profiles.load import apply_overrides, find_profile
from bringup.ssh.fanout import DEFAULT_CONCURRENCY
from burnin.cli.render import note, styled
from burnin.service.health import EXIT_CANNOT_START
from burnin.service.health_run import HealthOptions, run_health
from burnin.service.state import DEFAULT_STATE_DIR
from burnin.service.sync import sync_rack
from burnin.service.watch import (
    DEFAULT_SOURCE,
    HOLD_OFF_S,
    INTERVAL_S,
    NVLINK_COMMAND,
    WatchOptions,
    run_watch,
)


def _on_the_node(command: Callable) -> Callable:
    """The options `burnin health` and `burnin watch` share: the node's profile, name and state."""
    options = [
        click.option(
            "--profile",
            "profile_name",
            required=True,
            help="The node's hardware profile: a .yml path (the burnin_tools role puts it in "
            "/etc/bringup/profiles/), or a name in the inventory's profiles/.",
        ),
        click.option(
            "--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a profile value."
        ),
        click.option("--node", default="", help="The node's Slurm name (default: this host's short name)."),
        click.option(
            "--state-dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=DEFAULT_STATE_DIR,
            show_default=True,
            help="Where the last result (last.json) and the kernel-log cursor are kept.",
        ),
        click.option(
            "--textfile-dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="node_exporter's textfile-collector directory for bringup_health.prom "
            "(default /var/lib/prometheus/node-exporter when it exists).",
        ),
    ]
    for option in reversed(options):  # click lists options in the order they are written
        command = option(command)
    return command


@click.command("health")
@_on_the_node
@click.option(
    "--budget",
    type=click.FloatRange(min=0.1),
    default=None,
    help="Seconds for all checks (default: the profile's health.budget_s, 10).",
)
@click.option("--container", is_flag=True, help="Also start a container on every GPU (may pull an image).")
@click.option("--no-drain", is_flag=True, help="Judge and exit 0/1 only; the caller (NHC, a prolog) drains.")
@click.option("--slurm-conf", default=None, help="SLURM_CONF for scontrol (default: Slurm's own).")
@click.option(
    "--breaker-db",
    default=None,
    envvar="BRINGUP_BREAKER_DB",
    metavar="URL",
    help="The fleet store (a PostgreSQL URL) whose circuit breaker each drain passes first: past the "
    "profile's health.breaker_share of the partition in health.breaker_window_s, a check drains no more.",
)
@click.option("--json", "as_json", is_flag=True, help="The result as JSON on stdout.")
@click.pass_context
def health_cmd(
    ctx: click.Context,
    profile_name: str,
    overrides: tuple[str, ...],
    node: str,
    state_dir: Path,
    textfile_dir: Path | None,
    budget: float | None,
    container: bool,
    no_drain: bool,
    slurm_conf: str | None,
    breaker_db: str | None,
    as_json: bool,
) -> None:
    """Check this node in service and drain it in Slurm if a check fails.

    Exit status: 0 keep in service; 1 drain (a check failed, or was UNKNOWN and the profile
    drains on UNKNOWN); 2 bad option; 3 could not start (no profile). It never resumes a node
    and never rewrites another's drain."""
    try:
        profile = apply_overrides(find_profile(profile_name, inventory_dir_from(ctx) / "profiles"), overrides)
    except UserError as exc:
        click.echo(f"burnin health: cannot start: {exc}", err=True)
        ctx.exit(EXIT_CANNOT_START)
    report = run_health(
        HealthOptions(
            profile,
            node=node,
            state_dir=state_dir,
            textfile_dir=textfile_dir,
            budget_s=budget,
            container=container,
            drain=not no_drain,
            slurm_conf=slurm_conf,
            breaker_db=breaker_db,
        )
    )
    data = report.to_dict()
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        out = table(
            f"health of {report.node} ({report.wall_s:.2f} s of {report.budget_s:g} s)",
            "check",
            "verdict",
            "s",
            "why",
        )
        for check in data["checks"]:
            why = check["reason"] or "; ".join(
                f["message"] for f in check["findings"] if f["severity"] != "info"
            )
            out.add_row(check["check"], styled(check["verdict"]), f"{check['wall_s']:.2f}", escape(why[:160]))
        console.print(out)
        note(
            f"{report.node}: {data['verdict']}; Slurm: {data['slurm']}"
            + (f" ({data['reason']})" if data["drain"] else "")
        )
    for problem in report.problems:
        click.echo(f"burnin health: {problem}", err=True)
    ctx.exit(report.exit_code)


@click.command("watch")
@_on_the_node
@click.option(
    "--source", default=DEFAULT_SOURCE, show_default=True, help="The command that follows the kernel log."
)
@click.option(
    "--interval",
    type=click.FloatRange(min=1),
    default=INTERVAL_S,
    show_default=True,
    help="Seconds between counter readings.",
)
@click.option(
    "--hold-off",
    type=click.FloatRange(min=0),
    default=HOLD_OFF_S,
    show_default=True,
    help="Seconds after acting for a check before the same check acts again.",
)
@click.option("--sys-root", type=click.Path(file_okay=False, path_type=Path), default=Path("/"), hidden=True)
@click.option(
    "--nvlink-command",
    default=NVLINK_COMMAND,
    show_default=True,
    help="The command printing the NVLink error counters, read every interval ('' reads none).",
)
@click.option(
    "--for", "for_s", type=click.FloatRange(min=0), default=None, help="Stop after this many seconds."
)
@click.option("--no-drain", is_flag=True, help="Judge and log only; never drain.")
@click.option("--slurm-conf", default=None, help="SLURM_CONF for scontrol (default: Slurm's own).")
@click.option(
    "--breaker-db", default=None, envvar="BRINGUP_BREAKER_DB", metavar="URL", help="As for `burnin health`."
)
@click.pass_context
def watch_cmd(
    ctx: click.Context,
    profile_name: str,
    overrides: tuple[str, ...],
    node: str,
    state_dir: Path,
    textfile_dir: Path | None,
    source: str,
    interval: float,
    hold_off: float,
    sys_root: Path,
    nvlink_command: str,
    for_s: float | None,
    no_drain: bool,
    slurm_conf: str | None,
    breaker_db: str | None,
) -> None:
    """Follow the kernel log and the error counters; drain as `burnin health` does on a failure.

    Runs until stopped (a systemd service: docs/in-service.md, "The resident watcher")."""
    import logging
    import signal
    import time

    try:
        profile = apply_overrides(find_profile(profile_name, inventory_dir_from(ctx) / "profiles"), overrides)
    except UserError as exc:
        click.echo(f"burnin watch: cannot start: {exc}", err=True)
        ctx.exit(EXIT_CANNOT_START)
    logging.basicConfig(level=logging.WARNING, format="burnin watch: %(message)s")
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    until = None if for_s is None else time.monotonic() + for_s
    health = HealthOptions(
        profile,
        node=node,
        state_dir=state_dir,
        textfile_dir=textfile_dir,
        drain=not no_drain,
        slurm_conf=slurm_conf,
        breaker_db=breaker_db,
    )
    stats = run_watch(
        WatchOptions(
            health,
            source=source,
            sys_root=sys_root,
            interval_s=interval,
            hold_off_s=hold_off,
            nvlink_command=nvlink_command,
        ),
        stop=lambda: bool(stopping) or (until is not None and time.monotonic() >= until),
    )
    note(
        f"{stats.lines} line(s), {stats.failed} failing, {stats.readings} counter reading(s); "
        f"actions: {'; '.join(stats.actions) or 'none'}"
    )


@click.command("sync")
@click.option("--rack", required=True, help="The rack (inventories/RACK.yml).")
@click.option(
    "--no-health", is_flag=True, help="Do not read the drained nodes' last health results over SSH."
)
@click.option("--concurrency", type=click.IntRange(min=1), default=DEFAULT_CONCURRENCY, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="The result as JSON on stdout.")
@click.pass_context
def sync_cmd(ctx: click.Context, rack: str, no_health: bool, concurrency: int, as_json: bool) -> None:
    """Carry Slurm's drains into the fleet store: record each new drain once; a golden node a
    health check drained becomes failed (out of the golden list). Never changes Slurm."""
    result = sync_rack(
        store_from(ctx), rack, inventory_dir_from(ctx), read_health=not no_health, concurrency=concurrency
    )
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    out = table(f"sync of rack {rack} with Slurm", "node", "slurm", "state", "drained by", "reason", "done")
    for r in result.rows:
        state = r.state_before if r.state_after == r.state_before else f"{r.state_before} -> {r.state_after}"
        drained_by = f"{r.origin} ({r.user})" if r.origin else "-"
        out.add_row(
            r.node,
            r.slurm,
            state,
            drained_by,
            escape(r.reason[:100] or "-"),
            escape(r.action + (f"; {r.note}" if r.note else "")),
        )
    console.print(out)
    note(
        f"{result.recorded} new drain(s) recorded; {len(result.failed)} golden node(s) failed: {', '.join(result.failed) or '-'}"
    )


COMMANDS = [health_cmd, sync_cmd, watch_cmd]
