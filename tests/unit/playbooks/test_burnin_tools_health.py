"""The burnin_tools role's health-check wiring, run by real Ansible on this machine (connection
local) into a temporary directory: the profile, the program Slurm runs, the slurm.conf block;
a second run changes nothing. The apt install of slurm-client and `scontrol reconfigure` are
switched off here (they would change this machine)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.paths import REPO
from tests.playbooks import run_play


def run_role(tmp_path: Path, extra: dict) -> subprocess.CompletedProcess:
    return run_play(
        tmp_path,
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.include_role:\n        name: burnin_tools\n        tasks_from: health.yml\n",
        extra,
    )


def test_the_role_installs_the_health_check_and_its_slurm_lines(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=r01\nNodeName=gpu[001-004] CPUs=224\n")
    extra = {
        "bringup_profile": "h100-sxm-8x400g",
        "burnin_tools_health_profile_src": str(REPO / "inventories/profiles/h100-sxm-8x400g.yml"),
        "burnin_tools_health_profile": str(tmp_path / "etc/bringup/profiles/h100-sxm-8x400g.yml"),
        "burnin_tools_health_state_dir": str(tmp_path / "var/lib/bringup/health"),
        "burnin_tools_health_program": str(tmp_path / "bringup-health-check"),
        "burnin_tools_health_args": "--container",
        "burnin_tools_health_slurm": True,
        "burnin_tools_health_slurm_conf": str(conf),
        "burnin_tools_health_interval": 120,
        "burnin_tools_health_slurm_client": False,
        "burnin_tools_health_reconfigure": False,
    }
    first = run_role(tmp_path, extra)
    assert first.returncode == 0, first.stdout + first.stderr
    program = (tmp_path / "bringup-health-check").read_text()
    assert program.startswith("#!/bin/sh\n")
    assert (
        f"exec /opt/bringup/venv/bin/burnin health --profile {tmp_path}/etc/bringup/profiles/h100-sxm-8x400g.yml "
        f"--state-dir {tmp_path}/var/lib/bringup/health --container" in program
    )
    assert (tmp_path / "bringup-health-check").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "var/lib/bringup/health").is_dir()
    assert (
        (tmp_path / "etc/bringup/profiles/h100-sxm-8x400g.yml")
        .read_text()
        .startswith((REPO / "inventories/profiles/h100-sxm-8x400g.yml").read_text()[:200])
    )
    text = conf.read_text()
    assert text.startswith("ClusterName=r01\nNodeName=gpu[001-004] CPUs=224\n")
    assert (
        "# BEGIN bringup health check (burnin_tools role)\n"
        f"HealthCheckProgram={tmp_path}/bringup-health-check\n"
        "HealthCheckInterval=120\n"
        "HealthCheckNodeState=ANY\n"
        "# END bringup health check (burnin_tools role)\n"
    ) in text
    again = run_role(tmp_path, extra)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout
    assert conf.read_text() == text
