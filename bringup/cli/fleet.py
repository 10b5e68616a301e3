"""`bringup inventory` and `bringup nodes`: validate and enroll racks; list, show, repair and
retire the fleet store's nodes."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from rich.markup import escape

from bringup.cli.common import FriendlyGroup, inventory_dir_from, store_from
from bringup.cli.ui import console, table
from bringup.fleet.enroll import enroll_hosts
from bringup.fleet.lifecycle import State
from bringup.fleet.models import Node
from bringup.inventory.rack import load_rack
from bringup.profiles.suggest import report, shipped_profiles

# -- inventory ----------------------------------------------------------------------------


@click.group(cls=FriendlyGroup)
def inventory() -> None:
    """Validate rack inventories and enroll their nodes."""


@inventory.command("check")
@click.argument("rack")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def inventory_check(ctx: click.Context, rack: str, as_json: bool) -> None:
    """Validate RACK (a name in the inventory dir, or a path) and its hardware profiles."""
    loaded, problems = load_rack(rack, inventory_dir_from(ctx))
    errors = [p for p in problems if not p.warning]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "rack": rack,
                    "ok": not errors,
                    "hosts": [h.name for h in loaded.hosts] if loaded else [],
                    "problems": [
                        {
                            "file": p.file,
                            "host": p.host,
                            "field": p.field,
                            "message": p.message,
                            "severity": "warning" if p.warning else "error",
                        }
                        for p in problems
                    ],
                },
                indent=2,
            )
        )
    else:
        for p in problems:
            click.echo(str(p), err=True)
        if loaded is not None:
            profiles = ", ".join(sorted(loaded.profiles))
            click.echo(
                f"{loaded.path}: rack {loaded.name} OK: {len(loaded.hosts)} host(s), profile(s) {profiles}"
            )
        else:
            click.echo(f"{len(errors)} error(s) in rack {rack}", err=True)
    sys.exit(1 if errors else 0)


@inventory.command("enroll")
@click.argument("rack")
@click.pass_context
def inventory_enroll(ctx: click.Context, rack: str) -> None:
    """Enroll every host of RACK in the fleet store (idempotent: refreshes existing nodes)."""
    loaded, problems = load_rack(rack, inventory_dir_from(ctx))
    for p in problems:
        click.echo(str(p), err=True)
    if loaded is None:
        click.echo(f"rack {rack} is not valid; nothing enrolled", err=True)
        sys.exit(1)
    done = enroll_hosts(store_from(ctx), loaded.name, loaded.hosts)
    click.echo(f"rack {done.rack}: {len(done.new)} node(s) enrolled, {len(done.known)} already known")
    if done.gone:
        click.echo(
            f"in the store but no longer in the inventory: {', '.join(done.gone)} (retire them if they left)"
        )


# -- nodes --------------------------------------------------------------------------------


def node_record(node: Node) -> dict[str, Any]:
    return {
        "name": node.name,
        "serial": node.serial,
        "rack": node.rack,
        "rack_unit": node.rack_unit,
        "profile": node.profile,
        "state": node.state,
        "bmc_address": node.bmc_address,
        "bmc_vendor": node.bmc_vendor,
        "hostname": node.hostname,
        "ip": node.ip,
        "macs": node.macs,
        "hardware": node.hardware,
        "updated_at": node.updated_at.isoformat() if node.updated_at else None,
    }


@click.group(cls=FriendlyGroup)
def nodes() -> None:
    """List and inspect nodes; mark them repaired or retire them."""


@nodes.command("list")
@click.option("--rack", default=None, help="Only this rack.")
@click.option(
    "--state", type=click.Choice([s.value for s in State]), default=None, help="Only nodes in this state."
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def nodes_list(ctx: click.Context, rack: str | None, state: str | None, as_json: bool) -> None:
    """List nodes of the fleet store."""
    found = store_from(ctx).list_nodes(rack=rack, state=state)
    if as_json:
        click.echo(json.dumps([node_record(n) for n in found], indent=2))
        return
    out = table(f"{len(found)} node(s)", "name", "serial", "rack", "U", "state", "profile", "bmc", "ip")
    for n in found:
        out.add_row(
            n.name,
            n.serial or "-",
            n.rack,
            str(n.rack_unit or "-"),
            n.state,
            n.profile,
            n.bmc_address or "-",
            n.ip or "-",
        )
    console.print(out)


@nodes.command("show")
@click.argument("node")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def nodes_show(ctx: click.Context, node: str, as_json: bool) -> None:
    """Show NODE (name or serial): its record, its history and its latest results."""
    store = store_from(ctx)
    record = node_record(store.get_node(node))
    history = store.history(node)
    results = store.latest_results(node)
    shipped = shipped_profiles(inventory_dir_from(ctx) / "profiles")
    from_bmc = report(record["name"], record.get("hardware") or {}, record["profile"], shipped)
    if as_json:
        record["profile_from_bmc"] = from_bmc
        record["history"] = [_event(e) for e in history]
        record["results"] = [r.as_dict() for r in results]
        click.echo(json.dumps(record, indent=2))
        return
    for key, value in record.items():
        if value not in (None, [], {}):
            console.print(f"[bold]{key}[/bold]: {value}", highlight=False)
    console.print(f"[bold]profile from the BMC[/bold]: {escape(from_bmc['line'])}", highlight=False)
    _print_devices(record.get("hardware") or {})
    out = table("history", "time", "event", "reason", "actor")
    for e in history:
        what = f"{e.from_state or '-'} -> {e.to_state}" if e.kind == "transition" else e.kind
        out.add_row(e.time.strftime("%Y-%m-%d %H:%M:%S"), what, e.reason, e.actor)
    console.print(out)
    if results:
        rt = table("latest results", "stage", "check", "verdict", "findings", "time")
        for r in results:
            rt.add_row(r.stage, r.check, r.verdict, str(len(r.findings)), r.time.strftime("%Y-%m-%d %H:%M"))
        console.print(rt)
    else:
        console.print("no check results yet")


@nodes.command("history")
@click.argument("node")
@click.option(
    "--kind", default=None, help="Only events of this kind (transition, acceptance, burnin, nightly...)."
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def nodes_history(ctx: click.Context, node: str, kind: str | None, as_json: bool) -> None:
    """NODE's events (name or serial), oldest first: its moves, burn-ins, acceptance decisions."""
    events = [e for e in store_from(ctx).history(node) if kind is None or e.kind == kind]
    if as_json:
        click.echo(json.dumps([_event(e) for e in events], indent=2))
        return
    out = table(f"history of {node}", "time", "event", "reason", "actor", "run")
    for e in events:
        what = f"{e.from_state or '-'} -> {e.to_state}" if e.kind == "transition" else e.kind
        out.add_row(e.time.strftime("%Y-%m-%d %H:%M:%S"), what, e.reason, e.actor, str(e.run_id or "-"))
    console.print(out)


def _event(e: Any) -> dict[str, Any]:
    return {
        "time": e.time.isoformat(),
        "kind": e.kind,
        "from": e.from_state,
        "to": e.to_state,
        "reason": e.reason,
        "actor": e.actor,
        "run": e.run_id,
        "details": e.details,
    }


def _print_devices(hardware: dict[str, Any]) -> None:
    """The GPUs and PCIe devices discovery read from the BMC (docs/redfish.md), one table each."""
    gpus = hardware.get("gpus")
    if isinstance(gpus, list):
        gt = table(
            f"GPUs ({len(gpus)}, from the BMC)", "slot", "model", "serial", "uuid", "firmware", "health"
        )
        for g in gpus:
            health = "/".join(str(v) for v in (g.get("health"), g.get("state")) if v) or "-"
            gt.add_row(
                str(g.get("slot") or "-"),
                str(g.get("model") or "-"),
                str(g.get("serial") or "-"),
                str(g.get("uuid") or "-"),
                str(g.get("firmware") or "-"),
                health,
            )
        console.print(gt)
    pcie = hardware.get("pcie_devices")
    if isinstance(pcie, list):
        pt = table(
            f"PCIe devices ({len(pcie)}, from the BMC)",
            "slot",
            "name",
            "class",
            "vendor:device",
            "link",
            "firmware",
        )
        for d in pcie:
            ids = ":".join(str(d.get(k) or "?") for k in ("vendor_id", "device_id"))
            width, speed = d.get("link_width"), d.get("link_speed")
            link_text = " ".join(t for t in (f"x{width}" if width else "", speed or "") if t) or "-"
            pt.add_row(
                str(d.get("slot") or "-"),
                str(d.get("name") or "-"),
                str(d.get("class") or "-"),
                ids,
                link_text,
                str(d.get("firmware") or "-"),
            )
        console.print(pt)


@nodes.command("mark-repaired")
@click.argument("node")
@click.option("--reason", required=True, help="What was repaired (ticket, part swapped).")
@click.pass_context
def nodes_mark_repaired(ctx: click.Context, node: str, reason: str) -> None:
    """Move a failed NODE to repair, so the nightly run burns it in again."""
    store_from(ctx).transition(node, State.REPAIR, reason)
    click.echo(f"{node}: failed -> repair ({reason})")


@nodes.command("retire")
@click.argument("node")
@click.option("--reason", required=True, help="Why the node leaves the fleet.")
@click.pass_context
def nodes_retire(ctx: click.Context, node: str, reason: str) -> None:
    """Retire NODE from any state; a retired node is never golden again."""
    ev = store_from(ctx).transition(node, State.RETIRED, reason)
    click.echo(f"{node}: {ev.from_state} -> retired ({reason})")
