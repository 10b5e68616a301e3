"""The `bringup` command line: the root group and where each command lives.

    fleet.py      inventory check|enroll, nodes list|show|mark-repaired|retire
    redfish.py    discover, power, boot, bmc jobs (library: bringup/redfish/rack.py)
    provision.py  provision (library: bringup/provision/orchestrator.py)
    configure.py  configure (library: bringup/configure/)
    store.py      store prune (library: bringup/fleet/prune.py)
    hostkeys.py   hostkeys scan|forget (library: bringup/ssh/hostkey_records.py)
    common.py     the group class (one-line errors), global options, the store

The `lab` group (bringup/lab/cli.py) is registered lazily: `bringup --help` and
`import bringup.cli` never import the lab (nor bcrypt, which it needs); only `bringup lab ...`
does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from bringup import __version__
from bringup.cli.common import FriendlyGroup, global_options, set_global_options
from bringup.cli.configure import configure
from bringup.cli.fleet import inventory, nodes
from bringup.cli.hostkeys import hostkeys_group
from bringup.cli.provision import provision_cmd
from bringup.cli.redfish import COMMANDS as REDFISH_COMMANDS
from bringup.cli.store import store_group


class LazyGroup(FriendlyGroup):
    """A group with commands imported only when invoked (or their own help is shown).

    ``lazy`` maps a command name to (loader, one-line help); the listing in ``--help`` uses
    the one-line help, so it needs no import.
    """

    lazy: dict[str, tuple[Callable[[], click.Command], str]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy or cmd_name in self.commands:
            return super().get_command(ctx, cmd_name)
        command = self.lazy[cmd_name][0]()
        self.add_command(command, cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max((len(n) for n in names), default=0)  # as click's own
        rows = []
        for name in names:
            if name in self.lazy and name not in self.commands:
                stub = click.Command(name, help=self.lazy[name][1])  # its help, without the import
                rows.append((name, stub.get_short_help_str(limit)))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _load_lab() -> click.Command:
    # The one product -> lab import (tests/unit/layers_check.py, LAB_IMPORT_ALLOWLIST).
    from bringup.lab.cli import lab

    return lab


class BringupGroup(LazyGroup):
    lazy = {
        "lab": (
            _load_lab,
            "The virtual rack: fake nodes, fake BMCs and stand-in hardware tools.",
        ),
    }


@click.group(cls=BringupGroup, context_settings={"help_option_names": ["-h", "--help"]})
@global_options
@click.version_option(__version__, prog_name="bringup")
@click.pass_context
def main(ctx: click.Context, db: str | None, inventory_dir: Path | None) -> None:
    """Take a rack of GPU servers from bare metal to configured, trustworthy nodes."""
    set_global_options(ctx, db, inventory_dir)


for _command in (inventory, nodes, *REDFISH_COMMANDS, configure, provision_cmd, store_group, hostkeys_group):
    main.add_command(_command)

__all__ = ["main"]
