"""The `burnin` command line: run the stages, judge saved outputs, show a node's results."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import click
import yaml

from bringup.clikit import FriendlyGroup, global_options, inventory_dir_from, set_global_options, store_from
from bringup.fleet.lifecycle import State
from bringup.inventory import load_rack
from bringup.profiles import Profile, load_profile, validate_profile
from bringup.remote import DEFAULT_CONCURRENCY, target_from_vars
from bringup.ui import console, err_console, node_progress, table
from burnin import __version__
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.launch import group_settings
from burnin.result import Finding, Result, Verdict
from burnin.stages import STAGE_ORDER, parse_stages, stage_checks
from burnin.stages.jobs import NodeJob, NodeOutcome, StageOutcome
from burnin.stages.runner import BurninRun, record_for

VERDICT_STYLE = {"PASS": "green", "WARN": "yellow", "UNKNOWN": "magenta", "FAIL": "red"}
# States a burn-in may start from; golden (in service) needs --force (DESIGN.md, idea 8).
STARTABLE = (State.CONFIGURED.value, State.BURNIN.value, State.REPAIR.value)


@click.group(cls=FriendlyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@global_options
@click.version_option(__version__, prog_name="burnin")
@click.pass_context
def main(ctx: click.Context, db: str | None, inventory_dir: Path | None) -> None:
    """Burn in GPU nodes and keep the list of golden nodes true."""
    set_global_options(ctx, db, inventory_dir)


def _styled(verdict: str) -> str:
    return f"[{VERDICT_STYLE.get(verdict, 'white')}]{verdict}[/]"


def apply_overrides(profile: Profile, overrides: tuple[str, ...]) -> Profile:
    """A copy of the profile with ``--set key.path=value`` applied (YAML values), re-validated."""
    if not overrides:
        return profile
    data = copy.deepcopy(profile.data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(
                f"{item!r}: expected KEY=VALUE, e.g. diag.stress_minutes=0.5", param_hint="--set"
            )
        node = data
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = yaml.safe_load(raw)
    problems = validate_profile(data, f"{profile.path} with --set")
    if problems:
        raise click.BadParameter("; ".join(str(p) for p in problems), param_hint="--set")
    return Profile(profile.name, profile.path, data)


def _profile_by_name(ctx: click.Context, name: str) -> Profile:
    path = Path(name)
    if path.suffix in (".yml", ".yaml") and path.is_file():
        profile, problems = load_profile(path.stem, path.parent)
    else:
        profile, problems = load_profile(name, inventory_dir_from(ctx) / "profiles")
    if profile is None:
        raise click.UsageError("; ".join(str(p) for p in problems))
    return profile


# -- run -------------------------------------------------------------------------------------


@main.command("run")
@click.option("--rack", help="The rack to burn in (inventories/RACK.yml).")
@click.option("--stages", default=",".join(STAGE_ORDER), show_default=True, help="Comma-separated stages.")
@click.option("--nodes", "only", default=None, help="Comma-separated node names (default: the whole rack).")
@click.option("--local", is_flag=True, help="Run on this machine, without SSH (a node checking itself).")
@click.option(
    "--profile", "profile_name", default=None, help="With --local: the profile name or a .yml path."
)
@click.option("--node", "local_node", default=None, help="With --local: record results under this node.")
@click.option("--concurrency", default=DEFAULT_CONCURRENCY, show_default=True, help="Nodes at once.")
@click.option("--keep-going", is_flag=True, help="Run later stages even after a stage failed.")
@click.option("--force", is_flag=True, help="Also re-test golden nodes (they are in service).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a profile value.")
@click.option(
    "--launcher",
    type=click.Choice(["mpirun", "srun"]),
    default=None,
    help="How multi-node stages (nccl) start ranks. Default: inventory burnin_launcher, else mpirun.",
)
@click.option("--partition", default=None, help="Slurm partition for srun (inventory slurm_partition).")
@click.option("--reservation", default=None, help="Slurm reservation for srun (inventory slurm_reservation).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary on stdout.")
@click.pass_context
def run_cmd(
    ctx: click.Context,
    rack: str | None,
    stages: str,
    only: str | None,
    local: bool,
    profile_name: str | None,
    local_node: str | None,
    concurrency: int,
    keep_going: bool,
    force: bool,
    overrides: tuple[str, ...],
    launcher: str | None,
    partition: str | None,
    reservation: str | None,
    as_json: bool,
) -> None:
    """Run burn-in stages on a rack's nodes (or, with --local, on this machine)."""
    stage_list = parse_stages(stages)
    if local:
        outcomes = _run_local(ctx, stage_list, profile_name, local_node, keep_going, overrides, as_json)
    else:
        if not rack:
            raise click.UsageError("give --rack R (or --local)")
        launch = {"burnin_launcher": launcher, "slurm_partition": partition, "slurm_reservation": reservation}
        outcomes = _run_rack(
            ctx, rack, stage_list, only, concurrency, keep_going, force, overrides, as_json, launch
        )
    _print_summary(outcomes, stage_list, as_json)
    sys.exit(0 if all(o.verdict in (Verdict.PASS, Verdict.WARN) for o in outcomes) else 1)


def _run_rack(ctx, rack_name, stage_list, only, concurrency, keep_going, force, overrides, as_json, launch):
    rack, problems = load_rack(rack_name, inventory_dir_from(ctx))
    if rack is None:
        raise click.UsageError("the inventory has errors:\n" + "\n".join(str(p) for p in problems))
    store = store_from(ctx)
    wanted = [h for h in rack.hosts if only is None or h.name in only.split(",")]
    if only:
        missing = set(only.split(",")) - {h.name for h in wanted}
        if missing:
            raise click.UsageError(f"not in rack {rack_name}: {', '.join(sorted(missing))}")
    run = store.start_run(
        "burnin", rack_name, {"stages": stage_list, "nodes": [h.name for h in wanted], "set": list(overrides)}
    )
    jobs, skipped = [], []
    for host in wanted:
        node = store.get_node(host.name)
        allowed = STARTABLE + ((State.GOLDEN.value,) if force else ())
        if node.state not in allowed:
            hint = " (use --force to re-test a golden node)" if node.state == State.GOLDEN.value else ""
            skipped.append(NodeOutcome(host.name, skipped=f"state {node.state} cannot start a burn-in{hint}"))
            continue
        if node.state != State.BURNIN.value:
            store.transition(
                host.name, State.BURNIN, f"burn-in run {run.id}: {','.join(stage_list)}", run_id=run.id
            )
        previous = _previous_check_time(store, host.name, "bmc_event_log")
        target = target_from_vars(host.name, host.vars, rack.path.parent, ip=node.ip)
        profile = apply_overrides(rack.profiles[host.profile], overrides)
        jobs.append(NodeJob(host.name, profile, target, record_for(node.hardware, previous)))
    settings = group_settings(wanted[0].vars if wanted else {}, **launch)  # rack-wide vars + the CLI
    runner = BurninRun(store, run.id, stage_list, concurrency, not keep_going, group_settings=settings)
    outcomes = _execute(runner, jobs, as_json)
    failed = sum(o.verdict is Verdict.FAIL for o in outcomes)
    store.finish_run(run.id, "failed" if failed else "done")
    return skipped + outcomes


def _run_local(ctx, stage_list, profile_name, local_node, keep_going, overrides, as_json):
    store = store_from(ctx) if local_node else None
    if profile_name:
        profile = _profile_by_name(ctx, profile_name)
    elif store is not None:
        profile = _profile_by_name(ctx, store.get_node(local_node).profile)
    else:
        raise click.UsageError("--local needs --profile P (or --node N of the fleet store)")
    profile = apply_overrides(profile, overrides)
    run_id, record = None, record_for({}, None)
    if store is not None:
        node = store.get_node(local_node)
        if node.state not in STARTABLE:
            raise click.UsageError(f"node {local_node} is {node.state}: it cannot start a burn-in")
        run_id = store.start_run("burnin", node.rack, {"stages": stage_list, "local": True}).id
        if node.state != State.BURNIN.value:
            store.transition(local_node, State.BURNIN, f"local burn-in run {run_id}", run_id=run_id)
        record = record_for(node.hardware, _previous_check_time(store, local_node, "bmc_event_log"))
    job = NodeJob(local_node or "localhost", profile, None, record)
    outcomes = _execute(BurninRun(store, run_id, stage_list, 1, not keep_going), [job], as_json)
    if store is not None and run_id is not None:
        store.finish_run(run_id, "done")
    return outcomes


def _previous_check_time(store, node: str, check: str) -> str | None:
    for r in store.latest_results(node):
        if r.check == check:
            return r.time.isoformat()
    return None


def _execute(runner: BurninRun, jobs: list[NodeJob], as_json: bool) -> list[NodeOutcome]:
    if not jobs:
        return []
    progress = node_progress()
    tasks: dict[str, Any] = {}

    def started(stage: str, count: int) -> None:
        tasks[stage] = progress.add_task(f"stage {stage}", total=count)
        if not err_console.is_terminal and not as_json:
            err_console.print(f"stage {stage}: {count} node(s)")

    def done(outcome: StageOutcome) -> None:
        progress.advance(tasks[outcome.stage])
        if not err_console.is_terminal and not as_json:
            err_console.print(f"  {outcome.node}: {outcome.stage} {outcome.verdict.value}", highlight=False)

    runner.on_stage_start, runner.on_node_done = started, done
    if not as_json:  # multi-node stages report their rounds and trials as they go
        runner.on_group_progress = lambda line: err_console.print(line, highlight=False, markup=False)
    with progress:
        return runner.run(jobs)


def _print_summary(outcomes: list[NodeOutcome], stage_list: list[str], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([_outcome_dict(o) for o in outcomes], indent=2))
        return
    out = table("burn-in summary", "node", *stage_list, "verdict", "state", "first finding")
    for o in sorted(outcomes, key=lambda o: o.node):
        by_stage = {s.stage: s.verdict.value for s in o.stages}
        cells = [_styled(by_stage[s]) if s in by_stage else "-" for s in stage_list]
        out.add_row(o.node, *cells, _styled(o.verdict.value), o.final_state or "-", _first_finding(o))
    console.print(out)


def _first_finding(o: NodeOutcome) -> str:
    if o.skipped:
        return o.skipped
    for s in o.stages:
        for r in s.results:
            if r.verdict in (Verdict.FAIL, Verdict.UNKNOWN, Verdict.WARN):
                f = next((f for f in r.findings if f.severity.value != "info"), None)
                text = f"{f.message} -> {f.action.value}" if f else r.reason
                return f"{r.check}: {text}"
    return ""


def _outcome_dict(o: NodeOutcome) -> dict[str, Any]:
    return {
        "node": o.node,
        "verdict": o.verdict.value,
        "state": o.final_state,
        "skipped": o.skipped,
        "stages": [
            {
                "stage": s.stage,
                "verdict": s.verdict.value,
                "error": s.error,
                "results": [r.to_dict() for r in s.results],
            }
            for s in o.stages
        ],
    }


# -- evaluate, results, checks -------------------------------------------------------------


@main.command("evaluate")
@click.option("--check", "check_name", required=True, help="The check whose judgement to apply.")
@click.option("--profile", "profile_name", required=True, help="Profile name or .yml path.")
@click.option("--rc", default=0, show_default=True, help="The exit code the tool had.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a profile value.")
@click.option("--json", "as_json", is_flag=True)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.pass_context
def evaluate_cmd(ctx, check_name, profile_name, rc, overrides, as_json, file) -> None:
    """Judge a saved tool output FILE ('-' for stdin) offline, as CHECK would on a node."""
    check = ALL_CHECKS.get(check_name)
    if check is None:
        raise click.UsageError(f"unknown check {check_name!r} (checks: {', '.join(sorted(ALL_CHECKS))})")
    profile = apply_overrides(_profile_by_name(ctx, profile_name), overrides)
    text = click.open_file(file, encoding="utf-8", errors="replace").read()
    result = judge(check, CommandOutput(stdout=text, rc=rc), profile)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _print_result(result)
    sys.exit(0 if result.verdict in (Verdict.PASS, Verdict.WARN) else 1)


def _print_result(result: Result) -> None:
    console.print(f"[bold]{result.check}[/bold]: {_styled(result.verdict.value)}", highlight=False)
    if result.reason:
        console.print(f"  {result.reason}", highlight=False)
    for key, value in result.metrics.items():
        console.print(f"  {key}: {value}", highlight=False)
    _print_findings(list(result.findings))


def _print_findings(findings: list[Finding]) -> None:
    for f in findings:
        console.print(
            f"  - [{f.severity.value}] {f.message} -> {f.action.value}",
            highlight=False,
        )
        if f.evidence:
            for line in f.evidence.splitlines()[:5]:
                console.print(f"      | {line}", highlight=False, markup=False)


@main.command("results")
@click.argument("node")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def results_cmd(ctx: click.Context, node: str, as_json: bool) -> None:
    """Show NODE's latest result of every check, with findings."""
    store = store_from(ctx)
    record = store.get_node(node)
    rows = store.latest_results(node)
    order = {s: i for i, s in enumerate(STAGE_ORDER)}
    rows.sort(key=lambda r: (order.get(r.stage, 99), r.check))
    if as_json:
        click.echo(
            json.dumps(
                {
                    "node": record.name,
                    "state": record.state,
                    "results": [
                        {
                            "stage": r.stage,
                            "check": r.check,
                            "verdict": r.verdict,
                            "time": r.time.isoformat(),
                            "run": r.run_id,
                            "metrics": r.metrics,
                            "findings": r.findings,
                        }
                        for r in rows
                    ],
                },
                indent=2,
            )
        )
        return
    console.print(f"[bold]{record.name}[/bold] ({record.state})", highlight=False)
    if not rows:
        console.print("no results yet: run `burnin run`")
        return
    out = table("latest results", "stage", "check", "verdict", "time", "run", "summary")
    for r in rows:
        summary = r.metrics.get("reason", "") or (r.findings[0]["message"] if r.findings else "")
        out.add_row(
            r.stage, r.check, _styled(r.verdict), r.time.strftime("%Y-%m-%d %H:%M:%S"), str(r.run_id), summary
        )
    console.print(out)
    for r in rows:
        if r.findings:
            console.print(f"[bold]{r.stage}/{r.check}[/bold]", highlight=False)
            _print_findings([Finding.from_dict(f) for f in r.findings])


@main.command("checks")
@click.option("--profile", "profile_name", default=None, help="Only the checks that apply to this profile.")
@click.pass_context
def checks_cmd(ctx: click.Context, profile_name: str | None) -> None:
    """List the checks of every stage."""
    profile = _profile_by_name(ctx, profile_name) if profile_name else None
    out = table("checks", "stage", "check", "what it looks at")
    for stage in STAGE_ORDER:
        checks = (
            stage_checks(stage, profile) if profile else [c for c in ALL_CHECKS.values() if c.stage == stage]
        )
        for c in checks:
            out.add_row(stage, c.name, c.description)
    console.print(out)


# -- golden, report ------------------------------------------------------------------------------


def _note(line: str) -> None:
    """A line for the operator on stderr (stdout carries only the export)."""
    err_console.print(line, highlight=False, markup=False, soft_wrap=True)


def _golden_setup(ctx: click.Context, rack_name: str, max_age: str | None, stages: str | None):
    """The rack, the store and the command-line rules shared by `golden` and `report`."""
    from burnin.golden import parse_age

    rack, problems = load_rack(rack_name, inventory_dir_from(ctx))
    if rack is None:
        raise click.UsageError("the inventory has errors:\n" + "\n".join(str(p) for p in problems))
    try:
        age = parse_age(max_age) if max_age else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-age") from None
    try:
        stage_list = parse_stages(stages) if stages else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--stages") from None
    return rack, store_from(ctx), age, stage_list


_MAX_AGE_HELP = (
    "Results older than this do not count (7d, 36h, 90m). Default: the inventory's "
    "golden_max_age_days, else 7d."
)
_STAGES_HELP = (
    "Stages a golden node must have passed (default: the inventory's golden_stages, else all; ib is "
    "dropped for profiles without HCAs). E.g. preflight,gpu,pcie for a rack without IB."
)


@main.command("golden")
@click.option("--rack", required=True, help="The rack (inventories/RACK.yml).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["hostfile", "slurm", "json", "csv"]),
    default="hostfile",
    show_default=True,
    help="hostfile: OpenMPI 'HOST slots=N'; slurm: a compressed hostlist; json, csv: full records.",
)
@click.option("--excluded", is_flag=True, help="The excluded nodes with their reasons instead of the golden.")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to FILE (atomically: temp file + rename) instead of stdout.",
)
@click.option("--max-age", default=None, help=_MAX_AGE_HELP)
@click.option("--stages", default=None, help=_STAGES_HELP)
@click.option(
    "--address",
    type=click.Choice(["ip", "hostname", "name"]),
    default="ip",
    show_default=True,
    help="How the hostfile names a node: the address mpirun reaches (ip: store IP, else ansible_host).",
)
@click.option("--dry-run", is_flag=True, help="Print the lifecycle moves and the export; record nothing.")
@click.pass_context
def golden_cmd(
    ctx: click.Context,
    rack: str,
    fmt: str,
    excluded: bool,
    output: Path | None,
    max_age: str | None,
    stages: str | None,
    address: str,
    dry_run: bool,
) -> None:
    """Select the rack's golden nodes, record who enters or leaves golden, and export the list.

    Only the export goes to stdout (pipe it); what changed and the summary go to stderr.
    """
    from bringup.files import atomic_write
    from bringup.fleet.models import utcnow
    from bringup.fleet.store import redact_url
    from burnin import export, golden

    rack_obj, store, age, stage_list = _golden_setup(ctx, rack, max_age, stages)
    now = utcnow()
    judged = golden.decide(golden.gather(store, rack_obj), now, age, stage_list)
    moves = {d.node: m for _, rules, d in judged if (m := golden.plan_move(d, rules)) is not None}
    failed_moves: dict[str, str] = {}
    if dry_run:
        for m in moves.values():
            _note(f"would move {m.node} -> {m.target.value}: {m.reason}")
    else:
        for a in golden.apply(store, list(moves.values())):
            if a.done:
                _note(f"{a.move.node} -> {a.move.target.value}: {a.move.reason}")
            else:
                failed_moves[a.move.node] = a.error
                _note(f"not moved: {a.error}")
    store_url = redact_url(store.url)
    golden_records, excluded_records = [], []
    for fact, rules, decision in judged:
        if decision.node in moves and decision.node not in failed_moves and not dry_run:
            golden.refresh(store, fact)  # the node's state and events after its move
        if decision.golden and decision.node in failed_moves:
            decision = golden.Decision(
                decision.node,
                decision.state,
                False,
                (f"could not become golden: {failed_moves[decision.node]}",),
                decision.stages,
                decision.run_id,
            )
        if not decision.golden:
            excluded_records.append(export.excluded_record(fact, decision))
            continue
        golden_records.append(export.golden_record(fact, decision, rules, store_url, address))
    distinct = tuple(dict.fromkeys(rules for _, rules, _ in judged))
    meta = export.ExportMeta(rack_obj.name, now, store_url, distinct)
    text = export.render(fmt, meta, golden_records, excluded_records, excluded)
    if output is None:
        click.echo(text, nl=False)
    else:
        atomic_write(output, text)
        _note(f"wrote {output}")
    summary = f"rack {rack_obj.name}: {len(golden_records)} golden of {len(judged)} node(s)"
    if dry_run:
        summary += " (dry run: nothing recorded)"
    _note(summary)
    for r in excluded_records:
        _note(f"  excluded {r['name']} ({r['state']}): {'; '.join(r['reasons'])}")


@main.command("report")
@click.option("--rack", required=True, help="The rack (inventories/RACK.yml).")
@click.option(
    "--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the HTML page."
)
@click.option(
    "--junit", "junit_path", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML."
)
@click.option("--max-age", default=None, help=_MAX_AGE_HELP)
@click.option("--stages", default=None, help=_STAGES_HELP)
@click.pass_context
def report_cmd(
    ctx: click.Context,
    rack: str,
    html_path: Path | None,
    junit_path: Path | None,
    max_age: str | None,
    stages: str | None,
) -> None:
    """Write the rack's burn-in report: a self-contained HTML page and/or JUnit XML (changes nothing)."""
    from bringup.files import atomic_write
    from bringup.fleet.models import utcnow
    from burnin.report import collect
    from burnin.report.html import render_html
    from burnin.report.junit import render_junit

    if html_path is None and junit_path is None:
        raise click.UsageError("give --html FILE and/or --junit FILE")
    rack_obj, store, age, stage_list = _golden_setup(ctx, rack, max_age, stages)
    report = collect(store, rack_obj, utcnow(), age, stage_list)
    if html_path is not None:
        atomic_write(html_path, render_html(report))
        _note(f"wrote {html_path}")
    if junit_path is not None:
        atomic_write(junit_path, render_junit(report))
        _note(f"wrote {junit_path}")
    _note(f"rack {report.rack}: {len(report.golden)} of {len(report.nodes)} node(s) qualify as golden")
