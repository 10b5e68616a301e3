"""Launchers: settings from inventory variables, the mpirun and srun command lines, the hostfile,
the watchdog's decisions; and run_watched on local processes (no cluster needed)."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from burnin.stages.launch import (
    LaunchError,
    LaunchHost,
    LaunchSettings,
    Watchdog,
    build_launch,
    cancel_command,
    crashed_rank,
    group_settings,
    hostfile_text,
    launch_env,
    mpirun_command,
    run_watched,
    settings_from,
    srun_command,
)

HOSTS = [
    LaunchHost("gpu-a01", "10.0.0.1"),
    LaunchHost("gpu-a02", "10.0.0.2"),
    LaunchHost("gpu-a03", "10.0.0.3"),
]
ARGV = ["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "1"]


def _after(cmd: list[str], flag: str) -> str:
    return cmd[cmd.index(flag) + 1]


def _mca(cmd: list[str]) -> dict[str, str]:
    return {cmd[i + 1]: cmd[i + 2] for i, word in enumerate(cmd) if word == "--mca"}


# ---- settings ------------------------------------------------------------------------------------


def test_defaults_are_mpirun_one_rank_per_node():
    s = settings_from({})
    assert s.launcher == "mpirun" and s.ranks_per_node == 1 and s.partition is None


def test_settings_from_inventory_vars_with_coercion():
    s = settings_from(
        {
            "burnin_launcher": "srun",
            "burnin_ranks_per_node": "8",
            "burnin_launch_env": {"NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_DEBUG": "WARN"},
            "slurm_partition": "gpu",
            "slurm_reservation": "burnin",
            "slurm_gpus_per_node": 8,
            "slurm_mpi": "pmix",
            "mpirun_args": "--mca pml ucx",
            "burnin_line_buffered": "false",
            "burnin_startup_timeout_s": "90",
            "ansible_user": "ignored",
        }
    )
    assert (s.launcher, s.ranks_per_node, s.partition, s.reservation) == ("srun", 8, "gpu", "burnin")
    assert s.env == {"NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_DEBUG": "WARN"}
    assert s.gpus_per_node == 8 and s.srun_mpi == "pmix" and s.mpirun_args == ("--mca", "pml", "ucx")
    assert s.line_buffered is False and s.startup_timeout_s == 90.0


@pytest.mark.parametrize(
    "values",
    [
        {"burnin_launcher": "pdsh"},
        {"burnin_ranks_per_node": 0},
        {"burnin_ranks_per_node": "eight"},
        {"mpirun_mca": "btl tcp"},
    ],
)
def test_bad_settings_are_refused(values):
    with pytest.raises(LaunchError):
        settings_from(values)


def test_unknown_extra_setting_is_refused():
    with pytest.raises(LaunchError, match="unknown launch setting"):
        settings_from({}, ssh_keyfile="/k")


def test_group_settings_command_line_over_inventory():
    inventory = {
        "burnin_launcher": "mpirun",
        "slurm_partition": "batch",
        "nccl_test_args": "-b 1M",
        "profile": "x",
    }
    out = group_settings(inventory, burnin_launcher="srun", slurm_partition=None, slurm_reservation="r1")
    assert out == {
        "burnin_launcher": "srun",
        "slurm_partition": "batch",
        "slurm_reservation": "r1",
        "nccl_test_args": "-b 1M",
    }


# ---- mpirun ---------------------------------------------------------------------------------------


def test_hostfile_lists_each_host_once_with_its_slots():
    assert hostfile_text(HOSTS, 8) == "10.0.0.1 slots=8\n10.0.0.2 slots=8\n10.0.0.3 slots=8\n"


def test_mpirun_command_production_shape():
    s = settings_from(
        {
            "burnin_ranks_per_node": 8,
            "burnin_launch_env": {"NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1"},
            "mpirun_mca": {"pml": "ob1", "btl": "^openib"},
        },
        ssh_key="/keys/id ed25519",
        ssh_user="ops",
        ssh_port=2222,
    )
    cmd = mpirun_command(s, HOSTS, ARGV, "/tmp/h.hosts")
    assert cmd[0] == "mpirun" and "--allow-run-as-root" in cmd
    assert _after(cmd, "--hostfile") == "/tmp/h.hosts" and _after(cmd, "-np") == "24"
    assert _after(cmd, "--map-by") == "ppr:8:node" and _after(cmd, "--bind-to") == "none"
    mca = _mca(cmd)
    assert mca["pml"] == "ob1" and mca["btl"] == "^openib"
    rsh = mca["plm_rsh_args"]
    assert (
        "-i '/keys/id ed25519'" in rsh
        and "-l ops" in rsh
        and "-p 2222" in rsh
        and "StrictHostKeyChecking=no" in rsh
    )
    assert _after(cmd, "-x") == "NCCL_IB_HCA=mlx5_0:1,mlx5_1:1"
    assert cmd[-len(ARGV) :] == ARGV and "stdbuf" not in cmd  # Open MPI gives ranks a pty


def test_mpirun_lab_shape_from_lab_vars():
    lab_vars = {
        "mpirun_mca": {
            "btl": "tcp,self",
            "btl_tcp_if_include": "10.213.5.0/24",
            "oob_tcp_if_include": "10.213.5.0/24",
        },
        "burnin_line_buffered": True,
    }
    cmd = mpirun_command(settings_from(lab_vars), HOSTS[:2], ["all_reduce_perf"], "/h")
    assert _mca(cmd)["oob_tcp_if_include"] == "10.213.5.0/24" and _after(cmd, "-np") == "2"
    assert cmd[-4:] == ["stdbuf", "-oL", "-eL", "all_reduce_perf"]


# ---- srun -----------------------------------------------------------------------------------------


def test_srun_command_production_shape():
    s = settings_from(
        {
            "burnin_launcher": "srun",
            "burnin_ranks_per_node": 8,
            "slurm_partition": "gpu",
            "slurm_reservation": "acceptance",
            "slurm_gpus_per_node": 8,
            "slurm_mpi": "pmix",
            "slurm_time_limit_min": 90,
        }
    )
    cmd = srun_command(s, HOSTS, ARGV, "burnin-nccl-7-1")
    assert cmd[0] == "srun"
    for flag in (
        "--immediate=30",
        "--nodes=3",
        "--ntasks-per-node=8",
        "--nodelist=gpu-a01,gpu-a02,gpu-a03",  # Slurm node names, not addresses
        "--job-name=burnin-nccl-7-1",
        "--chdir=/tmp",
        "--partition=gpu",
        "--reservation=acceptance",
        "--gpus-per-node=8",
        "--mpi=pmix",
        "--time=90",
        "--kill-on-bad-exit=1",
    ):
        assert flag in cmd, flag
    assert cmd[-len(ARGV) - 3 :] == ["stdbuf", "-oL", "-eL", *ARGV]  # ranks write into a pipe


def test_srun_command_leaves_out_what_is_not_set():
    cmd = srun_command(settings_from({"burnin_launcher": "srun"}), HOSTS[:2], ARGV, "j")
    assert not [w for w in cmd if w.startswith(("--partition", "--reservation", "--gpus", "--mpi", "--time"))]


def test_cancel_is_scancel_by_job_name_for_srun_only():
    assert cancel_command(settings_from({"burnin_launcher": "srun"}), "burnin-nccl-1") == [
        "scancel",
        "--name=burnin-nccl-1",
    ]
    assert cancel_command(settings_from({}), "x") is None


def test_environment_srun_carries_rank_env_and_slurm_conf_mpirun_does_not():
    env_vars = {"burnin_launch_env": {"NCCL_SOCKET_IFNAME": "bond0"}, "slurm_conf": "/lab/slurm.conf"}
    srun_env = launch_env(settings_from({**env_vars, "burnin_launcher": "srun"}), {"PATH": "/usr/bin"})
    assert srun_env == {"PATH": "/usr/bin", "SLURM_CONF": "/lab/slurm.conf", "NCCL_SOCKET_IFNAME": "bond0"}
    mpirun_env = launch_env(settings_from(env_vars), {"PATH": "/usr/bin"})
    assert "NCCL_SOCKET_IFNAME" not in mpirun_env  # passed with -x instead


def test_build_launch():
    mpirun = build_launch(settings_from({}), HOSTS, ARGV, "j", "/tmp/x.hosts", {})
    assert mpirun.hostfile_path == "/tmp/x.hosts" and mpirun.hostfile_text.count("slots=1") == 3
    assert mpirun.cancel is None
    srun = build_launch(settings_from({"burnin_launcher": "srun"}), HOSTS, ARGV, "j", base_env={})
    assert srun.hostfile_text == "" and srun.cancel == ["scancel", "--name=j"]
    with pytest.raises(LaunchError, match="hostfile"):
        build_launch(settings_from({}), HOSTS, ARGV, "j", "", {})
    with pytest.raises(LaunchError):
        build_launch(settings_from({}), [], ARGV, "j", "/h", {})


# ---- the watchdog's decision ----------------------------------------------------------------------


def test_watchdog_fires_on_silence_not_on_a_slow_steady_stream():
    dog = Watchdog(idle_timeout_s=10)
    dog.start(100.0)
    for t in range(101, 160, 5):  # a line every 5 s for a minute: never silent for 10 s
        assert dog.expired(float(t)) is None
        dog.progress(float(t))
    assert dog.last_progress == 156.0
    assert dog.expired(165.0) is None and dog.wait_s(165.0) == pytest.approx(1.0)
    assert dog.expired(166.0) == "no new output line for 10 s"
    assert dog.silent_s(166.0) == pytest.approx(10.0)


def test_watchdog_startup_allowance_then_the_idle_timeout():
    dog = Watchdog(idle_timeout_s=5, startup_s=30)
    dog.start(0.0)
    assert dog.expired(29.0) is None
    assert dog.expired(30.0) == "no output line at all within 30 s of the start"
    dog = Watchdog(idle_timeout_s=5, startup_s=30)
    dog.start(0.0)
    dog.progress(20.0)  # the header came: from now on, 5 s of silence is a hang
    assert dog.expired(24.0) is None and dog.expired(25.0) == "no new output line for 5 s"


def test_watchdog_startup_lasts_until_the_line_that_ends_it():
    dog = Watchdog(idle_timeout_s=5, startup_s=30)
    dog.start(0.0)
    dog.progress(1.0, ends_startup=False)  # header and device lines: NCCL is still setting up
    assert dog.expired(30.0) is None
    assert dog.expired(31.0) == "no new output line for 30 s while starting up"
    dog.progress(31.0, ends_startup=True)  # the first result row
    assert dog.started_up and dog.expired(36.0) == "no new output line for 5 s"


def test_run_watched_reports_whether_start_up_was_over(tmp_path):
    cmd = [sys.executable, "-c", "import time; print('# header', flush=True); time.sleep(30)"]
    out = run_watched(
        _launch(cmd),
        idle_timeout_s=0.5,
        startup_s=1.0,
        kill_grace_s=0.5,
        ends_startup=lambda line: "row" in line,
    )
    assert out.killed == "no new output line for 1 s while starting up" and not out.started_up
    cmd = [sys.executable, "-c", "print('# header'); print('row 1')"]
    done = run_watched(_launch(cmd), idle_timeout_s=5, ends_startup=lambda line: "row" in line)
    assert done.rc == 0 and done.started_up


def test_watchdog_total_limit():
    dog = Watchdog(idle_timeout_s=10, max_total_s=30)
    dog.start(0.0)
    for t in range(1, 30):
        dog.progress(float(t))
    assert dog.expired(30.0) == "ran past its limit of 30 s"
    assert dog.wait_s(29.5) == pytest.approx(0.5)


# ---- run_watched on local processes ----------------------------------------------------------------


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def _launch(cmd: list[str], cancel: list[str] | None = None):
    from burnin.stages.launch import Launch

    return Launch(cmd, dict(os.environ), cancel)


def test_run_watched_lets_a_healthy_run_finish(tmp_path):
    cmd = _script(
        tmp_path,
        """
        import sys, time
        for i in range(5):
            print("row", i, flush=True)
            time.sleep(0.05)
        print("oops", file=sys.stderr, flush=True)
        sys.exit(3)
        """,
    )
    lines: list[str] = []
    out = run_watched(_launch(cmd), idle_timeout_s=30, on_line=lines.append)
    assert out.rc == 3 and not out.killed and not out.hung
    assert out.stdout.splitlines() == [f"row {i}" for i in range(5)] and lines == out.stdout.splitlines()
    assert out.stderr.strip() == "oops" and out.last_line == "row 4"


def test_run_watched_kills_a_silent_run_and_its_whole_process_group(tmp_path):
    marker = tmp_path / "child.pid"
    cmd = _script(
        tmp_path,
        f"""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a launcher that ignores SIGTERM
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(marker)!r}, "w").write(str(child.pid))
        print("header", flush=True)
        print("row 1", flush=True)
        time.sleep(600)
        """,
    )
    cancel_marker = tmp_path / "cancelled"
    cancel = [sys.executable, "-c", f"open({str(cancel_marker)!r}, 'w').write('yes')"]
    out = run_watched(_launch(cmd, cancel), idle_timeout_s=1.0, kill_grace_s=0.5)
    assert out.hung and out.rc is None and out.killed == "no new output line for 1 s"
    assert out.stdout.splitlines() == ["header", "row 1"] and out.last_line == "row 1"
    assert cancel_marker.read_text() == "yes"  # the cancel command ran (scancel for srun)
    child = int(marker.read_text())
    for _ in range(100):  # SIGKILL to the group reached the grandchild too
        if not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"child {child} of the killed launcher is still running")


def test_run_watched_writes_and_removes_the_hostfile(tmp_path):
    hostfile = tmp_path / "run.hosts"
    launch = build_launch(settings_from({}), HOSTS[:2], ["x"], "j", str(hostfile), dict(os.environ))
    from burnin.stages.launch import Launch

    seen = tmp_path / "seen"
    cmd = [sys.executable, "-c", f"import shutil; shutil.copy({str(hostfile)!r}, {str(seen)!r})"]
    out = run_watched(
        Launch(cmd, launch.env, None, launch.hostfile_text, launch.hostfile_path), idle_timeout_s=30
    )
    assert out.rc == 0
    assert seen.read_text() == "10.0.0.1 slots=1\n10.0.0.2 slots=1\n" and not hostfile.exists()


def test_default_settings_are_frozen():
    with pytest.raises(AttributeError):
        LaunchSettings().launcher = "srun"  # type: ignore[misc]


def test_run_watched_keeps_a_flood_to_its_bound_and_says_so():
    """A launch's output was kept whole, however much it printed."""
    from bringup.core.cut import MIB

    flood = (
        "echo '# nccl-tests'; head -c 20000000 /dev/zero | tr '\\0' z; echo; echo '# Avg bus bandwidth : 1'"
    )
    out = run_watched(_launch(["bash", "-c", flood]), idle_timeout_s=30, max_output=MIB)
    assert out.rc == 0 and len(out.stdout.encode()) < MIB + 200
    assert out.stdout.startswith("# nccl-tests\n") and out.stdout.endswith("# Avg bus bandwidth : 1\n")
    assert out.cut.startswith("output cut at 1.0 MB: 19.1 MB printed")


# A lab launch (the stand-in under `srun --mpi=pmix`, Open MPI 4.1.4, Slurm 22.05; docs/lab.md):
# rank 0 crashed inside MPI_Init, srun took the others down.
SRUN_CRASH = """\
[node01:04924] *** Process received signal ***
[node01:04924] Signal: Segmentation fault (11)
[node01:04924] *** End of error message ***
srun: error: node01: task 0: Segmentation fault
srun: launch/slurm: _step_signal: Terminating StepId=211.0
srun: error: node02: task 1: Terminated
srun: error: node03: task 2: Terminated
srun: Force Terminated StepId=211.0
"""


def test_crashed_rank_is_the_one_a_signal_killed_not_those_srun_took_down():
    assert crashed_rank(SRUN_CRASH) == "node01: task 0: Segmentation fault"
    later = "srun: error: node04: task 3: Terminated\nsrun: error: node03: task 2: Aborted\n"
    assert crashed_rank(later) == "node03: task 2: Aborted"


def test_crashed_rank_from_mpirun():
    text = (
        "mpirun noticed that process rank 2 with PID 0 on node node03 exited on signal 11 "
        "(Segmentation fault).\n"
    )
    assert crashed_rank(text) == "node03: rank 2: Segmentation fault"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "srun: error: node01: task 0: Exited with exit code 1\nsrun: error: node02: task 1: Terminated\n",
        "srun: error: node02: task 1: Killed\n",
        "ORTE was unable to reliably start one or more daemons.\n",
    ],
)
def test_no_crashed_rank_when_no_rank_died_of_a_crash(text):
    assert crashed_rank(text) is None
