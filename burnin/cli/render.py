"""How the burnin commands show verdicts and findings (shared by the command modules)."""

from __future__ import annotations

import click

from bringup.cli.ui import console, err_console
from burnin.result import Finding, Verdict

VERDICT_STYLE: dict[Verdict, str] = {
    Verdict.PASS: "green",
    Verdict.WARN: "yellow",
    Verdict.UNKNOWN: "magenta",
    Verdict.FAIL: "red",
}


def styled(verdict: Verdict | str) -> str:
    """The verdict in its colour (a verdict read from the store is its plain string)."""
    try:
        style = VERDICT_STYLE[Verdict(verdict)]
    except ValueError:
        style = "white"
    return f"[{style}]{verdict}[/]"


def print_findings(findings: list[Finding]) -> None:
    for f in findings:
        console.print(f"  - [{f.severity.value}] {f.message} -> {f.action.value}", highlight=False)
        if f.evidence:
            for line in f.evidence.splitlines()[:5]:
                console.print(f"      | {line}", highlight=False, markup=False)


def note(line: str) -> None:
    """A line for the operator on stderr (stdout carries only the output to pipe)."""
    err_console.print(line, highlight=False, markup=False, soft_wrap=True)


def usage_error(exc: Exception, hint: str | None = None) -> click.ClickException:
    """A problem with what the command line named (a rack, --nodes, an option value), reported
    as click reports its own usage errors (exit 2)."""
    if hint is not None:
        return click.BadParameter(str(exc), param_hint=hint)
    return click.UsageError(str(exc))
