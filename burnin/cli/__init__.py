"""The `burnin` command line: run the stages, judge saved outputs, show a node's results, select
the golden nodes and report on a rack.

One module per group of commands (run, inspect, golden); each command parses its options,
calls one library function and renders what it returns.
"""

from __future__ import annotations

from pathlib import Path

import click

from bringup.cli.common import FriendlyGroup, global_options, set_global_options
from burnin import __version__
from burnin.cli import (
    accept,
    breaker,
    fabric,
    golden,
    history,
    inspect,
    nightly,
    rejudge,
    remediate,
    run,
    runs,
    service,
)


@click.group(cls=FriendlyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@global_options
@click.version_option(__version__, prog_name="burnin")
@click.pass_context
def main(ctx: click.Context, db: str | None, inventory_dir: Path | None) -> None:
    """Burn in GPU nodes and keep the list of golden nodes true."""
    set_global_options(ctx, db, inventory_dir)


for _command in (
    *run.COMMANDS,
    *inspect.COMMANDS,
    *golden.COMMANDS,
    *runs.COMMANDS,
    *service.COMMANDS,
    *nightly.COMMANDS,
    *rejudge.COMMANDS,
    *history.COMMANDS,
    *accept.COMMANDS,
    *breaker.COMMANDS,
    *fabric.COMMANDS,
    *remediate.COMMANDS,
):
    main.add_command(_command)
