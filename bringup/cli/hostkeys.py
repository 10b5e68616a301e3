"""`bringup hostkeys scan|forget`: the SSH host keys configure and burn-in pin (library:
bringup/ssh/hostkey_records.py).

    bringup hostkeys scan --rack r01 [--nodes a,b] [--json]   record what nodes with none show
    bringup hostkeys forget NODE                              drop a node's recorded keys
"""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from bringup.cli.common import FriendlyGroup, inventory_dir_from, store_from
from bringup.fleet.select import split_nodes
from bringup.ssh.hostkey_records import forget, scan_rack


@click.group("hostkeys", cls=FriendlyGroup)
def hostkeys_group() -> None:
    """The SSH host keys each node must show (recorded when it is provisioned)."""


@hostkeys_group.command("scan")
@click.option("--rack", required=True, help="The rack (inventories/<rack>.yml).")
@click.option("--nodes", "nodes", multiple=True, help="Only these nodes (a,b or repeated).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def scan_cmd(ctx: click.Context, rack: str, nodes: tuple[str, ...], as_json: bool) -> None:
    """Record the host keys that nodes with none recorded show now (trust on first use).

    For nodes bringup did not install (MAAS, by hand). Each recording is an event naming you.
    A node whose recorded keys differ from what it shows is refused, never re-recorded:
    `bringup hostkeys forget NODE` first, once you know why. Exit 1 if any node was refused or
    unreachable."""
    rows = scan_rack(store_from(ctx), rack, inventory_dir_from(ctx), split_nodes(nodes))
    if as_json:
        click.echo(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        for r in rows:
            click.echo(f"{r.name}\t{r.address}\t{r.status}\t{r.line}")
    if any(r.status in ("refused", "unreachable") for r in rows):
        ctx.exit(1)


@hostkeys_group.command("forget")
@click.argument("node")
@click.pass_context
def forget_cmd(ctx: click.Context, node: str) -> None:
    """Drop NODE's recorded host keys (re-imaged outside bringup). SSH to it is refused until
    they are recorded again: provision it, or `bringup hostkeys scan`."""
    click.echo(f"{node}: {forget(store_from(ctx), node)}")
