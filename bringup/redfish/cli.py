"""`bringup discover`, `bringup power`, `bringup boot`, `bringup bmc jobs`: a rack's BMCs.

Every command walks the rack's BMCs concurrently (``--concurrency``, default 64), shows a
progress bar on stderr, saves each node's result as it arrives, and ends with a table (or
``--json`` on stdout). One failing BMC is one failed row, never a failed run; the exit
status is 1 when any node failed, so scripts notice.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bringup.clikit import inventory_dir_from, store_from
from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from bringup.redfish import vmedia
from bringup.redfish.boot import set_boot_once
from bringup.redfish.client import RedfishClient
from bringup.redfish.context import locate
from bringup.redfish.discovery import HARDWARE_KEYS, Discovery, discover
from bringup.redfish.endpoint import TransportOptions
from bringup.redfish.errors import InventoryProblem, Refused
from bringup.redfish.fanout import DEFAULT_CONCURRENCY, Outcome, Task, fan_out
from bringup.redfish.power import ACTIONS, PowerControl, PowerOptions
from bringup.redfish.targets import Target, load_targets, split_nodes
from bringup.redfish.vendors.dell import is_pending
from bringup.ui import console, err_console, table

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
                default=DEFAULT_CONCURRENCY,
                show_default=True,
                help="BMCs worked on at once.",
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
            click.option("--connect-timeout", type=float, default=5.0, show_default=True, help="Seconds."),
            click.option("--read-timeout", type=float, default=30.0, show_default=True, help="Seconds."),
            click.option(
                "--retries",
                type=click.IntRange(0, 10),
                default=3,
                show_default=True,
                help="Retries of GETs and of connections never made (actions are never repeated).",
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
    )


def _tls_details(options: TransportOptions) -> dict[str, Any]:
    return {"tls": options.tls_note, "insecure": options.insecure}


def _prepare(ctx: click.Context, rack: str, nodes: tuple[str, ...]) -> tuple[str, list[Target], FleetStore]:
    """Load the targets and make sure each is in the fleet store (enrolling newcomers)."""
    loaded, targets = load_targets(rack, inventory_dir_from(ctx), split_nodes(nodes))
    store = store_from(ctx)
    known = {n.name for n in store.list_nodes(rack=loaded.name)}
    for t in targets:
        if t.name not in known:
            store.enroll(
                t.name,
                loaded.name,
                t.host.profile,
                bmc_address=t.host.bmc_address,
                bmc_vendor=t.host.bmc_vendor,
                rack_unit=t.host.rack_unit,
            )
            err_console.print(f"{t.name}: enrolled (it was not in the fleet store yet)", highlight=False)
    return loaded.name, targets, store


def _warn_insecure(options: TransportOptions) -> None:
    if options.insecure:
        err_console.print("[yellow]warning:[/yellow] --insecure: BMC certificates are NOT verified")


def _task(target: Target, work: Callable[[RedfishClient], Any], options: TransportOptions) -> Task[Any]:
    if target.endpoint is None:

        def fail() -> Any:
            raise InventoryProblem(target.problem or "no BMC endpoint")

        return Task(target.name, fail)
    endpoint = target.endpoint

    def run() -> Any:
        with RedfishClient(endpoint, options) as client:
            return work(client)

    return Task(target.name, run, endpoint.redact)


def _run(
    label: str,
    tasks: list[Task[Any]],
    concurrency: int,
    on_result: Callable[[Outcome[Any]], None],
) -> list[Outcome[Any]]:
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
        bar = progress.add_task(label, total=len(tasks), failed=0)

        def done(outcome: Outcome[Any]) -> None:
            nonlocal failed
            on_result(outcome)
            failed += not outcome.ok
            progress.update(bar, advance=1, failed=failed)

        return fan_out(tasks, concurrency, done)


def _error(outcome: Outcome[Any]) -> dict[str, str] | None:
    if outcome.error is None:
        return None
    return {"kind": outcome.error.kind, "message": outcome.error.message}


def _emit(as_json: bool, rows: list[dict[str, Any]], render: Callable[[], None]) -> None:
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
    else:
        render()


def _exit(failed: int) -> None:
    sys.exit(1 if failed else 0)


def _refuse_golden(store: FleetStore, targets: list[Target], force: bool) -> dict[str, str]:
    """Node -> why it is refused (DESIGN idea 8: golden nodes need --force)."""
    if force:
        return {}
    states = {n.name: n.state for n in store.list_nodes()}
    return {
        t.name: f"{t.name} is golden (in service); pass --force to act on it anyway"
        for t in targets
        if states.get(t.name) == State.GOLDEN.value
    }


# -- discover -----------------------------------------------------------------------------


@click.command("discover")
@bmc_options
@click.option(
    "--accept-new-serial",
    is_flag=True,
    help="Re-key nodes whose serial changed (after checking the board swap) instead of flagging them.",
)
@click.pass_context
def discover_cmd(
    ctx: click.Context,
    rack: str,
    nodes: tuple[str, ...],
    concurrency: int,
    as_json: bool,
    accept_new_serial: bool,
    **kw: Any,
) -> None:
    """Walk every BMC of RACK: serial, model, firmware, MACs, event log; enrolled -> discovered."""
    options = _transport(kw)
    rack_name, targets, store = _prepare(ctx, rack, nodes)
    _warn_insecure(options)
    skipped = {n.name for n in store.list_nodes(rack=rack_name, state=State.RETIRED)}
    for name in sorted(skipped & {t.name for t in targets}):
        err_console.print(f"{name}: retired, not discovered", highlight=False)
    targets = [t for t in targets if t.name not in skipped]
    run = store.start_run(
        "discover",
        rack_name,
        params={"nodes": [t.name for t in targets], "concurrency": concurrency, **_tls_details(options)},
    )
    results: dict[str, str] = {}
    by_name = {t.name: t for t in targets}

    def save(outcome: Outcome[Discovery]) -> None:
        details = {**_tls_details(options), "bmc": by_name[outcome.name].host.bmc_address}
        if outcome.ok and outcome.value is not None:
            d = outcome.value
            results[outcome.name] = store.record_discovery(
                outcome.name,
                d.serial,
                macs=d.macs,
                hardware=d.hardware,
                owned_keys=HARDWARE_KEYS,
                accept_new_serial=accept_new_serial,
                run_id=run.id,
                details={**details, "vendor": d.vendor, "macs": d.macs},
            )
        else:
            assert outcome.error is not None
            store.record_event(
                outcome.name,
                "discovery-failed",
                str(outcome.error),
                run_id=run.id,
                details={**details, "error": outcome.error.kind},
            )

    tasks = [_task(t, lambda c, t=t: discover(c, t.rule), options) for t in targets]
    outcomes = _run("discover", tasks, concurrency, save)
    flagged = [n for n, r in results.items() if r in ("serial-changed", "serial-conflict")]
    failed = sum(not o.ok for o in outcomes) + len(flagged)
    store.finish_run(run.id, "ok" if not failed else ("failed" if failed == len(outcomes) else "partial"))

    rows = []
    for o in outcomes:
        d = o.value
        hw = d.hardware if d else {}
        rows.append(
            {
                "name": o.name,
                "ok": o.ok and o.name not in flagged,
                "result": results.get(o.name) if o.ok else "failed",
                "error": _error(o),
                "serial": d.serial if d else None,
                "vendor": d.vendor if d else None,
                "bmc": by_name[o.name].endpoint.url
                if by_name[o.name].endpoint
                else by_name[o.name].host.bmc_address,
                "model": (hw.get("system") or {}).get("model"),
                "power_state": hw.get("power_state"),
                "health_rollup": hw.get("health_rollup"),
                "macs": d.macs if d else [],
                "provisioning_nic": hw.get("provisioning_nic"),
                "event_log": hw.get("event_log"),
                "warnings": d.warnings if d else [],
                "seconds": round(o.seconds, 2),
                "hardware": hw or None,
            }
        )

    def render() -> None:
        out = table(
            f"rack {rack_name}: {len(rows) - failed} of {len(rows)} node(s) discovered",
            "node",
            "serial",
            "vendor / model",
            "power",
            "health",
            "MACs (provisioning)",
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
            prov = (r["provisioning_nic"] or {}).get("mac")
            macs = f"{len(r['macs'])} ({prov})" if prov else str(len(r["macs"]))
            result = (
                r["result"]
                if r["error"] is None
                else f"[red]{r['error']['kind']}[/red]: {r['error']['message']}"
            )
            if r["result"] in ("serial-changed", "serial-conflict"):
                result = f"[red]{r['result']}[/red]: see `bringup nodes show {r['name']}`"
            elif r["warnings"]:
                result += f" ({len(r['warnings'])} warning(s))"
            out.add_row(
                r["name"],
                r["serial"] or "-",
                f"{r['vendor'] or '-'} / {r['model'] or '-'}",
                r["power_state"] or "-",
                r["health_rollup"] or "-",
                macs,
                str(len(hw["firmware"])) if "firmware" in hw else "-",
                sel,
                result,
            )
        console.print(out)

    _emit(as_json, rows, render)
    _exit(failed)


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
    concurrency: int,
    as_json: bool,
    force: bool,
    dry_run: bool,
    graceful_timeout: float,
    timeout: float,
    poll: float,
    **kw: Any,
) -> None:
    """Power nodes on, off (graceful, then forced) or cycle them; or show their power state."""
    options = _transport(kw)
    popts = PowerOptions(graceful_timeout=graceful_timeout, timeout=timeout, poll=poll)
    rack_name, targets, store = _prepare(ctx, rack, nodes)
    refused = _refuse_golden(store, targets, force) if action != "status" else {}
    if dry_run:
        _plan(f"power {action}", targets, refused, as_json)
        return
    _warn_insecure(options)

    def work(client: RedfishClient) -> Any:
        return PowerControl(locate(client), popts).run(action)

    tasks = [
        _refused_task(t, refused[t.name]) if t.name in refused else _task(t, work, options) for t in targets
    ]

    def save(outcome: Outcome[Any]) -> None:
        if action == "status" or outcome.name in refused:
            return
        details = {**_tls_details(options), "forced": force}
        if outcome.ok:
            r = outcome.value
            store.record_event(
                outcome.name,
                "power",
                f"power {action}: {r.before} -> {r.after}",
                details={**details, **r.record()},
            )
        else:
            store.record_event(
                outcome.name,
                "power-failed",
                f"power {action}: {outcome.error}",
                details={**details, "error": outcome.error.kind},
            )

    outcomes = _run(f"power {action}", tasks, concurrency, save)
    rows = [
        {
            "name": o.name,
            "ok": o.ok,
            "error": _error(o),
            **(
                o.value.record()
                if o.value
                else {"action": action, "before": None, "after": None, "steps": []}
            ),
        }
        for o in outcomes
    ]
    failed = sum(not o.ok for o in outcomes)

    def render() -> None:
        out = table(f"rack {rack_name}: power {action}", "node", "before", "after", "steps / error", "s")
        for r in rows:
            what = (
                "; ".join(r["steps"])
                if r["ok"]
                else f"[red]{r['error']['kind']}[/red]: {r['error']['message']}"
            )
            out.add_row(
                r["name"], r["before"] or "-", r["after"] or "-", what or "-", str(r.get("seconds", ""))
            )
        console.print(out)

    _emit(as_json, rows, render)
    _exit(failed)


def _refused_task(target: Target, why: str) -> Task[Any]:
    def refuse() -> Any:
        raise Refused(why)

    return Task(target.name, refuse)


def _plan(what: str, targets: list[Target], refused: dict[str, str], as_json: bool) -> None:
    rows = [
        {
            "name": t.name,
            "bmc": t.endpoint.url if t.endpoint else t.host.bmc_address,
            "would": "refuse: " + refused[t.name]
            if t.name in refused
            else (t.problem and f"fail: {t.problem}") or what,
        }
        for t in targets
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    out = table(f"dry run: {what}", "node", "bmc", "would")
    for r in rows:
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
    concurrency: int,
    as_json: bool,
    iso: str | None,
    reset: bool | None,
    mode: str | None,
    force: bool,
    dry_run: bool,
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
    options = _transport(kw)
    reset = (what == "cd") if reset is None else reset
    popts = PowerOptions(graceful_timeout=0, timeout=timeout, poll=poll)
    rack_name, targets, store = _prepare(ctx, rack, nodes)
    refused = _refuse_golden(store, targets, force) if what != "eject" else {}
    if dry_run:
        _plan(
            f"boot {what}" + (" and restart" if reset and what != "eject" else ""), targets, refused, as_json
        )
        return
    _warn_insecure(options)
    modes = {t.name: mode or t.boot_mode for t in targets}

    def work_for(target: Target) -> Callable[[RedfishClient], Any]:
        def work(client: RedfishClient) -> dict[str, Any]:
            bctx = locate(client)
            if what == "eject":
                return {"media": vmedia.eject(bctx).record()}
            out: dict[str, Any] = {}
            if what == "cd":
                out["media"] = vmedia.insert(bctx, iso or "").record()
            out["boot"] = set_boot_once(bctx, "Pxe" if what == "pxe" else "Cd", modes[target.name]).record()
            if reset:
                out["power"] = PowerControl(bctx, popts).restart().record()
            return out

        return work

    tasks = [
        _refused_task(t, refused[t.name]) if t.name in refused else _task(t, work_for(t), options)
        for t in targets
    ]

    def save(outcome: Outcome[Any]) -> None:
        if outcome.name in refused:
            return
        details = {**_tls_details(options), "forced": force, "iso": iso}
        if outcome.ok:
            store.record_event(
                outcome.name,
                "boot",
                f"boot {what}: {_boot_summary(outcome.value)}",
                details={**details, **outcome.value},
            )
        else:
            store.record_event(
                outcome.name,
                "boot-failed",
                f"boot {what}: {outcome.error}",
                details={**details, "error": outcome.error.kind},
            )

    outcomes = _run(f"boot {what}", tasks, concurrency, save)
    rows = [{"name": o.name, "ok": o.ok, "error": _error(o), **(o.value or {})} for o in outcomes]
    failed = sum(not o.ok for o in outcomes)

    def render() -> None:
        out = table(f"rack {rack_name}: boot {what}", "node", "result", "notes")
        for r in rows:
            if not r["ok"]:
                out.add_row(r["name"], f"[red]{r['error']['kind']}[/red]", r["error"]["message"])
                continue
            notes = r["boot"]["warnings"] if "boot" in r else []
            out.add_row(r["name"], _boot_summary(r), "; ".join(notes) or "-")
        console.print(out)

    _emit(as_json, rows, render)
    _exit(failed)


def _boot_summary(r: dict[str, Any]) -> str:
    parts = []
    if "media" in r:
        m = r["media"]
        parts.append(f"media inserted: {m['image']}" if m["inserted"] else "media ejected")
    if "boot" in r:
        b = r["boot"]
        parts.append(
            f"{b['target']} {b['enabled']} ({b['mode']}) verified" + (", pending" if b["pending"] else "")
        )
    if "power" in r:
        parts.append(f"power {r['power']['before']} -> {r['power']['after']}")
    return "; ".join(parts)


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
def bmc_jobs(
    ctx: click.Context,
    rack: str,
    nodes: tuple[str, ...],
    concurrency: int,
    as_json: bool,
    clear: bool,
    **kw: Any,
) -> None:
    """List each BMC's job queue and readiness; clear the queue only when asked (--clear)."""
    options = _transport(kw)
    rack_name, targets, store = _prepare(ctx, rack, nodes)
    _warn_insecure(options)

    def work(client: RedfishClient) -> dict[str, Any]:
        bctx = locate(client)
        out: dict[str, Any] = {"vendor": bctx.vendor.name}
        if clear:
            out["cleared"] = bctx.vendor.clear_jobs(bctx)
        out["jobs"] = bctx.vendor.jobs(bctx)
        out["readiness"] = bctx.vendor.readiness(bctx)
        return out

    def save(outcome: Outcome[Any]) -> None:
        if clear and outcome.ok:
            store.record_event(
                outcome.name,
                "jobs-cleared",
                f"job queue cleared: {outcome.value['cleared']}",
                details=_tls_details(options),
            )

    outcomes = _run("bmc jobs", [_task(t, work, options) for t in targets], concurrency, save)
    rows = [{"name": o.name, "ok": o.ok, "error": _error(o), **(o.value or {})} for o in outcomes]
    failed = sum(not o.ok for o in outcomes)

    def render() -> None:
        out = table(f"rack {rack_name}: BMC job queues", "node", "ready", "pending jobs", "other jobs")
        for r in rows:
            if not r["ok"]:
                out.add_row(r["name"], "-", f"[red]{r['error']['kind']}[/red]: {r['error']['message']}", "-")
                continue
            pending = [j for j in r["jobs"] if is_pending(j)]
            ready = r["readiness"]
            out.add_row(
                r["name"],
                f"{'yes' if ready['ready'] else 'NO'} (LC {ready['lc_status']}, server {ready['server_status']})",
                "\n".join(f"{j['id']} {j['type'] or j['name']} {j['state']}" for j in pending) or "none",
                str(len(r["jobs"]) - len(pending)),
            )
        console.print(out)

    _emit(as_json, rows, render)
    _exit(failed)


COMMANDS = (discover_cmd, power_cmd, boot_cmd, bmc_group)
