"""`burnin evaluate`, `results`, `checks`: judge a saved output offline, show a node's latest
results, list the checks. They change nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from bringup.cli.common import inventory_dir_from, store_from
from bringup.cli.ui import console, table
from bringup.profiles.load import Profile, apply_overrides, find_profile
from burnin.checks import ALL_CHECKS
from burnin.checks.evidence import EVIDENCE_CHECKS
from burnin.cli.render import print_findings, styled
from burnin.evaluate.handed_in import MAX_BYTES, Evaluation, HandedIn, evaluate_evidence, evaluate_files
from burnin.result import PASSING, Finding, Result
from burnin.stages import ALL_STAGES, stage_checks


def _profile(ctx: click.Context, name: str) -> Profile:
    """A profile by name (in the inventory's profiles/) or by the path of its .yml file."""
    return find_profile(name, inventory_dir_from(ctx) / "profiles")


@click.command("evaluate")
@click.option("--profile", "profile_name", required=True, help="Profile name or .yml path.")
@click.option(
    "--check",
    "check_name",
    default=None,
    help="The check whose judgement to apply; by default the tool is recognised from the content.",
)
@click.option("--rc", default=0, show_default=True, help="The exit code the tool had.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a profile value.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print {check, tool, confidence, verdict, findings, ...} as JSON."
)
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True))
@click.pass_context
def evaluate_cmd(
    ctx: click.Context,
    check_name: str | None,
    profile_name: str,
    rc: int,
    overrides: tuple[str, ...],
    as_json: bool,
    files: tuple[str, ...],
) -> None:
    """Judge a saved tool output FILE ('-' for stdin) offline: the tool is recognised from its
    content (or named with --check) and judged against the profile as on a node. A directory or
    several files (a ticket's attachments): one row each, the tool, the verdict and the first
    finding; the exit status is the worst verdict's."""
    profile = apply_overrides(_profile(ctx, profile_name), overrides)
    if len(files) > 1 or Path(files[0]).is_dir():
        if "-" in files:
            raise click.BadParameter("'-' (stdin) is read alone, not with other files", param_hint="FILES")
        handed_in = evaluate_files([Path(f) for f in files], profile, check_name=check_name, rc=rc)
        if as_json:
            click.echo(json.dumps(handed_in.to_dict(), indent=2))
        else:
            _print_files(handed_in)
        sys.exit(0 if handed_in.verdict in PASSING else 1)
    file = files[0]
    with click.open_file(file, "rb") as stream:
        data = stream.read(MAX_BYTES + 1)
    source = "stdin" if file == "-" else file
    evaluation = evaluate_evidence(data, profile, source=source, check_name=check_name, rc=rc)
    if as_json:
        click.echo(json.dumps(evaluation.to_dict(), indent=2))
    else:
        _print_evaluation(evaluation)
    sys.exit(0 if evaluation.verdict in PASSING else 1)


def _print_evaluation(evaluation: Evaluation) -> None:
    rec = evaluation.recognition
    if rec.tool is not None:
        console.print(
            f"tool: [bold]{rec.tool.name}[/bold] (confidence {rec.confidence:.2f}: {rec.reason})",
            highlight=False,
        )
    elif not evaluation.given:
        console.print(f"tool: {rec.reason}", highlight=False)
    if evaluation.given:
        console.print(f"judged by --check {evaluation.checks[0]}", highlight=False)
    if not evaluation.results:
        console.print(f"verdict: {styled(evaluation.verdict)}", highlight=False)
        console.print(f"  {evaluation.reason}", highlight=False)
    for result in evaluation.results:
        _print_result(result)


def _print_files(handed_in: HandedIn) -> None:
    out = table(f"{len(handed_in.files)} file(s) judged", "file", "tool", "verdict", "first finding")
    for f in handed_in.files:
        out.add_row(f.path, f.tool or "-", styled(f.verdict), f.first_finding())
    console.print(out)
    console.print(f"verdict: {styled(handed_in.verdict)}", highlight=False)


def _print_result(result: Result) -> None:
    console.print(f"[bold]{result.check}[/bold]: {styled(result.verdict)}", highlight=False)
    if result.reason:
        console.print(f"  {result.reason}", highlight=False)
    for key, value in result.metrics.items():
        console.print(f"  {key}: {value}", highlight=False)
    print_findings(list(result.findings))


@click.command("results")
@click.argument("node")
@click.option("--json", "as_json", is_flag=True)
@click.option("--evidence", "with_evidence", is_flag=True, help="Also show each result's raw tool output.")
@click.pass_context
def results_cmd(ctx: click.Context, node: str, as_json: bool, with_evidence: bool) -> None:
    """Show NODE's latest result of every check, with findings."""
    store = store_from(ctx)
    record = store.get_node(node)
    rows = store.latest_results(node)
    order = {s: i for i, s in enumerate(ALL_STAGES)}
    rows.sort(key=lambda r: (order.get(r.stage, 99), r.check))
    evidence = store.evidence_of(rows) if with_evidence else {}
    if as_json:
        results = [r.as_dict() for r in rows]
        if with_evidence:
            for r, out in zip(rows, results, strict=True):
                out["evidence"] = evidence.get(r.id)
        click.echo(json.dumps({"node": record.name, "state": record.state, "results": results}, indent=2))
        return
    console.print(f"[bold]{record.name}[/bold] ({record.state})", highlight=False)
    if not rows:
        console.print("no results yet: run `burnin run`")
        return
    out = table("latest results", "stage", "check", "verdict", "time", "run", "summary")
    for r in rows:
        summary = r.metrics.get("reason", "") or (r.findings[0]["message"] if r.findings else "")
        out.add_row(
            r.stage, r.check, styled(r.verdict), r.time.strftime("%Y-%m-%d %H:%M:%S"), str(r.run_id), summary
        )
    console.print(out)
    for r in rows:
        if r.findings:
            console.print(f"[bold]{r.stage}/{r.check}[/bold]", highlight=False)
            print_findings([Finding.from_dict(f) for f in r.findings])
    for r in rows if with_evidence else ():
        console.print(f"[bold]{r.stage}/{r.check} raw evidence[/bold] (run {r.run_id})", highlight=False)
        click.echo(evidence.get(r.id, "(none kept)"))


@click.command("checks")
@click.option("--profile", "profile_name", default=None, help="Only the checks that apply to this profile.")
@click.pass_context
def checks_cmd(ctx: click.Context, profile_name: str | None) -> None:
    """List the checks of every stage, and those only `burnin evaluate` applies."""
    profile = _profile(ctx, profile_name) if profile_name else None
    out = table("checks", "stage", "check", "what it looks at")
    for stage in ALL_STAGES:
        checks = (
            stage_checks(stage, profile) if profile else [c for c in ALL_CHECKS.values() if stage in c.stages]
        )
        for c in checks:
            out.add_row(stage, c.name, c.description)
    for c in EVIDENCE_CHECKS.values():  # no stage runs them: they judge handed-in outputs
        out.add_row("(evaluate)", c.name, c.description)
    console.print(out)


COMMANDS = (evaluate_cmd, results_cmd, checks_cmd)
