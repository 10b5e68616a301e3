"""The bringup_controller role, run by real Ansible on this machine (connection local) into a
temporary directory: the nightly's service and timer, the daily lemon sweep's, the environment
file only root reads; a second run changes nothing. Enabling the timer (systemd) is switched off here."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.playbooks import BIN, run_play


def run_role(tmp_path: Path, extra: dict) -> subprocess.CompletedProcess:
    return run_play(
        tmp_path,
        "- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: bringup_controller\n",
        extra,
    )


def base_vars(tmp_path: Path) -> dict:
    return {
        "bringup_controller_burnin": str(BIN / "burnin"),
        "bringup_controller_db": "postgresql://bringup:s3cret@db.example/bringup",
        "bringup_controller_inventory_dir": str(tmp_path / "inventories"),
        "bringup_controller_report_dir": str(tmp_path / "reports"),
        "bringup_controller_unit_dir": str(tmp_path / "units"),
        "bringup_controller_env_file": str(tmp_path / "etc/nightly.env"),
        "bringup_controller_systemd": False,
    }


def test_the_role_installs_the_nightly_service_and_timer(tmp_path):
    (tmp_path / "units").mkdir()
    extra = base_vars(tmp_path) | {"bringup_controller_nightly_args": "--revalidate 5 --drain-timeout 2h"}
    first = run_role(tmp_path, extra)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "s3cret" not in first.stdout + first.stderr  # no_log
    service = (tmp_path / "units/bringup-nightly.service").read_text()
    assert (
        f"ExecStart={BIN / 'burnin'} nightly --all --report-dir {tmp_path / 'reports'} --revalidate 5 --drain-timeout 2h\n"
        in service
    )
    assert f"EnvironmentFile={tmp_path / 'etc/nightly.env'}\n" in service and "s3cret" not in service
    assert "Type=oneshot\n" in service and "SuccessExitStatus=1 2\n" in service
    timer = (tmp_path / "units/bringup-nightly.timer").read_text()
    assert "OnCalendar=*-*-* 02:00:00\n" in timer and "Persistent=true\n" in timer
    assert "WantedBy=timers.target\n" in timer
    env = tmp_path / "etc/nightly.env"
    assert "BRINGUP_DB=postgresql://bringup:s3cret@db.example/bringup\n" in env.read_text()
    assert env.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "reports").is_dir()
    second = run_role(tmp_path, extra)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "changed=0" in second.stdout, second.stdout


def test_named_racks_replace_all(tmp_path):
    (tmp_path / "units").mkdir()
    done = run_role(tmp_path, base_vars(tmp_path) | {"bringup_controller_racks": ["r01", "r02"]})
    assert done.returncode == 0, done.stdout + done.stderr
    service = (tmp_path / "units/bringup-nightly.service").read_text()
    assert f"nightly --rack r01 --rack r02 --report-dir {tmp_path / 'reports'}\n" in service


def test_the_service_is_a_valid_systemd_unit(tmp_path):
    (tmp_path / "units").mkdir()
    done = run_role(tmp_path, base_vars(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    proc = subprocess.run(
        [
            "systemd-analyze",
            "verify",
            str(tmp_path / "units/bringup-nightly.service"),
            str(tmp_path / "units/bringup-nightly.timer"),
            str(tmp_path / "units/bringup-lemons.service"),
            str(tmp_path / "units/bringup-lemons.timer"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    problems = [
        line
        for line in (proc.stdout + proc.stderr).splitlines()
        if "bringup-" in line  # other units of this machine are not ours to judge
    ]
    assert proc.returncode == 0 and not problems, proc.stdout + proc.stderr


def test_the_role_installs_the_daily_lemon_sweep_before_the_nightly(tmp_path):
    # The detector meets its targets as a daily --apply (benchmarks/lemons.py, "daily"): the
    # role schedules it that way, so a flag is in before the night's golden list is made.
    (tmp_path / "units").mkdir()
    done = run_role(tmp_path, base_vars(tmp_path) | {"bringup_controller_lemons_args": "--no-sacct"})
    assert done.returncode == 0, done.stdout + done.stderr
    service = (tmp_path / "units/bringup-lemons.service").read_text()
    assert f"ExecStart={BIN / 'burnin'} lemons --apply --no-sacct\n" in service
    assert f"EnvironmentFile={tmp_path / 'etc/nightly.env'}\n" in service and "Type=oneshot\n" in service
    timer = (tmp_path / "units/bringup-lemons.timer").read_text()
    assert "OnCalendar=*-*-* 01:30:00\n" in timer and "WantedBy=timers.target\n" in timer


def test_the_lemon_sweep_can_be_left_out(tmp_path):
    (tmp_path / "units").mkdir()
    done = run_role(tmp_path, base_vars(tmp_path) | {"bringup_controller_lemons": False})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "units/bringup-nightly.service").exists()
    assert not (tmp_path / "units/bringup-lemons.service").exists()
