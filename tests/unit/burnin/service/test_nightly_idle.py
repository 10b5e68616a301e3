"""`burnin nightly --idle`: the job's state as `scontrol show job -o` prints it, what counts as
not run, the batch script as sbatch --wrap text, and which nodes an idle night takes (pure)."""

from __future__ import annotations

import os
import subprocess

import pytest

from burnin.parsers.slurm import parse_sinfo_nodes
from burnin.service.nightly_idle import JobView, as_wrap, not_run, parse_job
from burnin.service.nightly_plan import NodeView, plan_idle
from burnin.service.slurm import SlurmError

# scontrol show job -o, Slurm 22.05.8 (the lab's), a preempted idle test (cut after StdOut)
PREEMPTED = (
    "JobId=4 JobName=bringup-idle-run3 UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1 "
    "Nice=0 Account=(null) QOS=(null) JobState=PREEMPTED Reason=None Dependency=(null) Requeue=0 "
    "Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15 RunTime=00:00:03 TimeLimit=00:02:00 "
    "TimeMin=N/A SubmitTime=2026-11-24T07:51:02 EligibleTime=2026-11-24T07:51:02 "
    "Partition=y2ec825b-idle AllocNode:Sid=host:123 NodeList=node03 BatchHost=node03 NumNodes=1 "
    "NumCPUs=2 NumTasks=1 CPUs/Task=1 StdOut=/var/tmp/bringup-idle-run3-node03.out\n"
)
PENDING = "JobId=9 JobName=x JobState=PENDING Reason=Priority NodeList=(null) Partition=p\n"


def test_a_preempted_job_is_not_run():
    job = parse_job(PREEMPTED)
    assert job == JobView("PREEMPTED", "None", "node03")
    assert not_run(job)


def test_what_counts_as_run_and_as_not_run():
    assert not not_run(JobView("COMPLETED")) and not not_run(JobView("FAILED"))
    for state in ("CANCELLED", "TIMEOUT", "NODE_FAIL", "BOOT_FAIL", "DEADLINE"):
        assert not_run(JobView(state)), state
    assert not not_run(parse_job(PENDING))  # not ended yet: waited for
    assert parse_job(PENDING).node == ""


def test_output_without_a_job_state_is_an_error():
    with pytest.raises(SlurmError, match="no JobState"):
        parse_job("slurm_load_jobs error: Invalid job id specified\n")


def test_the_wrap_runs_the_script_in_bash_without_the_jobs_launcher_variables():
    script = 'echo "$BASH_VERSION" | cut -c1; env | grep -c "^SLURM\\|^PMI\\|^OMPI"; echo "$KEEP"; true\n'
    env = {
        "PATH": os.environ["PATH"],
        "SLURM_PROCID": "0",
        "PMIX_RANK": "0",
        "PMI_RANK": "1",
        "OMPI_X": "1",
        "KEEP": "k",
    }
    done = subprocess.run(
        ["/bin/sh", "-c", as_wrap(script)], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["5", "0", "k"]  # bash 5, no launcher variable, the rest kept


def test_a_script_holding_the_marker_still_ends_where_it_should():
    wrap = as_wrap("echo BRINGUP_IDLE_EOF\n")
    done = subprocess.run(["/bin/sh", "-c", wrap], capture_output=True, text=True, timeout=30)
    assert done.stdout == "BRINGUP_IDLE_EOF\n"


SINFO = """\
n01|idle|Unknown|Unknown|none
n02|allocated|Unknown|Unknown|none
n03|drained|root(0)|2026-11-24T03:01:02|bringup: gpu_inventory: 7 GPU(s) found
n04|idle|Unknown|Unknown|none
n05|idle|Unknown|Unknown|none
"""


def test_an_idle_night_takes_idle_golden_nodes_proven_longest_ago_first():
    from datetime import datetime

    slurm = {n.name: n for n in parse_sinfo_nodes(SINFO)}
    views = [
        NodeView("n01", "golden", slurm["n01"], datetime(2026, 11, 20)),
        NodeView("n02", "golden", slurm["n02"], datetime(2026, 11, 1)),  # busy
        NodeView("n03", "golden", slurm["n03"], datetime(2026, 11, 1)),  # drained
        NodeView("n04", "golden", slurm["n04"], datetime(2026, 11, 10)),
        NodeView("n05", "repair", slurm["n05"], None),  # not golden
    ]
    assert [p.node for p in plan_idle(views)] == ["n04", "n01"]
    assert [p.node for p in plan_idle(views, revalidate_pct=25)] == ["n04"]  # 25 % of 4 golden
