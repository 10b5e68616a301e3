"""The ib stage through Slurm (burnin.stages.ib_slurm): the task line every node's task runs, the
answer it leaves in the spool, and a round handed to a Slurm job instead of SSH sessions.

The jobs themselves run on the lab's real Slurm (tests/lab/test_ib_slurm_lab.py); here the task
line is run by a real shell as srun would run it, and a round's scripts really run the lab's
ib_write_bw/perfquery stand-ins on this machine (two node roots talking over loopback TCP)."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from bringup.ssh.fanout import SshTarget
from burnin.checks.ib_load import IbPortInfo, judge_session, measure_session
from burnin.plan.ib_pairs import PortKey, plan_rounds
from burnin.stages import ib as ib_stage
from burnin.stages import ib_slurm
from burnin.stages.jobs import GroupContext, NodeJob
from burnin.stages.slurm_launch import NODE_PATH
from tests.ports import random_base_port


def run_task(directory: Path, node: str, limit_s: float, env: dict | None = None) -> None:
    """The task line under a real shell, as srun runs it on the node."""
    subprocess.run(
        ["/bin/sh", "-c", ib_slurm.task_line(directory, limit_s)],
        env={"SLURMD_NODENAME": node, "HOME": "/root", "SLURM_PROCID": "0", "PATH": "/x", **(env or {})},
        check=True,
        timeout=60,
    )


def test_the_task_runs_its_nodes_script_and_leaves_its_answer_whole(tmp_path: Path) -> None:
    (tmp_path / "gpu-0042.sh").write_text('echo "args:$*"; env; printf "no newline"\nexit 3\n')
    (tmp_path / "gpu-0043.sh").write_text("echo not mine\n")
    assert ib_slurm.read_answer(tmp_path, "gpu-0042", 60) is None  # nothing before the task ended
    run_task(tmp_path, "gpu-0042", 60)
    raw, error = ib_slurm.read_answer(tmp_path, "gpu-0042", 60)
    text = raw.decode()
    assert text.startswith("args:\n") and text.endswith("no newline") and error == ""
    env = dict(line.split("=", 1) for line in text.splitlines()[1:-1])
    # the environment of a root SSH session, not the job's (no SLURM_*, the PATH sshd gives root)
    assert {k: v for k, v in env.items() if k not in ("PWD", "SHLVL", "_", "LC_CTYPE")} == {
        "PATH": NODE_PATH,
        "HOME": "/root",
    }
    assert (tmp_path / "gpu-0042.rc").read_text().strip() == "3"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "gpu-0042.out",
        "gpu-0042.rc",
        "gpu-0042.sh",
        "gpu-0043.sh",
    ]  # no dot file left behind, the other node's script untouched
    assert ib_slurm.read_answer(tmp_path, "gpu-0043", 60) is None


def test_a_script_stopped_at_its_limit_answers_as_over_ssh(tmp_path: Path) -> None:
    (tmp_path / "n1.sh").write_text("echo started\nsleep 30\n")
    run_task(tmp_path, "n1", 1)
    raw, error = ib_slurm.read_answer(tmp_path, "n1", 1)
    assert raw == b"started\n" and error == "time limit of 1 s ran out"  # the SSH path's words


def test_an_answer_over_the_cap_is_cut_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "n1.out").write_bytes(b"x" * 100)
    (tmp_path / "n1.rc").write_text("0\n")
    raw, error = ib_slurm.read_answer(tmp_path, "n1", 60, cap=64)
    assert raw == b"x" * 64 and "over" in error and "cut" in error


@pytest.mark.parametrize(
    ("rc", "error"),
    [("0\n", ""), ("1\n", ""), ("124\n", "time limit of 90 s ran out"), ("137", "time limit of 90 s ran out")]
    + [(None, ""), ("", "")],
)
def test_only_a_stopped_script_is_an_error(rc, error) -> None:
    assert ib_slurm.answer_error(rc, 90) == error


def test_the_ib_stage_reads_the_setting_the_session_gives_it() -> None:
    assert ib_slurm.SETTING == ib_stage.NODE_SCRIPTS


# ---- a round handed to one Slurm job ------------------------------------------------------------


class LocalJob:
    """Plays the Slurm job on this machine: every node's script at once (a thread per task, as
    srun starts every task at once), each under its node's stand-in tools; the nodes in
    ``drained`` are left out with Slurm's reason, as SlurmScripts leaves them out."""

    def __init__(self, roots: dict[str, Path], drained: dict[str, str] | None = None):
        self.roots, self.drained = roots, drained or {}
        self.calls: list[tuple[str, dict[str, str], float]] = []

    def __call__(self, label: str, scripts: dict[str, str], limit_s: float) -> dict[str, tuple[bytes, str]]:
        self.calls.append((label, dict(scripts), limit_s))
        answers = {
            n: (b"", f"not run through Slurm: Slurm shows it drained: {why}")
            for n, why in self.drained.items()
        }

        def one(node: str) -> None:
            done = subprocess.run(
                ["bash", "-s"],
                input=scripts[node].encode(),
                capture_output=True,
                env={"PATH": f"{self.roots[node]}/usr/local/bin:/usr/bin:/bin"},
                timeout=limit_s,
            )
            answers[node] = (done.stdout, "")

        threads = [threading.Thread(target=one, args=(n,)) for n in scripts if n not in self.drained]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return answers


@pytest.fixture
def four_roots(tmp_path):
    from bringup.lab.standins import install_standins
    from bringup.lab.standins.sysfs import build_fake_sysfs

    roots = {}
    for node, faults in (("a", []), ("b", []), ("c", []), ("d", ["ib-port-degraded"])):
        root = tmp_path / node
        install_standins(root, faults)
        build_fake_sysfs(root, faults)
        roots[node] = root
    return roots


def test_a_round_through_slurm_is_one_job_of_every_node_with_the_ssh_scripts(four_roots) -> None:
    ports = {n: ["mlx5_2/1", "mlx5_3/1"] for n in four_roots}
    # The stand-in servers listen on the host: ports no lab and no outgoing connection uses.
    (round_,) = plan_rounds(ports, 1, base_tcp_port=random_base_port())
    infos = {PortKey(n, r): IbPortInfo(n, r.split("/")[0], 1, lid=1) for n in ports for r in ports[n]}
    hosts = dict.fromkeys(four_roots, "127.0.0.1")
    # The pair without d runs; d's pair is left out by Slurm (drained): a node that never reports.
    (with_d,) = [s for s in round_.sessions if "d" in (s.server, s.client) and s.rail == "mlx5_3/1"]
    gone = with_d.partner("d")
    ran = sorted(set(four_roots) - {"d", gone})
    job = LocalJob(four_roots, drained={"d": "psu swap", gone: "psu swap"})
    outputs = ib_stage.run_round_via(job, round_, hosts, infos, 1, {n: True for n in four_roots})

    ((label, scripts, limit),) = job.calls  # one job: every node of the round at once, no waves
    assert label == "round1" and sorted(scripts) == sorted(four_roots)
    assert limit == ib_stage.round_time_limit(1)
    for node, script in scripts.items():  # the scripts the SSH path sends that node
        plan = ib_stage.round_script(node, list(round_.sessions), infos, hosts, 1, True, token="0" * 16)
        token = script.split("@@burnin-frame ", 1)[1].split(" ", 1)[0]
        assert script == plan.script.replace("0" * 16, token)
    assert sorted(outputs.failed_nodes) == sorted({"d", gone})
    assert "Slurm shows it drained: psu swap" in outputs.failed_nodes["d"]
    for s in round_.sessions:
        server, client = outputs.ends[(s.server, s)], outputs.ends[(s.client, s)]
        if {s.server, s.client} <= set(ran):
            result = judge_session(1, s, measure_session(server, client), 388.0)
            assert result.passed and result.gbps == pytest.approx(392.34, abs=0.01)
        elif "d" in (s.server, s.client) or gone in (s.server, s.client):
            end = outputs.ends[("d", s)] if "d" in (s.server, s.client) else outputs.ends[(gone, s)]
            assert "drained" in end.error
    assert any("RDMA_Write Bidirectional BW Test" in chunk for chunk in outputs.evidence[ran[0]])


def test_the_stage_through_slurm_discovers_and_runs_each_round_as_one_job(four_roots) -> None:
    """The whole stage with its scripts run by jobs: discovery (really run on the stand-ins), then
    each round; here Slurm runs no round (the nodes went down after discovery): every node is
    UNKNOWN with Slurm's reason, as an unreachable node over SSH, never a pass."""
    from bringup.profiles.load import apply_overrides, load_profile
    from tests.paths import REPO

    profile, _ = load_profile("h100-sxm-8x400g", REPO / "inventories/profiles")
    profile = apply_overrides(profile, ["diag.ib_load_seconds=1", "diag.ib_rounds=2"])
    jobs = [NodeJob(n, profile, SshTarget(n, "127.0.0.1")) for n in four_roots]

    class DownAfterDiscovery(LocalJob):
        def __call__(self, label, scripts, limit_s):
            if label != "discover":
                self.drained = dict.fromkeys(scripts, "not responding")
            return super().__call__(label, scripts, limit_s)

    job = DownAfterDiscovery(four_roots)
    progress: list[str] = []
    results = ib_stage.run_ib_stage(GroupContext(jobs, None, {ib_stage.NODE_SCRIPTS: job}, progress.append))
    assert [label for label, _, _ in job.calls] == ["discover", "round1", "round2"]
    assert all(len(scripts) == 4 for _, scripts, _ in job.calls)
    assert not any("wave" in line for line in progress)
    for node, ((result, evidence),) in results.items():
        assert result.verdict.value == "UNKNOWN", (node, result.to_dict())
        assert "Slurm shows it drained: not responding" in evidence


def test_with_the_slurm_launcher_the_ib_stage_is_handed_slurm_jobs(tmp_path, monkeypatch) -> None:
    """`--launcher slurm` gives the ib stage the Slurm job runner for this run's spool; without
    it the stage gets nothing and opens SSH sessions."""
    from burnin.run.session import LaunchOptions, RackRunRequest, run_rack
    from burnin.stages import runner as runner_mod
    from tests.unit.burnin.golden.test_rules import RACK, FleetRack

    seen = []
    monkeypatch.setattr(
        runner_mod, "group_stages", lambda: {"ib": lambda ctx: seen.append(ctx.settings) or {}}
    )
    fleet = FleetRack(tmp_path)
    spool = tmp_path / "spool"
    run_rack(
        fleet.store,
        fleet.dir,
        RackRunRequest(RACK, ["ib"], launch=LaunchOptions("slurm", spool_dir=str(spool))),
    )
    run_rack(fleet.store, fleet.dir, RackRunRequest(RACK, ["ib"]))
    through_slurm, over_ssh = seen
    scripts = through_slurm[ib_stage.NODE_SCRIPTS]
    assert isinstance(scripts, ib_slurm.SlurmScripts) and scripts.settings.spool_dir == str(spool)
    assert ib_stage.NODE_SCRIPTS not in over_ssh
