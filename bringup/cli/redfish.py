"""`bringup discover`, `bringup power`, `bringup boot`, `bringup bmc jobs`: a rack's BMCs.

Every command walks the rack's BMCs concurrently (``--concurrency``, default: every BMC, up to 1,024), shows a
progress bar on stderr, saves each node's result as it arrives, and ends with a table (or
``--json`` on stdout). One failing BMC is one failed row, never a failed run; the exit
status is 1 when any node failed, so scripts notice.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bringup.cli.common import inventory_dir_from, store_from
from bringup.cli.ui import console, err_console, table
from bringup.profiles.suggest import report, shipped_profiles
from bringup.redfish.endpoint import (
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_MEMBERS,
    DEFAULT_NODE_DEADLINE,
    DEFAULT_REQUEST_DEADLINE,
    TransportOptions,
)
from bringup.redfish.fanout import MAX_CONCURRENCY, Outcome
from bringup.redfish.power import ACTIONS, PowerOptions
from bringup.redfish.rack import (
    RackJob,
    RackResult,
    bmc_jobs,
    boot_rack,
    boot_summary,
    discover_rack,
    power_rack,
)
from bringup.redfish.vendors.dell import is_pending

# -- shared plumbing ----------------------------------------------------------------------


def bmc_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options every BMC command takes: which nodes, how many at once, timeouts, TLS."""
    for option in reversed(
        [
            click.option(
                "--rack", required=True, help="Rack name (inventories/<rack>.yml) or inventory path."
            ),
            click.option("--nodes", multiple=True, help="Only these hosts (comma-separated or repeated)."),
            click.option(
                "--concurrency",
                type=click.IntRange(1, 4096),
                default=None,
                help=f"BMCs worked on at once [default: all of them, up to {MAX_CONCURRENCY}].",
            ),
            click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout."),
            click.option(
                "--insecure",
                is_flag=True,
                help="Do not verify BMC TLS certificates (noted in every event).",
            ),
            click.option(
                "--ca-bundle",
                type=click.Path(exists=True, dir_okay=False),
                default=None,
                help="CA certificates (PEM) to verify BMC certificates with.",
            ),
            click.option(
                "--allow-http",
                is_flag=True,
                help="Allow plain-HTTP BMC addresses for every host (the password crosses in cleartext; "
                "per host: bmc_allow_http: true in the inventory).",
            ),
            click.option("--connect-timeout", type=float, default=5.0, show_default=True, help="Seconds."),
            click.option("--read-timeout", type=float, default=30.0, show_default=True, help="Seconds."),
            click.option(
                "--retries",
                type=click.IntRange(0, 10),
                default=3,
                show_default=True,
                help="Retries of GETs and of connections never made (actions are never repeated).",
            ),
            # Bounds on what one BMC may send (docs/redfish.md, "Bounds").
            click.option(
                "--request-deadline",
                type=click.FloatRange(0, min_open=True),
                default=DEFAULT_REQUEST_DEADLINE,
                show_default=True,
                help="Seconds for one request's whole answer (never less than --read-timeout).",
            ),
            click.option(
                "--max-body-mib",
                type=click.FloatRange(0, min_open=True),
                default=DEFAULT_MAX_BODY / (1 << 20),
                show_default=True,
                help="MiB one BMC answer may be, on the wire and decompressed.",
            ),
            click.option(
                "--max-members",
                type=click.IntRange(1),
                default=DEFAULT_MAX_MEMBERS,
                show_default=True,
                help="Members one BMC collection may list.",
            ),
        ]
    ):
        fn = option(fn)
    return fn


def _transport(kw: dict[str, Any]) -> TransportOptions:
    return TransportOptions(
        connect_timeout=kw.pop("connect_timeout"),
        read_timeout=kw.pop("read_timeout"),
        retries=kw.pop("retries"),
        ca_bundle=kw.pop("ca_bundle"),
        insecure=kw.pop("insecure"),
        allow_http=kw.pop("allow_http"),
        request_deadline=kw.pop("request_deadline"),
        max_body=max(1, int(kw.pop("max_body_mib") * (1 << 20))),
        max_members=kw.pop("max_members"),
        node_deadline=kw.pop("node_deadline", None),  # discover's own option
    )


@contextlib.contextmanager
def _progress(label: str, total: int) -> Iterator[Callable[[Outcome[Any]], None]]:
    """A bar on stderr: nodes done and failed so far."""
    progress = Progress(
        TextColumn(f"{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )
    failed = 0
    with progress:
        bar = progress.add_task(label, total=total, failed=0)

        def done(outcome: Outcome[Any]) -> None:
            nonlocal failed
            failed += not outcome.ok
            progress.update(bar, advance=1, failed=failed)

        yield done


def _job(
    ctx: click.Context, rack: str, nodes: tuple[str, ...], concurrency: int | None, kw: dict[str, Any]
) -> RackJob:
    options = _transport(kw)
    if options.insecure and not kw.get("dry_run"):
        err_console.print("[yellow]warning:[/yellow] --insecure: BMC certificates are NOT verified")
    return RackJob(
        store_from(ctx), rack, inventory_dir_from(ctx), nodes, options, concurrency, watch=_progress
    )


def _emit(as_json: bool, result: RackResult, render: Callable[[], None]) -> None:
    for warning in result.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False, soft_wrap=True)
    for name in result.enrolled:
        err_console.print(f"{name}: enrolled (it was not in the fleet store yet)", highlight=False)
    if as_json:
        click.echo(json.dumps(result.rows, indent=2, default=str))
    else:
        render()
    sys.exit(1 if result.failed else 0)


# -- discover -----------------------------------------------------------------------------


@click.command("discover")
@bmc_options
@click.option(
    "--accept-new-serial",
    is_flag=True,
    help="Re-key nodes whose serial changed (after checking the board swap) instead of flagging them.",
)
@click.option(
    "--node-deadline",
    type=click.FloatRange(0, min_open=True),
    default=DEFAULT_NODE_DEADLINE,
    show_default=True,
    help="Seconds one BMC's whole discovery may take; past it that node fails, the others carry on.",
)
@click.pass_context
def discover_cmd(
    ctx: click.Context,
    rack: str,
    nodes: tuple[str, ...],
    concurrency: int | None,
    as_json: bool,
    accept_new_serial: bool,
    **kw: Any,
) -> None:
    """Walk every BMC of RACK: serial, model, firmware, MACs, event log; enrolled -> discovered."""
    result = discover_rack(_job(ctx, rack, nodes, concurrency, kw), accept_new_serial=accept_new_serial)
    for name, why in result.skipped.items():
        err_console.print(f"{name}: not discovered ({why})", highlight=False)
    shipped = shipped_profiles(inventory_dir_from(ctx) / "profiles")
    for r in result.rows:
        if r["hardware"]:
            r["profile_from_bmc"] = report(r["name"], r["hardware"], r["profile"], shipped)
    _emit(as_json, result, lambda: _render_discovery(result))


def _render_discovery(result: RackResult) -> None:
    rows = result.rows
    out = table(
        f"rack {result.rack}: {len(rows) - result.failed} of {len(rows)} node(s) discovered",
        "node",
        "serial",
        "vendor / model",
        "power",
        "health",
        "MACs; provisioning NIC (rule: why)",
        "firmware",
        "SEL crit/warn",
        "result",
    )
    for r in rows:
        hw = r["hardware"] or {}
        log_ = r["event_log"]
        sel = (
            "-"
            if log_ is None
            else f"{sum(e['severity'] == 'Critical' for e in log_)}/{sum(e['severity'] == 'Warning' for e in log_)}"
        )
        if log_ is not None and (unread := r.get("event_log_unread")):
            sel += f" ({unread['count']} unread)"  # not known to be clean: see hardware.event_log_unread
        macs = _nic_cell(r)
        result_text = (
            r["result"] if r["error"] is None else f"[red]{r['error']['kind']}[/red]: {r['error']['message']}"
        )
        if r["result"] in ("serial-changed", "serial-conflict"):
            result_text = f"[red]{r['result']}[/red]: see `bringup nodes show {r['name']}`"
        elif r["warnings"]:
            result_text += f" ({len(r['warnings'])} warning(s))"
        out.add_row(
            r["name"],
            r["serial"] or "-",
            f"{r['vendor'] or '-'} / {r['model'] or '-'}",
            r["power_state"] or "-",
            r["health_rollup"] or "-",
            macs,
            str(len(hw["firmware"])) if "firmware" in hw else "-",
            sel,
            result_text,
        )
    console.print(out)
    # Only the nodes whose own profile the BMC's GPUs do not fit: docs/platforms.md.
    for r in rows:
        found = r.get("profile_from_bmc")
        if found and found["compared"] and r["profile"] not in found["profiles"]:
            console.print(f"{r['name']}: profile from the BMC: {escape(found['line'])}", highlight=False)


def _nic_cell(row: dict[str, Any]) -> str:
    """MAC count, then the provisioning NIC with its rule and why, or why none was chosen."""
    count = f"{len(row['macs'])} MAC(s)"
    chosen = row["provisioning_nic"]
    flag = (row["hardware"] or {}).get("provisioning_nic_flag")
    if chosen:
        return f"{count}; {chosen['id']} {chosen['mac']}\n{chosen.get('reason') or chosen['rule']}"
    if flag:
        ids = ", ".join(c["id"] for c in flag["candidates"])
        head = "ambiguous" if flag["kind"] == "ambiguous" else "no match"
        return f"{count}; [red]none chosen[/red]\nrule {flag['rule']}: {head} ({ids}): set provisioning_nic"
    return count


# -- power --------------------------------------------------------------------------------


@click.command("power")
@click.argument("action", type=click.Choice(ACTIONS))
@bmc_options
@click.option("--force", is_flag=True, help="Act on golden (in-service) nodes too.")
@click.option("--dry-run", is_flag=True, help="Print what would be done and stop.")
@click.option(
    "--graceful-timeout",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds GracefulShutdown gets before ForceOff (0: ForceOff at once).",
)
@click.option(
    "--timeout", type=float, default=300.0, show_default=True, help="Seconds to wait for the new state."
)
@click.option("--poll", type=float, default=2.0, show_default=True, help="Seconds between state reads.")
@click.pass_context
def power_cmd(
    ctx: click.Context,
    action: str,
    rack: str,
    nodes: tuple[str, ...],
    concurrency: int | None,
    as_json: bool,
    force: bool,
    graceful_timeout: float,
    timeout: float,
    poll: float,
    **kw: Any,
) -> None:
    """Power nodes on, off (graceful, then forced) or cycle them; or show their power state."""
    popts = PowerOptions(graceful_timeout=graceful_timeout, timeout=timeout, poll=poll)
    job = _job(ctx, rack, nodes, concurrency, kw)
    result = power_rack(job, action, popts, force=force, dry_run=kw["dry_run"])
    if result.dry_run:
        _emit_plan(f"power {action}", result, as_json)
        return

    def render() -> None:
        out = table(f"rack {result.rack}: power {action}", "node", "before", "after", "steps / error", "s")
        for r in result.rows:
            what = (
                "; ".join(r["steps"])
                if r["ok"]
                else f"[red]{r['error']['kind']}[/red]: {r['error']['message']}"
            )
            out.add_row(
                r["name"], r["before"] or "-", r["after"] or "-", what or "-", str(r.get("seconds", ""))
            )
        console.print(out)

    _emit(as_json, result, render)


def _emit_plan(what: str, result: RackResult, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(result.rows, indent=2))
        return
    out = table(f"dry run: {what}", "node", "bmc", "would")
    for r in result.rows:
        out.add_row(r["name"], r["bmc"], r["would"])
    console.print(out)


# -- boot ---------------------------------------------------------------------------------


@click.command("boot")
@click.argument("what", type=click.Choice(["pxe", "cd", "eject"]))
@bmc_options
@click.option("--iso", default=None, help="ISO URL the BMC fetches (boot cd).")
@click.option(
    "--reset/--no-reset",
    default=None,
    help="Restart the node so it boots now (default: yes for cd, no for pxe).",
)
@click.option(
    "--mode",
    type=click.Choice(["uefi", "legacy"]),
    default=None,
    help="Boot mode (default: the host's boot_mode, else its profile's, else uefi).",
)
@click.option("--force", is_flag=True, help="Act on golden (in-service) nodes too.")
@click.option("--dry-run", is_flag=True, help="Print what would be done and stop.")
@click.option("--timeout", type=float, default=300.0, show_default=True, help="Seconds to wait for power on.")
@click.option("--poll", type=float, default=2.0, show_default=True, help="Seconds between state reads.")
@click.pass_context
def boot_cmd(
    ctx: click.Context,
    what: str,
    rack: str,
    nodes: tuple[str, ...],
    concurrency: int | None,
    as_json: bool,
    iso: str | None,
    reset: bool | None,
    mode: str | None,
    force: bool,
    timeout: float,
    poll: float,
    **kw: Any,
) -> None:
    """One-time boot from PXE, or from an ISO in the virtual CD (the first node of a site);
    `eject` removes the virtual media."""
    if what == "cd" and not iso:
        raise click.UsageError("boot cd needs --iso URL")
    if what != "cd" and iso:
        raise click.UsageError("--iso goes with boot cd")
    reset = (what == "cd") if reset is None else reset
    popts = PowerOptions(graceful_timeout=0, timeout=timeout, poll=poll)
    job = _job(ctx, rack, nodes, concurrency, kw)
    result = boot_rack(job, what, popts, iso=iso, reset=reset, mode=mode, force=force, dry_run=kw["dry_run"])
    if result.dry_run:
        _emit_plan(f"boot {what}" + (" and restart" if reset and what != "eject" else ""), result, as_json)
        return

    def render() -> None:
        out = table(f"rack {result.rack}: boot {what}", "node", "result", "notes")
        for r in result.rows:
            if not r["ok"]:
                out.add_row(r["name"], f"[red]{r['error']['kind']}[/red]", r["error"]["message"])
                continue
            notes = r["boot"]["warnings"] if "boot" in r else []
            out.add_row(r["name"], boot_summary(r), "; ".join(notes) or "-")
        console.print(out)

    _emit(as_json, result, render)


# -- bmc (vendor specifics) ----------------------------------------------------------------


@click.group("bmc")
def bmc_group() -> None:
    """BMC housekeeping (Dell iDRAC job queue and Lifecycle Controller)."""


@bmc_group.command("jobs")
@bmc_options
@click.option(
    "--clear", is_flag=True, help="Clear the job queue (Dell JID_CLEARALL): pending changes are lost."
)
@click.pass_context
def bmc_jobs_cmd(
    ctx: click.Context,
    rack: str,
    nodes: tuple[str, ...],
    concurrency: int | None,
    as_json: bool,
    clear: bool,
    **kw: Any,
) -> None:
    """List each BMC's job queue and readiness; clear the queue only when asked (--clear)."""
    result = bmc_jobs(_job(ctx, rack, nodes, concurrency, kw), clear=clear)

    def render() -> None:
        out = table(f"rack {result.rack}: BMC job queues", "node", "ready", "pending jobs", "other jobs")
        for r in result.rows:
            if not r["ok"]:
                out.add_row(r["name"], "-", f"[red]{r['error']['kind']}[/red]: {r['error']['message']}", "-")
                continue
            pending = [j for j in r["jobs"] if is_pending(j)]
            ready = r["readiness"]
            if ready["ready"] is None:
                state = f"not read: {ready['not_read']}"
            else:
                state = f"{'yes' if ready['ready'] else 'NO'} (LC {ready['lc_status']}, server {ready['server_status']})"
            out.add_row(
                r["name"],
                state,
                "\n".join(f"{j['id']} {j['type'] or j['name']} {j['state']}" for j in pending) or "none",
                str(len(r["jobs"]) - len(pending)),
            )
        console.print(out)

    _emit(as_json, result, render)


COMMANDS = (discover_cmd, power_cmd, boot_cmd, bmc_group)
