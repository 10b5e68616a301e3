"""What the `bringup` and `burnin` command lines share: one-line errors, the store and the
inventory directory from the global options."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from bringup.credentials import CredentialError
from bringup.fleet.lifecycle import IllegalTransition
from bringup.fleet.store import FleetStore, StoreError
from bringup.inventory import default_inventory_dir
from bringup.lab.bmc import BmcError
from bringup.lab.network import LabError
from bringup.redfish.errors import RedfishError
from bringup.ui import err_console

# Errors a user can act on: one clear line, exit 1, never a traceback.
USER_ERRORS = (
    StoreError,
    IllegalTransition,
    CredentialError,
    LabError,
    BmcError,
    RedfishError,
    ValueError,
    OSError,
)


class FriendlyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except USER_ERRORS as exc:
            err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
            sys.exit(1)


def global_options(func: Any) -> Any:
    """--db and --inventory-dir, the options every command line of the project takes."""
    func = click.option(
        "--inventory-dir",
        envvar="BRINGUP_INVENTORY_DIR",
        type=click.Path(path_type=Path),
        default=None,
        help="Where rack inventories live (default: ./inventories).",
    )(func)
    return click.option(
        "--db",
        envvar="BRINGUP_DB",
        default=None,
        metavar="PATH|URL",
        help="Fleet store: a SQLite file path or an SQLAlchemy URL (postgresql://...). "
        "Default: $BRINGUP_DB, else ~/.local/share/bringup/fleet.db.",
    )(func)


def set_global_options(ctx: click.Context, db: str | None, inventory_dir: Path | None) -> None:
    ctx.ensure_object(dict)
    ctx.obj.update(db=db, inventory_dir=inventory_dir or default_inventory_dir())


def store_from(ctx: click.Context) -> FleetStore:
    """The fleet store named by the root command's --db, opened once per invocation."""
    obj = ctx.find_root().obj
    if "store" not in obj:
        obj["store"] = FleetStore.open(obj["db"])
    return obj["store"]


def inventory_dir_from(ctx: click.Context) -> Path:
    return ctx.find_root().obj["inventory_dir"]
