"""`bringup lab fail-node` without a lab: squeue lines, what became of each job (on the real sacct
capture), what it prints, its refusals, and its steps against a simulated Slurm and node."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bringup.cli.main import main as bringup_main
from bringup.lab import node_fail
from bringup.lab.network import LabError
from bringup.lab.node_fail import (
    JobOutcome,
    NodeFailResult,
    QueuedJob,
    fail_node,
    lab_node,
    lab_state,
    outcomes,
    parse_squeue,
    report_lines,
    still_running,
)
from bringup.ssh.fanout import RemoteResult
from burnin.parsers import ParseError
from burnin.parsers.sacct import SACCT_FIELDS, parse_sacct
from burnin.service.slurm import SlurmError
from tests.unit.bringup.lab.test_slurm import _state
from tests.unit.burnin.parsers._samples import load

SACCT = parse_sacct(load("slurm_22_05_sacct_parsable2_node_fail_requeued.txt"))


def _lab(slurm: bool = True, accounting: bool = True):
    state = _state("rackx", "a1b2c3")
    if slurm:
        state.inventory_vars = {"slurm_conf": "/labs/rackx/slurm/slurm.conf", "slurm_accounting": accounting}
    return state


# -- pure -------------------------------------------------------------------------------------


def test_squeue_lines_name_last_so_a_bar_in_a_name_stays():
    jobs = parse_squeue("12|RUNNING|node02|train-a\n\n13|PENDING||a|b\n9_1|RUNNING|node[01-03]|arr\n")
    assert jobs == [
        QueuedJob("12", "RUNNING", "node02", "train-a"),
        QueuedJob("13", "PENDING", "", "a|b"),
        QueuedJob("9_1", "RUNNING", "node[01-03]", "arr"),
    ]
    assert parse_squeue("") == []


@pytest.mark.parametrize("line", ["12 RUNNING node02 x", "12|running|node02|x", "|RUNNING|node02|x"])
def test_a_squeue_line_of_another_shape_is_refused(line):
    with pytest.raises(ParseError, match="squeue line 1"):
        parse_squeue(line)


def test_outcomes_on_the_real_capture_requeued_single_and_multi_node():
    # 4: set DOWN under it, requeued (then cancelled while pending); 5: slurmd killed; 7: 3 nodes
    jobs = [
        QueuedJob("4", "RUNNING", "node03", "victim"),
        QueuedJob("5", "RUNNING", "node03", "dies"),
        QueuedJob("7", "RUNNING", "node[01-03]", "train3"),
    ]
    assert still_running("node03", jobs, SACCT, [], accounting=True) == []
    assert outcomes("node03", jobs, SACCT, []) == [
        JobOutcome("4", "victim", "node03", "NODE_FAIL", True, "CANCELLED"),
        JobOutcome("5", "dies", "node03", "NODE_FAIL", False),
        JobOutcome("7", "train3", "node[01-03]", "NODE_FAIL", False),
    ]


def test_a_requeued_job_still_pending_in_squeue_is_said_requeued():
    jobs = [QueuedJob("2", "RUNNING", "node[01-03]", "big")]
    rows = [r for r in SACCT if r.job_id == "7"]
    rows = [type(r)(**{**r.__dict__, "job_id": "2"}) for r in rows]
    pending = [QueuedJob("2", "PENDING", "", "big")]
    (out,) = outcomes("node02", jobs, rows, pending)
    assert (out.ended, out.requeued, out.now) == ("NODE_FAIL", True, "PENDING")
    assert out.line() == "job 2 big on node[01-03]: NODE_FAIL, requeued (now PENDING)"


def test_not_ended_until_sacct_has_the_run_and_its_other_nodes_are_done():
    jobs = [QueuedJob("7", "RUNNING", "node[01-03]", "train3")]
    assert still_running("node02", jobs, [], jobs, accounting=True) == ["7"]  # not in sacct yet
    # NODE_FAIL recorded, the job still completing on a partner: a requeue comes after that
    completing = [QueuedJob("7", "COMPLETING", "node03", "train3")]
    assert still_running("node02", jobs, SACCT, completing, accounting=True) == ["7"]
    assert still_running("node02", jobs, SACCT, [QueuedJob("7", "NODE_FAIL", "node[01-03]", "")], True) == []


def test_without_accounting_squeue_alone_says_it():
    jobs = [QueuedJob("3", "RUNNING", "node02", "a"), QueuedJob("4", "RUNNING", "node02", "b")]
    assert still_running("node02", jobs, [], jobs, accounting=False) == ["3", "4"]
    after = [QueuedJob("3", "NODE_FAIL", "node02", "a"), QueuedJob("4", "PENDING", "", "b")]
    assert still_running("node02", jobs, [], after, accounting=False) == []
    assert outcomes("node02", jobs, [], after) == [
        JobOutcome("3", "a", "node02", "NODE_FAIL", False),
        JobOutcome("4", "b", "node02", "", True, "PENDING"),
    ]
    assert JobOutcome("5", "c", "node02", "", False).line() == (
        "job 5 c on node02: ended (no accounting: sacct cannot say how)"
    )


def test_what_it_prints():
    job = QueuedJob("12", "RUNNING", "node02", "train-b")
    result = NodeFailResult(
        "node02", "down", "node02 hung", [job], [JobOutcome("12", "train-b", "node02", "NODE_FAIL", False)],
        ended_s=0.41, back_s=1.25, returned_by="resumed (scontrol update State=RESUME)", state="idle",
    )  # fmt: skip
    assert report_lines(result) == [
        "node02: set DOWN (reason 'node02 hung'); 1 job(s) were running on it:",
        "  job 12 train-b on node02: NODE_FAIL",
        "node02: jobs ended 0.4 s after the failure",
        "node02: back in service (idle) 1.2 s after the failure: resumed (scontrol update State=RESUME)",
    ]
    idle = NodeFailResult("node01", "slurmd", "", back_s=40.0, returned_by="slurmd restarted", state="idle")
    assert report_lines(idle)[0] == (
        "node01: slurmd killed (-9), Slurm marked it DOWN; no job was running on it, so none ended"
    )


# -- refusals ---------------------------------------------------------------------------------


def test_refusals_before_anything_is_done(tmp_path):
    with pytest.raises(
        LabError, match=r"^lab 'gone' is not up \(no .*lab.json\): run `bringup lab up --name gone`"
    ):
        lab_state(tmp_path / "gone", "gone")
    with pytest.raises(LabError, match="^lab 'rackx' runs without Slurm"):
        lab_node(_lab(slurm=False), "node02", "down", None)
    with pytest.raises(
        LabError, match=r"^lab 'rackx' has no node 'node09' \(its nodes: node01, node02, node03\)"
    ):
        lab_node(_lab(), "node09", "down", None)
    with pytest.raises(LabError, match="^--reason is for --how down"):
        lab_node(_lab(), "node02", "slurmd", "hung")
    with pytest.raises(LabError, match="^--how 'reboot': one of down, slurmd"):
        lab_node(_lab(), "node02", "reboot", None)
    assert lab_node(_lab(), "node02", "down", "hung").ip == "10.213.7.12"


def test_the_cli_refuses_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr("os.geteuid", lambda: 0)  # the lab commands need root; these refuse before
    base = ["--inventory-dir", str(tmp_path), "lab", "fail-node", "node02", "--lab-dir", str(tmp_path)]
    res = CliRunner().invoke(bringup_main, [*base, "--name", "nolab"])
    assert res.exit_code == 1 and res.output.strip().splitlines() == [
        f"error: lab 'nolab' is not up (no {(tmp_path / 'nolab' / 'lab.json').resolve()}): "
        "run `bringup lab up --name nolab` first"
    ]
    res = CliRunner().invoke(bringup_main, [*base, "--how", "slurmd", "--reason", "x"])
    assert res.exit_code == 1 and res.output.count("\n") == 1 and "--reason is for --how down" in res.output
    res = CliRunner().invoke(bringup_main, [*base, "--how", "reboot"])
    assert res.exit_code == 2 and "'reboot' is not one of 'down', 'slurmd'" in res.output


def test_the_cli_timeout_default_is_the_librarys():
    from bringup.lab.cli import lab_fail_node

    (timeout,) = [p for p in lab_fail_node.params if p.name == "timeout_s"]
    assert timeout.default == node_fail.DEFAULT_TIMEOUT_S


# -- the steps, against a simulated Slurm --------------------------------------------------------


class FakeSlurm:
    """slurmctld as the lab shows it: DOWN ends the node's jobs NODE_FAIL (at once, or after
    ``timeout_polls`` sinfo calls once slurmd is dead); ReturnToService=2 returns it when its
    slurmd answers (``rts``: at once), else a RESUME does."""

    def __init__(
        self, node_state="allocated", rts=True, jobs=(("12", "node02", "train-b"),), accounting=True
    ):
        self.node_state, self.rts, self.accounting = node_state, rts, accounting
        self.jobs = {j: ["RUNNING", n, name] for j, n, name in jobs}
        self.slurmd = True
        self.dead_polls = 0
        self.calls: list[list[str]] = []
        self.sacct_lag = 1  # sacct calls before the NODE_FAIL record shows
        self.completing = 0  # squeue calls a requeued job shows COMPLETING before PENDING
        self.requeue: set[str] = set()

    def _node_fail(self):
        self.node_state = "down"
        for job in self.jobs.values():
            if job[0] == "RUNNING":
                job[0] = "NODE_FAIL"

    def __call__(self, argv):
        self.calls.append(argv)
        cmd = argv[0]
        if cmd == "sinfo":
            if not self.slurmd and self.node_state != "down":
                self.dead_polls += 1
                if self.dead_polls >= 3:  # SlurmdTimeout
                    self._node_fail()
            flag = "*" if not self.slurmd else ""
            reason = (
                "Not responding" if not self.slurmd else ("hung" if self.node_state == "down" else "none")
            )
            return f"node01|idle|Unknown|Unknown|none\nnode02|{self.node_state}{flag}|root(0)|2026-11-24T09:30:00|{reason}\n"
        if cmd == "squeue":
            ended = {j for j, job in self.jobs.items() if job[0] == "NODE_FAIL"} & self.requeue
            rows = [f"{j}|{s}|{n}|{name}" for j, (s, n, name) in self.jobs.items() if j not in ended]
            for j in ended:
                self.completing -= 1
                rows.append(
                    f"{j}|{'COMPLETING' if self.completing >= 0 else 'PENDING'}|node01|{self.jobs[j][2]}"
                )
            if "-w" in argv:
                rows = [r for r in rows if "|RUNNING|" in r]
            return "\n".join(rows) + "\n"
        if cmd == "sacct":
            assert self.accounting
            self.sacct_lag -= 1
            header = "|".join(SACCT_FIELDS)
            rows = [
                f"{j}|{j}|{name}|rackx|{s}|0:0|{n}|1|2026-11-24T09:30:00|2026-11-24T09:30:01|Unknown|00:00:01|None"
                for j, (s, n, name) in self.jobs.items()
                if self.sacct_lag < 0 or s == "RUNNING"
            ]
            return "\n".join([header, *rows]) + "\n"
        if cmd == "scontrol":
            state = argv[3]
            if state == "State=DOWN":
                self._node_fail()
                if self.rts:
                    self.node_state = "idle"
            elif state == "State=RESUME":
                if self.node_state != "down":
                    raise SlurmError(
                        "`scontrol update NodeName=node02` exited 1: Invalid node state specified"
                    )
                self.node_state = "idle"
            return ""
        raise AssertionError(argv)

    def ssh(self, node, script):
        if script.startswith("kill -9"):
            self.slurmd = False
        elif "slurmd -f" in script:
            self.slurmd = True
            if self.node_state == "down":
                self.node_state = "idle"
        return RemoteResult(node.name, rc=0)


def _run(fake: FakeSlurm, how="down", reason=None, timeout_s=60.0, accounting=True):
    now = [0.0]
    lines: list[str] = []

    def sleep(s):
        now[0] += s

    result = fail_node(
        _lab(accounting=accounting), "node02", how, reason, timeout_s, progress=lines.append,
        slurm=fake, ssh=fake.ssh, clock=lambda: now[0], sleep=sleep,
    )  # fmt: skip
    return result, lines


def test_down_ends_the_job_node_fail_and_rts_returns_the_node():
    fake = FakeSlurm()
    result, lines = _run(fake, reason="node02 hung")
    assert ["scontrol", "update", "NodeName=node02", "State=DOWN", "Reason=node02 hung"] in fake.calls
    assert not any("State=RESUME" in a for a in fake.calls)
    assert [o.line() for o in result.outcomes] == ["job 12 train-b on node02: NODE_FAIL"]
    assert result.returned_by == "ReturnToService=2 returned it once its slurmd answered"
    assert result.state == "idle" and result.ended_s == pytest.approx(0.5)  # one poll: sacct lagged
    assert lines[0] == "node02: running job(s) before: 12 (train-b)"


def test_the_report_waits_for_a_requeue_that_comes_after_completing():
    fake = FakeSlurm(jobs=(("7", "node[01-02]", "train2"),))
    fake.requeue, fake.completing = {"7"}, 5
    result, _ = _run(fake)
    assert result.ended_s == pytest.approx(0.5)  # NODE_FAIL in sacct: ended, while still completing
    assert result.back_s == pytest.approx(2.0)  # back once it left COMPLETING
    assert [o.line() for o in result.outcomes] == [
        "job 7 train2 on node[01-02]: NODE_FAIL, requeued (now PENDING)"
    ]


def test_down_resumes_a_node_rts_left_down():
    fake = FakeSlurm(rts=False, accounting=False)
    result, _ = _run(fake, accounting=False)
    assert ["scontrol", "update", "NodeName=node02", "State=RESUME"] in fake.calls
    assert not any(a[0] == "sacct" for a in fake.calls)
    assert result.returned_by == "resumed (scontrol update State=RESUME)"
    assert result.outcomes == [JobOutcome("12", "train-b", "node02", "NODE_FAIL", False)]  # from squeue


def test_slurmd_waits_for_slurmctld_to_mark_it_down_then_restarts_slurmd():
    fake = FakeSlurm(node_state="idle", jobs=())
    result, _ = _run(fake, how="slurmd")
    assert fake.slurmd and fake.dead_polls == 3 and result.jobs == [] and result.state == "idle"
    assert result.returned_by.startswith("slurmd restarted")
    assert report_lines(result)[0].endswith("no job was running on it, so none ended")


def test_a_timeout_says_what_is_missing_and_returns_the_node():
    fake = FakeSlurm()
    fake.dead_polls = -(10**6)  # slurmctld never notices
    with pytest.raises(LabError) as err:
        _run(fake, how="slurmd", timeout_s=5)
    assert str(err.value) == (
        "node02: Slurm did not end its jobs within 5 s of the failure (still running: job(s) 12); "
        "slurmd restarted; ReturnToService=2 returns the node once it registers"
    )
    assert fake.slurmd  # not left dead


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ("down", r"^node02 is down in Slurm already \(hung\): nothing runs there$"),
        ("drained", r"^node02 is drained \(no reason\): an operator's drain is not undone; resume it first$"),
    ],
)
def test_a_node_down_or_drained_already_is_refused(state, message):
    fake = FakeSlurm(node_state=state)
    with pytest.raises(LabError, match=message):
        _run(fake)
    assert not any(a[0] == "scontrol" for a in fake.calls)
