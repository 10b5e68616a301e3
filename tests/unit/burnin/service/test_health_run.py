"""`burnin health` on this machine, end to end: real processes (the lab's stand-in tools, which
print real recorded outputs), the budget, the state dir, the metrics file, and the Slurm edge
when no Slurm answers (the drain itself runs against the lab's real Slurm: tests/lab)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.lab.standins import install_standins
from burnin.cli import main as burnin_main
from burnin.result import Verdict
from burnin.service.health import EXIT_CANNOT_START, EXIT_DRAIN, EXIT_IN_SERVICE
from burnin.service.health_run import HealthOptions, run_health
from burnin.service.state import CURSOR_FILE, LAST_RESULT, METRICS_FILE
from tests.profiles import shipped

PROFILE = shipped()


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """tools(faults) puts the stand-ins for these faults first on PATH."""

    def put(*faults: str, extra: dict[str, str] | None = None) -> Path:
        root = tmp_path / ("root-" + "-".join(faults or ("healthy",)))
        install_standins(root, list(faults))
        bins = [root / "usr" / "local" / "bin"]
        if extra:
            first = tmp_path / "first"
            first.mkdir(exist_ok=True)
            for name, script in extra.items():
                (first / name).write_text(script)
                (first / name).chmod(0o755)
            bins.insert(0, first)
        monkeypatch.setenv("PATH", ":".join(str(b) for b in bins) + ":/usr/bin:/bin")
        return root

    return put


def options(tmp_path: Path, **kw) -> HealthOptions:
    defaults = dict(node="node07", state_dir=tmp_path / "state", textfile_dir=tmp_path / "textfile")
    return HealthOptions(PROFILE, **{**defaults, **kw})


def test_a_healthy_node_passes_and_keeps_its_state(tools, tmp_path):
    tools()
    report = run_health(options(tmp_path))
    verdicts = {r.check: r.verdict for r, _ in report.results}
    assert set(verdicts.values()) == {Verdict.PASS}, report.to_dict()
    assert report.exit_code == EXIT_IN_SERVICE and report.slurm_action == "none"
    last = json.loads((tmp_path / "state" / LAST_RESULT).read_text())
    assert last["node"] == "node07" and last["verdict"] == "PASS" and not last["drain"]
    assert [c["check"] for c in last["checks"]][0] == "gpu_inventory"
    cursor = json.loads((tmp_path / "state" / CURSOR_FILE).read_text())
    assert cursor["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert cursor["version"] == 2 and len(cursor["last"]) == 4 and cursor["last"][-1][0] == 0
    metrics = (tmp_path / "textfile" / METRICS_FILE).read_text()
    assert 'bringup_health_check_verdict{node="node07",check="gpu_ecc",verdict="PASS"} 1' in metrics
    assert 'bringup_health_verdict{node="node07",verdict="FAIL"} 0' in metrics
    # the second run sees no new kernel-log lines
    again = run_health(options(tmp_path))
    kernel = next(r for r, _ in again.results if r.check == "kernel_log")
    assert kernel.verdict is Verdict.PASS and kernel.reason == "no new kernel-log lines"


def test_a_new_boot_or_an_older_cursor_judges_the_whole_log_and_says_so(tools, tmp_path):
    tools("xid-79")
    boot = tmp_path / "boot_id"
    boot.write_text("1d8c0a4e-5f0b-4a43-9bde-1f2b7a6a2f10\n")
    first = run_health(options(tmp_path, drain=False, boot_id_file=boot))
    assert first.decision.check == "kernel_log"  # the Xid 79, judged once
    again = run_health(options(tmp_path, drain=False, boot_id_file=boot))
    kernel = next(r for r, _ in again.results if r.check == "kernel_log")
    assert (kernel.verdict, kernel.metrics["cursor"]) == (Verdict.PASS, "continued")
    boot.write_text("5e0d2b7c-0000-4000-8000-000000000001\n")  # rebooted, the same log (a stand-in)
    rebooted = run_health(options(tmp_path, drain=False, boot_id_file=boot))
    kernel = next(r for r, _ in rebooted.results if r.check == "kernel_log")
    assert kernel.verdict is Verdict.FAIL and kernel.metrics["cursor"].startswith("reset: new boot")
    (tmp_path / "state" / CURSOR_FILE).write_text('{"kernel_log": "2031-01-18T09:14:07,074591+00:00"}\n')
    older = run_health(options(tmp_path, drain=False, boot_id_file=boot))
    kernel = next(r for r, _ in older.results if r.check == "kernel_log")
    assert kernel.verdict is Verdict.FAIL and kernel.metrics["cursor"].startswith(
        "reset: the cursor was a time stamp"
    )
    assert json.loads((tmp_path / "state" / CURSOR_FILE).read_text())["version"] == 2  # migrated


def test_a_missing_gpu_fails_and_asks_for_a_drain(tools, tmp_path):
    tools("gpu-missing")
    report = run_health(options(tmp_path, drain=False))
    d = report.decision
    assert (d.verdict, d.drain, d.check) == (Verdict.FAIL, True, "gpu_inventory")
    assert (
        d.reason == "bringup: gpu_inventory: 7 GPU(s) found, the profile has 8 (nvidia-smi says 7 attached)"
    )
    assert report.exit_code == EXIT_DRAIN and report.slurm_action.startswith("not drained: --no-drain")
    metrics = (tmp_path / "textfile" / METRICS_FILE).read_text()
    assert (
        'check="gpu_inventory",verdict="FAIL"} 1' in metrics
        and 'bringup_health_drain{node="node07"} 1' in metrics
    )


def test_no_drain_without_the_nodes_slurm_state(tools, tmp_path):
    """scontrol cannot reach a controller (or is absent): draining blind could overwrite an
    operator's reason, so the node is not drained; the exit status still says drain."""
    # What this host's real scontrol prints with no slurm.conf and no DNS SRV record (it takes
    # seconds to give up, hence the copy of its output).
    failing = "#!/bin/bash\necho 'scontrol: fatal: Could not establish a configuration source' >&2\nexit 1\n"
    tools("gpu-missing", extra={"scontrol": failing})
    report = run_health(options(tmp_path))
    assert report.slurm_action == "not drained: the node's Slurm state could not be read"
    assert report.problems and report.problems[0].startswith("slurm: ")
    assert report.exit_code == EXIT_DRAIN


def test_a_command_over_the_budget_is_unknown_and_killed(tools, tmp_path):
    pid_file = tmp_path / "dmesg.pid"
    tools(extra={"dmesg": f"#!/bin/bash\necho $$ > {pid_file}\nexec sleep 60\n"})
    report = run_health(options(tmp_path, budget_s=1))
    kernel = next(r for r, _ in report.results if r.check == "kernel_log")
    assert kernel.verdict is Verdict.UNKNOWN
    assert kernel.reason == "still running at the end of the health budget (1 s)"
    assert report.decision.verdict is Verdict.UNKNOWN and not report.decision.drain  # profile default
    assert not Path(f"/proc/{pid_file.read_text().strip()}").exists()  # killed, not left behind
    assert not (tmp_path / "state" / CURSOR_FILE).exists()  # no line judged: no cursor


def test_unknown_drains_when_the_profile_says(tools, tmp_path):
    tools(extra={"ibstat": "#!/bin/bash\nexit 127\n"})
    profile = shipped("health.drain_on_unknown=true")
    report = run_health(HealthOptions(profile, node="node07", state_dir=tmp_path / "s", drain=False))
    assert report.decision.drain and report.decision.reason.startswith("bringup: ib_ports: unknown: ")


def test_an_unwritable_state_dir_is_a_problem_not_a_lost_verdict(tools, tmp_path):
    tools("gpu-missing")
    blocked = tmp_path / "state"
    blocked.write_text("a file where the directory should be")
    report = run_health(options(tmp_path, drain=False))
    assert report.exit_code == EXIT_DRAIN
    assert any(p.startswith(f"state dir {blocked}") for p in report.problems)


def test_the_command_exit_codes(tools, tmp_path):
    tools("gpu-missing")
    runner = CliRunner()
    base = [
        "health",
        "--state-dir",
        str(tmp_path / "s"),
        "--textfile-dir",
        str(tmp_path / "t"),
        "--node",
        "n1",
    ]
    profile = str(Path("inventories/profiles/h100-sxm-8x400g.yml").resolve())
    res = runner.invoke(burnin_main, [*base, "--profile", profile, "--no-drain", "--json"])
    assert res.exit_code == EXIT_DRAIN, res.output
    assert json.loads(res.stdout)["failed_check"] == "gpu_inventory"
    res = runner.invoke(burnin_main, [*base, "--profile", str(tmp_path / "nope.yml")])
    assert res.exit_code == EXIT_CANNOT_START and "cannot start" in res.output


def scontrol_seeing(tmp_path: Path, line: str) -> tuple[str, Path]:
    """An `scontrol` that prints ``line`` (a real `scontrol show node -o` line) for `show node`
    and logs every call, so a test sees each thing health asked Slurm to do."""
    (tmp_path / "node.txt").write_text(line + "\n")
    log = tmp_path / "scontrol.log"
    script = (
        f'#!/bin/bash\necho "$*" >> {log}\n'
        f'if [ "$1 $2" = "show node" ]; then cat {tmp_path / "node.txt"}; fi\n'
    )
    return script, log


def drained_node01() -> str:
    """node01 as Slurm 22.05 printed it, drained by a health check (bringup: gpu_inventory: ...)."""
    from tests.unit.burnin.parsers._samples import load

    return next(
        ln
        for ln in load("slurm_22_05_scontrol_show_node_o.txt").splitlines()
        if ln.startswith("NodeName=node01 ")
    )


def test_a_node_healthy_again_is_never_resumed(tools, tmp_path):
    """Drained by an earlier health check, the node now passes: health leaves the drain (only the
    nightly resumes, after a re-test); it does not even ask Slurm."""
    script, log = scontrol_seeing(tmp_path, drained_node01())
    tools(extra={"scontrol": script})
    report = run_health(options(tmp_path, node="node01"))
    assert report.decision.verdict is Verdict.PASS and report.exit_code == EXIT_IN_SERVICE
    assert report.slurm_action == "none" and not log.exists()


def test_a_drain_by_the_nightly_is_left_as_it_is(tools, tmp_path):
    """A failure on a node the nightly drained: health reads the node and changes nothing."""
    line = drained_node01().split(" Reason=")[0] + " Reason=bringup nightly run 7 [root@2026-11-24T06:41:04]"
    script, log = scontrol_seeing(tmp_path, line)
    tools("gpu-missing", extra={"scontrol": script})
    report = run_health(options(tmp_path, node="node01"))
    assert report.exit_code == EXIT_DRAIN
    assert report.slurm_action == "left alone: already drained by this project: bringup nightly run 7"
    assert log.read_text().splitlines() == ["show node -o node01"]


HUNG_SMI = "#!/bin/bash\nexec sleep 60\n"  # nvidia-smi wedged on a GPU: it never answers


def test_a_check_unknown_several_runs_in_a_row_drains_with_its_own_reason(tools, tmp_path):
    """A hung nvidia-smi made the gpu checks UNKNOWN at every run, and the node stayed
    schedulable for ever (UNKNOWN drains only with health.drain_on_unknown). Now a check UNKNOWN
    health.unknown_streak runs in a row (3 by default) drains, with a reason that says so; the
    count is in the metrics, and a run that judges the check again starts it over."""
    tools(extra={"nvidia-smi": HUNG_SMI})
    streaks = []
    for _ in range(3):
        report = run_health(options(tmp_path, budget_s=0.5, drain=False))
        streaks.append(report.to_dict()["unknown_streak"]["gpu_inventory"])
        metrics = (tmp_path / "textfile" / METRICS_FILE).read_text()
        assert (
            f'bringup_health_unknown_streak{{node="node07",check="gpu_inventory"}} {streaks[-1]}' in metrics
        )
    assert streaks == [1, 2, 3]
    d = report.decision
    assert (d.verdict, d.drain, d.check) == (Verdict.UNKNOWN, True, "gpu_inventory")
    assert d.reason == (
        "bringup: gpu_inventory: UNKNOWN 3 runs in a row: still running at the end of the health budget (0.5 s)"
    )
    assert report.exit_code == EXIT_DRAIN
    assert 'bringup_health_unknown_streak{node="node07",check="ib_ports"} 0' in metrics
    tools()  # nvidia-smi answers again
    report = run_health(options(tmp_path, budget_s=0.5, drain=False))
    assert report.to_dict()["unknown_streak"]["gpu_inventory"] == 0 and not report.decision.drain
    tools(extra={"nvidia-smi": HUNG_SMI})
    report = run_health(options(tmp_path, budget_s=0.5, drain=False))
    assert report.to_dict()["unknown_streak"]["gpu_inventory"] == 1 and not report.decision.drain


def test_the_unknown_streak_is_the_profiles_setting(tools, tmp_path):
    tools(extra={"nvidia-smi": HUNG_SMI})
    profile = shipped("health.unknown_streak=1")
    report = run_health(
        HealthOptions(profile, node="node07", state_dir=tmp_path / "s", budget_s=0.5, drain=False)
    )
    assert report.decision.drain and "UNKNOWN 1 runs in a row" in report.decision.reason
    assert report.to_dict()["unknown_streak_limit"] == 1
    never = shipped("health.unknown_streak=0")  # 0: a streak never drains (the old behaviour)
    for _ in range(2):
        report = run_health(
            HealthOptions(never, node="node07", state_dir=tmp_path / "n", budget_s=0.5, drain=False)
        )
    assert not report.decision.drain and report.to_dict()["unknown_streak"]["gpu_inventory"] == 2
