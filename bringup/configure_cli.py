"""`bringup configure`: run playbooks/site.yml on a rack's provisioned nodes, record the outcome."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from bringup.clikit import inventory_dir_from, store_from
from bringup.configure.inventory import build_inventory, host_vars
from bringup.configure.outcome import HostOutcome
from bringup.configure.record import NodeResult, record_outcome, refusal
from bringup.configure.runner import DEFAULT_BATCH, PlaybookResult, run_playbook
from bringup.fleet.store import NodeNotFound
from bringup.inventory import load_rack
from bringup.ui import console, err_console, node_progress, table

ROLES = (
    "base",
    "nvidia_driver",
    "fabric_manager",
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
    "skipped": "yellow",
}
BAD = ("failed", "unreachable", "not-run")


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
    rack_obj, problems = load_rack(rack, inventory_dir_from(ctx))
    if rack_obj is None:
        raise click.UsageError("the inventory has errors:\n" + "\n".join(str(p) for p in problems))
    names = _split(only)
    missing = sorted(set(names) - {h.name for h in rack_obj.hosts})
    if missing:
        raise click.UsageError(f"not in rack {rack_obj.name}: {', '.join(missing)}")
    wanted = [h for h in rack_obj.hosts if not names or h.name in names]

    store = store_from(ctx)
    targets, results = [], []
    for host in wanted:
        try:
            node = store.get_node(host.name)
        except NodeNotFound:
            results.append(NodeResult(host.name, "skipped", "-", message="not in the fleet store: enroll it"))
            continue
        why = refusal(node.state, force)
        if why:
            results.append(NodeResult(host.name, "skipped", node.state, message=why))
        else:
            targets.append((host, node))
    if not targets:
        _print_summary(results, as_json)
        raise click.UsageError(f"no node of rack {rack_obj.name} can be configured")

    inventory = build_inventory(
        rack_obj.name,
        {
            h.name: host_vars(h.name, h.vars, rack_obj.path.parent, rack_obj.profiles[h.profile], n.ip)
            for h, n in targets
        },
    )
    params = {"nodes": [h.name for h, _ in targets], "tags": tag_list, "check": check, "batch": batch}
    run = store.start_run("configure", rack_obj.name, params)
    try:
        result = _run_with_progress(inventory, [h.name for h, _ in targets], tag_list, check, batch, as_json)
    except BaseException:
        store.finish_run(run.id, "error")
        raise
    if result.rc != 0 and not any(o.status in ("failed", "unreachable") for o in result.outcomes.values()):
        # ansible-playbook failed and no host says why (a syntax error, a missing role...).
        store.finish_run(run.id, "error", evidence=result.stdout)
        tail = "\n".join(result.stdout.splitlines()[-15:])
        raise click.ClickException(f"ansible-playbook failed (rc={result.rc}, {result.status}):\n{tail}")
    for host, _ in targets:
        node = store.get_node(host.name)  # fresh: the run took a while
        outcome = result.outcomes[host.name]
        results.append(record_outcome(store, node, outcome, run.id, check=check, full=not tag_list))
    bad = [r for r in results if r.result in BAD]
    store.finish_run(run.id, "failed" if bad else "done", evidence=result.stdout)
    _print_summary(results, as_json, run.id)
    sys.exit(1 if bad else 0)


def _run_with_progress(
    inventory: dict[str, Any], hosts: list[str], tags: list[str], check: bool, batch: int, as_json: bool
) -> PlaybookResult:
    progress = node_progress()
    verb = "check" if check else "configure"
    bar = progress.add_task(f"{verb}: starting", total=len(hosts))
    finished: set[str] = set()
    plain = not err_console.is_terminal and not as_json

    def on_event(outcome: HostOutcome) -> None:
        progress.update(bar, description=f"{verb}: {outcome.name} {outcome.last_task}"[:100])
        if outcome.done and outcome.name not in finished:
            finished.add(outcome.name)
            progress.advance(bar)
            if plain:
                err_console.print(f"  {outcome.name}: {_line(outcome)}", highlight=False, soft_wrap=True)

    with progress:
        result = run_playbook(inventory, hosts, tags=tags, check=check, batch=batch, on_event=on_event)
        progress.update(bar, description=f"{verb}: done", completed=len(hosts))
    return result


def _line(o: HostOutcome) -> str:
    if o.status == "ok":
        return f"ok, {o.changed} changed ({', '.join(o.changed_roles) or 'nothing'})"
    return f"{o.status.upper()} in {o.role}/{o.task}: {o.message}"


def _print_summary(results: list[NodeResult], as_json: bool, run_id: int | None = None) -> None:
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
