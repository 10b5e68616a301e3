"""`bringup provision`: take a rack's discovered nodes to provisioned (built-in PXE or MAAS).

    bringup provision --rack r01 [--nodes a,b] [--batch 32] [--dry-run] [--force] [--json]
                      [--dhcp-timeout S] [--dhcp-retries N]

Bad input (an undiscovered node, a missing provisioning MAC, a boot server that cannot bind
its port, another DHCP server on the wire) is one clear line each on stderr and exit 1 before
any node is touched. Progress goes to stderr, the result table (or ``--json``) to stdout; the
exit status is 1 when any selected node is not provisioned at the end.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from bringup.cli.common import inventory_dir_from, store_from
from bringup.cli.ui import console, err_console, table
from bringup.provision.orchestrator import DEFAULT_BATCH, ProvisionResult
from bringup.provision.rack import ProvisionReport, ProvisionRequest, provision_rack
from bringup.redfish.endpoint import TransportOptions


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
@click.option(
    "--allow-http", is_flag=True, help="Allow plain-HTTP BMC addresses (the password crosses in cleartext)."
)
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
    allow_http: bool,
    connect_timeout: float,
    read_timeout: float,
) -> None:
    """Take the rack's discovered nodes to provisioned: OS on the right disk (or, in agent mode,
    the node's own inventory reported), IP and hostname recorded."""
    overrides: dict[str, Any] = {}
    if dhcp_timeout is not None:
        overrides["pxe_dhcp_timeout"] = dhcp_timeout
    if dhcp_retries is not None:
        overrides["pxe_dhcp_retries"] = dhcp_retries
    transport = TransportOptions(
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        ca_bundle=ca_bundle,
        insecure=insecure,
        allow_http=allow_http,
    )
    req = ProvisionRequest(rack, inventory_dir_from(ctx), nodes, batch, dry_run, force, overrides, transport)
    t0 = time.monotonic()

    def progress(node: str, line: str) -> None:
        err_console.print(f"{time.monotonic() - t0:7.1f}s {node}: {line}", highlight=False, markup=False)

    def on_result(r: ProvisionResult) -> None:
        verdict = "provisioned" if r.ok else f"FAILED: {r.reason}"
        err_console.print(f"{time.monotonic() - t0:7.1f}s {r.name}: {verdict}", highlight=False, markup=False)

    try:
        report = provision_rack(store_from(ctx), req, on_progress=progress, on_result=on_result)
    except KeyboardInterrupt:
        err_console.print(
            "interrupted: nodes of the current batch stay in provisioning; run the same command to resume"
        )
        sys.exit(130)
    for warning in report.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False, soft_wrap=True)
    if report.dry_run:
        _emit_plan(report, as_json)
    elif report.stopped:
        _stop(report.problems, report.stopped)
    else:
        took = "nothing to do" if report.seconds is None else f"{report.seconds:.0f} s"
        _emit(report, as_json, took)
    sys.exit(0 if report.ok else 1)


def _stop(problems: list[str], what: str) -> None:
    for p in problems:
        err_console.print(f"[red]error:[/red] {p}", highlight=False, soft_wrap=True)
    err_console.print(f"{len(problems)} problem(s); {what}", highlight=False)
    sys.exit(1)


def _emit_plan(report: ProvisionReport, as_json: bool) -> None:
    rack, backend, rows, problems = report.rack, report.backend, report.rows, report.problems
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


def _emit(report: ProvisionReport, as_json: bool, took: str) -> None:
    rack, run_id, rows = report.rack, report.run_id, report.rows
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
