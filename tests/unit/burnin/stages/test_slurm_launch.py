"""`burnin run --launcher slurm`'s job (burnin.stages.slurm_launch): the settings, the command lines
and the script Slurm runs, what a node that never reports is judged, and the runner's hook.

The job itself runs on the lab's real Slurm (tests/lab/test_slurm_launcher_lab.py); here the
task line is run by a real shell, and Slurm's own outputs are read from captured samples."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.core.errors import BadInput
from bringup.fleet.lifecycle import State
from bringup.fleet.models import Run
from bringup.fleet.run_list import list_runs
from bringup.fleet.store import FleetStore
from burnin.cli import main as burnin_main
from burnin.parsers.slurm import parse_sinfo_nodes
from burnin.result import Result, Verdict
from burnin.run.session import LaunchOptions, RackRunRequest, run_rack
from burnin.service.slurm import SlurmError
from burnin.stages import runner as runner_mod
from burnin.stages import stage_checks
from burnin.stages.jobs import NodeJob
from burnin.stages.runner import BurninRun, record_for
from burnin.stages.slurm_launch import (
    NODE_PATH,
    JobView,
    batch_script,
    job_minutes,
    node_trouble,
    parse_job,
    sbatch_argv,
    silence_reason,
    stage_settings,
    task_argv,
    task_shell,
    unheard,
)
from tests.fleet import walk_to
from tests.paths import REPO
from tests.profiles import shipped
from tests.unit.burnin.golden.test_rules import NODES, RACK, FleetRack

SAMPLES = REPO / "tests" / "fixtures" / "samples"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text().split("\n", 1)[1]  # line 1 is the SOURCE line


def test_settings_come_from_the_inventory_with_the_command_line_on_top() -> None:
    rack_vars = {
        "burnin_spool_dir": "/shared/spool",
        "slurm_partition": "gpu",
        "slurm_start_timeout_s": "120",
    }
    s = stage_settings(rack_vars, slurm_partition="burnin", burnin_spool_dir=None)
    assert (s.spool_dir, s.node_spool_dir, s.partition, s.start_timeout_s) == (
        "/shared/spool",
        "/shared/spool",  # the nodes mount it where the controller does, unless told otherwise
        "burnin",
        120.0,
    )
    other = stage_settings({**rack_vars, "burnin_spool_dir_on_nodes": "/nfs/spool"})
    assert other.node_spool_dir == "/nfs/spool" and other.spool_dir == "/shared/spool"


@pytest.mark.parametrize(
    "rack_vars, says",
    [
        ({}, "--spool-dir DIR or the inventory var burnin_spool_dir"),
        ({"burnin_spool_dir": "spool"}, "'spool': give an absolute path"),
        ({"burnin_spool_dir": "/s", "slurm_spool_grace_s": "soon"}, "slurm_spool_grace_s: expected a number"),
        (
            {"burnin_spool_dir": "/s", "slurm_start_timeout_s": 0},
            "slurm_start_timeout_s: expected a positive",
        ),
    ],
)
def test_bad_settings_are_refused_before_anything_runs(rack_vars, says) -> None:
    with pytest.raises(BadInput) as err:
        stage_settings(rack_vars)
    assert says in str(err.value)


def test_the_task_line_runs_burnin_with_a_clean_environment_and_the_nodes_name(tmp_path: Path) -> None:
    """The real shell runs the task line as srun would, with a stand-in `burnin` that prints its
    arguments and environment: a --set value with spaces and quotes arrives as one argument."""
    program = tmp_path / "burnin"
    program.write_text(
        "#!/usr/bin/python3\nimport json, os, sys\nprint(json.dumps([sys.argv[1:], dict(os.environ)]))\n"
    )
    program.chmod(0o755)
    s = stage_settings({"burnin_spool_dir": "/shared/spool", "burnin_node_program": str(program)})
    overrides = ["diag.stress_minutes=0.05", 'notes=it\'s "quoted" $HOME']
    argv = task_argv(s, 17, "gpu", "h100-sxm-8x400g.yml", overrides)
    env = {
        "SLURMD_NODENAME": "gpu-0042",
        "HOME": "/root",
        "SLURM_PROCID": "3",
        "VIRTUAL_ENV": "/venv",
        "PATH": "/x",
    }
    out = subprocess.run(
        ["/bin/sh", "-c", task_shell(argv)], env=env, capture_output=True, text=True, check=True
    )
    args, seen_env = json.loads(out.stdout)
    assert args == [
        *("run", "--local", "--spool-dir", "/shared/spool", "--run-id", "17", "--stages", "gpu"),
        *("--profile", "/shared/spool/run-17/profiles/h100-sxm-8x400g.yml"),
        *("--set", overrides[0], "--set", overrides[1]),
        *("--node", "gpu-0042"),
    ]
    assert {k: v for k, v in seen_env.items() if k not in ("PWD", "SHLVL", "_", "LC_CTYPE")} == {
        "PATH": NODE_PATH,
        "HOME": "/root",
    }


def test_the_job_is_one_task_per_node_one_step_per_profile() -> None:
    s = stage_settings(
        {"burnin_spool_dir": "/shared/spool", "slurm_partition": "gpu", "slurm_conf": "/c/slurm.conf"}
    )
    script = batch_script(s, 17, "gpu", [(["n1", "n2"], "exec burnin a"), (["n3"], "exec burnin b")])
    lines = script.splitlines()
    assert lines[1] == "unset SLURM_CONF"  # the controller's file is not the nodes'
    steps = [shlex.split(line) for line in lines if line.startswith("srun")]
    assert [step[-1] for step in steps] == ["&", "&"] and lines[-1] == "wait"
    first = steps[0]
    assert "--nodelist=n1,n2" in first and "--ntasks=2" in first and "--ntasks-per-node=1" in first
    assert "--output=/shared/spool/run-17/logs/gpu-%N.out" in first and first[-4:-1] == [
        "/bin/sh",
        "-c",
        "exec burnin a",
    ]
    argv = sbatch_argv(s, 17, "gpu", ["n1", "n2", "n3"], job_minutes(61), script)
    for option in (
        "--parsable",
        "--job-name=burnin-run17-gpu",
        "--nodes=3",
        "--nodelist=n1,n2,n3",
        "--exclusive",
    ):
        assert option in argv
    assert "--no-kill" in argv and "--no-requeue" in argv and "--time=3" in argv and "--partition=gpu" in argv
    assert argv[-2:] == ["--wrap", script]
    told = stage_settings({"burnin_spool_dir": "/s", "slurm_conf_on_nodes": "/etc/slurm-gpu/slurm.conf"})
    assert (
        batch_script(told, 1, "gpu", [(["n1"], "x")]).splitlines()[1]
        == "export SLURM_CONF=/etc/slurm-gpu/slurm.conf"
    )


def test_a_job_line_gives_its_state_reason_and_exit_code() -> None:
    lines = sample("slurm_22_05_scontrol_show_job_o_burnin.txt").splitlines()
    views = [parse_job(line) for line in lines if line.strip()]
    states = {v.state for v in views}
    assert {"PENDING", "RUNNING", "COMPLETED"} <= states, states
    assert all(v.reason != "None" for v in views)
    with pytest.raises(SlurmError, match="no JobState"):
        parse_job("slurm_load_jobs error: Invalid job id specified")


def test_what_slurm_says_of_a_node_decides_whether_it_runs() -> None:
    nodes = {n.name: n for n in parse_sinfo_nodes(sample("slurm_22_05_sinfo_N_state_user_time_reason.txt"))}
    troubles = {name: node_trouble(n) for name, n in nodes.items()}
    assert any(troubles.values()), troubles  # the sample has drained nodes
    for name, why in troubles.items():
        node = nodes[name]
        if node.drain:
            assert why.startswith("Slurm shows it") and (node.reason in why)
    idle = parse_sinfo_nodes("n9|idle|Unknown|Unknown|none\n")[0]
    assert node_trouble(idle) == "" and node_trouble(None) == "Slurm has no such node"


def test_a_silent_node_is_explained_by_the_job_and_the_node() -> None:
    why = silence_reason(
        "812", JobView("NODE_FAIL", "NodeDown", "0:0"), "Slurm shows it down*: Not responding", "Killed", ""
    )
    assert why == (
        "no result from the node: Slurm job 812 NODE_FAIL (NodeDown); Slurm shows it down*: Not responding; "
        "its task's last line: Killed"
    )
    assert "gone from slurmctld" in silence_reason("9", None, "", "", "")
    assert silence_reason("9", JobView("RUNNING"), "", "", "cancelled: did not start").endswith(
        "cancelled: did not start"
    )


def test_a_node_that_never_reports_is_judged_as_an_unreachable_one_over_ssh() -> None:
    profile = shipped()
    plan = stage_checks("preflight", profile)
    record = record_for({"event_log": [], "event_log_read_at": "2026-11-24T08:00:00+00:00"}, None)
    judged = unheard(
        NodeJob("n1", profile, None, record), plan, "no result from the node: Slurm job 3 TIMEOUT"
    )
    by = {r.check: r for r, _ in judged}
    assert [r.check for r, _ in judged] == [c.name for c in plan]
    assert by["bmc_event_log"].verdict is Verdict.PASS  # judged from the record, as over SSH
    rest = [r for name, r in by.items() if name != "bmc_event_log"]
    assert all(r.verdict is Verdict.UNKNOWN and "Slurm job 3 TIMEOUT" in r.reason for r in rest)


@pytest.fixture
def store(tmp_path) -> FleetStore:
    s = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    for name in ("n1", "n2"):
        s.enroll(name, rack="r", profile="p")
        walk_to(s, name, State.BURNIN)
    return s


def test_the_runner_records_what_its_stage_engine_hands_over(store) -> None:
    """With a stage engine the runner sends nothing itself: it records each node's judged stage
    as it comes, concludes as ever, and stops a failed node before the next stage."""
    profile = shipped()
    asked: list[tuple[str, list[str]]] = []

    def engine(stage: str, active: dict[str, NodeJob]):
        asked.append((stage, sorted(active)))
        for name in sorted(active):  # one node a list, as results trickle in
            verdict = "FAIL" if (stage, name) == ("preflight", "n2") else "PASS"
            result = Result.judged("a") if verdict == "PASS" else Result("a", Verdict.FAIL, {}, (), "bad")
            yield [(name, [(result, f"evidence of {name}")], "")]

    run = store.start_run("burnin", "r")
    jobs = [NodeJob(n, profile, None) for n in ("n1", "n2")]
    runner = BurninRun(store, run.id, ["preflight", "gpu"], stage_engine=engine)
    outcomes = {o.node: o for o in runner.run(jobs)}
    assert asked == [("preflight", ["n1", "n2"]), ("gpu", ["n1"])]
    assert outcomes["n2"].final_state == "failed" and outcomes["n1"].final_state == "burnin"
    saved = store.latest_results("n1")
    assert {(r.stage, r.check, r.verdict) for r in saved} == {
        ("preflight", "a", "PASS"),
        ("gpu", "a", "PASS"),
    }
    assert store.evidence(saved[0]) == "evidence of n1"


def test_the_launcher_option_accepts_slurm_and_a_task_needs_its_run() -> None:
    runner = CliRunner()
    helped = runner.invoke(burnin_main, ["run", "--help"], terminal_width=200)
    assert "[mpirun|srun|slurm]" in helped.output and "--spool-dir" in helped.output
    res = runner.invoke(
        burnin_main, ["run", "--local", "--spool-dir", "/s", "--stages", "gpu", "--profile", "p"]
    )
    assert (
        res.exit_code == 2
        and "--local --spool-dir needs --run-id, --profile, --node and one stage" in res.output
    )


@pytest.mark.parametrize(
    "rack_vars, launch, says",
    [
        ({}, LaunchOptions(launcher="slurm"), "--spool-dir DIR or the inventory var burnin_spool_dir"),
        ({"burnin_launcher": "slurm", "burnin_spool_dir": "spool"}, LaunchOptions(), "give an absolute path"),
    ],
)
def test_a_slurm_run_without_a_usable_spool_starts_nothing(tmp_path, rack_vars, launch, says) -> None:
    """Asked on the command line or in the rack's vars, the Slurm path's settings are checked
    before the run is recorded: no run, no claim, no node moved."""
    fleet = FleetRack(tmp_path, rack_vars)
    with pytest.raises(BadInput) as err:
        run_rack(fleet.store, fleet.dir, RackRunRequest(RACK, ["preflight"], launch=launch))
    assert says in str(err.value)
    assert list_runs(fleet.store) == []
    assert {fleet.store.get_node(n).state for n in NODES} == {"burnin"}


def test_with_the_slurm_launcher_the_multi_node_stages_launch_with_srun(tmp_path, monkeypatch) -> None:
    """`--launcher slurm` is Slurm for every stage that can use it: nccl gets `srun` (the
    launcher it knows), and the run records which launcher ran it."""
    seen = {}

    def nccl(context):
        seen.update(context.settings)
        return {}

    monkeypatch.setattr(runner_mod, "group_stages", lambda: {"nccl": nccl})
    fleet = FleetRack(tmp_path)
    launch = LaunchOptions(launcher="slurm", spool_dir=str(tmp_path / "spool"))
    run_rack(fleet.store, fleet.dir, RackRunRequest(RACK, ["nccl"], launch=launch))
    assert seen["burnin_launcher"] == "srun"
    (run,) = list_runs(fleet.store)
    with fleet.store.reading() as s:
        assert s.get(Run, run.id).params["launcher"] == "slurm"
