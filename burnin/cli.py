"""The `burnin` command line: judging hardware. The stages arrive with the burn-in issues."""

from __future__ import annotations

import click

from burnin import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="burnin")
def main() -> None:
    """Burn in GPU nodes and keep the list of golden nodes true."""
