"""`bringup provision`: take a rack's discovered nodes to provisioned (built-in PXE or MAAS).

    bringup provision --rack r01 [--nodes a,b] [--batch 32] [--dry-run] [--force] [--json]
                      [--dhcp-timeout S] [--dhcp-retries N]

Bad input (an undiscovered node, a missing provisioning MAC, a boot server that cannot bind
its port, another DHCP server on the wire) is one clear line each on stderr and exit 1 before
any node is touched. Progress goes to stderr, the result table (or ``--json``) to stdout; the
exit status is 1 when any selected node is not provisioned at the end.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from typing import Any

import click

from bringup.clikit import inventory_dir_from, store_from
from bringup.provision.orchestrator import (
    DEFAULT_BATCH,
    PROVISION,
    RESUME,
    NodePlan,
    NodeResult,
    Orchestrator,
    backend_name,
    make_backend,
    rack_vars,
    select,
)
from bringup.redfish.endpoint import TransportOptions
from bringup.redfish.targets import load_targets, split_nodes
from bringup.ui import console, err_console, table


def _override(plan: NodePlan, overrides: dict[str, Any]) -> NodePlan:
    if plan.target is None or not overrides:
        return plan
    target = dataclasses.replace(plan.target, hostvars={**plan.target.hostvars, **overrides})
    return dataclasses.replace(plan, target=target)


def _row(plan: NodePlan, result: NodeResult | None, would: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": plan.name,
        "key": plan.target.key if plan.target else None,
        "state_before": plan.state,
        "action": plan.action,
    }
    if result is not None:
        row.update(
            state=result.after,
            ok=result.ok,
            reason=result.reason,
            ip=result.ip,
            seconds=result.seconds,
            findings=result.findings,
            notes=result.notes,
        )
    else:
        row.update(state=plan.state, ok=not plan.counts_as_failed, reason=plan.reason, ip=plan.ip)
        if would is not None:
            row["would"] = would
    return row


@click.command("provision")
@click.option("--rack", required=True, help="Rack name (inventories/<rack>.yml) or inventory path.")
@click.option("--nodes", multiple=True, help="Only these hosts (comma-separated or repeated).")
@click.option(
    "--batch",
    type=click.IntRange(1, 4096),
    default=DEFAULT_BATCH,
    show_default=True,
    help="Nodes provisioned at once (the mirror is not saturated).",
)
@click.option(
    "--dry-run", is_flag=True, help="Print the plan and change nothing (no power action, no server)."
)
@click.option("--force", is_flag=True, help="Re-image nodes already provisioned or beyond, golden ones too.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable result on stdout.")
@click.option(
    "--dhcp-timeout", type=float, default=None, help="PXE watchdog: seconds to wait for DHCP (overrides)."
)
@click.option(
    "--dhcp-retries", type=click.IntRange(0, 20), default=None, help="PXE watchdog: power-cycles more."
)
@click.option("--insecure", is_flag=True, help="Do not verify BMC TLS certificates.")
@click.option("--ca-bundle", type=click.Path(exists=True, dir_okay=False), default=None, help="CA for BMCs.")
@click.option("--connect-timeout", type=float, default=5.0, show_default=True, help="BMC seconds.")
@click.option("--read-timeout", type=float, default=30.0, show_default=True, help="BMC seconds.")
@click.pass_context
def provision_cmd(
    ctx: click.Context,
    rack: str,
    nodes: tuple[str, ...],
    batch: int,
    dry_run: bool,
    force: bool,
    as_json: bool,
    dhcp_timeout: float | None,
    dhcp_retries: int | None,
    insecure: bool,
    ca_bundle: str | None,
    connect_timeout: float,
    read_timeout: float,
) -> None:
    """Take the rack's discovered nodes to provisioned: OS on the right disk (or, in agent mode,
    the node's own inventory reported), IP and hostname recorded."""
    inventory_dir = inventory_dir_from(ctx)
    only = split_nodes(nodes)
    loaded, targets = load_targets(rack, inventory_dir, only or None)
    store = store_from(ctx)
    records = {n.name: n for n in store.list_nodes(rack=loaded.name)}
    selection = select(loaded, records, {t.name: t for t in targets}, only, force)
    overrides: dict[str, Any] = {}
    if dhcp_timeout is not None:
        overrides["pxe_dhcp_timeout"] = dhcp_timeout
    if dhcp_retries is not None:
        overrides["pxe_dhcp_retries"] = dhcp_retries
    plans = [_override(p, overrides) for p in selection.plans]
    vars_, var_problems = rack_vars(loaded.hosts)
    problems = selection.problems + var_problems
    name = backend_name(vars_)
    transport = TransportOptions(
        connect_timeout=connect_timeout, read_timeout=read_timeout, ca_bundle=ca_bundle, insecure=insecure
    )
    work = [p.target for p in plans if p.action in (PROVISION, RESUME) and p.target is not None]

    if dry_run:
        backend = make_backend(name, loaded.name, vars_, inventory_dir, transport)
        try:
            lines = dict(zip([t.name for t in work], backend.plan(work), strict=False))
        finally:
            backend.close()
        rows = [_row(p, None, lines.get(p.name, p.reason)) for p in plans]
        _emit_plan(loaded.name, name, rows, problems, as_json)
        sys.exit(1 if problems else 0)

    if problems:
        _stop(problems, "nothing was touched")
    if not work:
        rows = [_row(p, None) for p in plans]
        _emit(loaded.name, None, rows, as_json, "nothing to do")
        sys.exit(1 if any(not r["ok"] for r in rows) else 0)

    backend = make_backend(name, loaded.name, vars_, inventory_dir, transport)
    t0 = time.monotonic()

    def progress(node: str, line: str) -> None:
        err_console.print(f"{time.monotonic() - t0:7.1f}s {node}: {line}", highlight=False, markup=False)

    def on_result(r: NodeResult) -> None:
        verdict = "provisioned" if r.ok else f"FAILED: {r.reason}"
        err_console.print(f"{time.monotonic() - t0:7.1f}s {r.name}: {verdict}", highlight=False, markup=False)

    try:
        found = backend.preflight(work)
        if found:
            _stop(found, "no node was touched")
        for line in getattr(backend, "checked", []):
            progress("preflight", line)
        orch = Orchestrator(
            store, backend, rack=loaded.name, batch_size=batch, on_progress=progress, on_result=on_result
        )
        try:
            results = orch.run(
                work,
                {"nodes": [t.name for t in work], "batch": batch, "force": force, "overrides": overrides},
            )
        except KeyboardInterrupt:
            err_console.print(
                "interrupted: nodes of the current batch stay in provisioning; run the same command to resume"
            )
            sys.exit(130)
    finally:
        backend.close()
    by_name = {r.name: r for r in results}
    rows = [_row(p, by_name.get(p.name)) for p in plans]
    _emit(loaded.name, orch.run_id, rows, as_json, f"{time.monotonic() - t0:.0f} s")
    sys.exit(1 if any(not r["ok"] for r in rows) else 0)


def _stop(problems: list[str], what: str) -> None:
    for p in problems:
        err_console.print(f"[red]error:[/red] {p}", highlight=False, soft_wrap=True)
    err_console.print(f"{len(problems)} problem(s); {what}", highlight=False)
    sys.exit(1)


def _emit_plan(
    rack: str, backend: str, rows: list[dict[str, Any]], problems: list[str], as_json: bool
) -> None:
    if as_json:
        click.echo(
            json.dumps(
                {"rack": rack, "backend": backend, "dry_run": True, "nodes": rows, "problems": problems},
                indent=2,
            )
        )
        return
    out = table(f"dry run: provision rack {rack} ({backend})", "node", "state", "action", "would")
    for r in rows:
        out.add_row(r["name"], r["state_before"], r["action"], r.get("would") or r["reason"])
    console.print(out)
    for p in problems:
        err_console.print(f"[red]would stop:[/red] {p}", highlight=False, soft_wrap=True)


def _emit(rack: str, run_id: int | None, rows: list[dict[str, Any]], as_json: bool, took: str) -> None:
    if as_json:
        click.echo(json.dumps({"rack": rack, "run": run_id, "nodes": rows}, indent=2, default=str))
        return
    done = sum(r["ok"] for r in rows)
    out = table(
        f"rack {rack}: {done} of {len(rows)} node(s) OK ({took})", "node", "state", "ip", "s", "result"
    )
    for r in rows:
        state = r["state"] if r["state"] == r["state_before"] else f"{r['state_before']} -> {r['state']}"
        reason = r["reason"] if r["ok"] else f"[red]{r['reason']}[/red]"
        out.add_row(r["name"], state, r.get("ip") or "-", str(r.get("seconds", "-")), reason)
    console.print(out)


COMMANDS = (provision_cmd,)
