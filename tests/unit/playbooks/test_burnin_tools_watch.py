"""The burnin_tools role's watcher unit, rendered by real Ansible on this machine (connection
local) into a temporary directory; systemd is not touched (burnin_tools_watch_start false)."""

from __future__ import annotations

from tests.playbooks import run_play


def test_the_role_installs_the_watcher_unit(tmp_path):
    unit = tmp_path / "bringup-watch.service"
    extra = {
        "burnin_tools_health_burnin": "/opt/bringup/venv/bin/burnin",
        "burnin_tools_health_profile": "/etc/bringup/profiles/h100-sxm-8x400g.yml",
        "burnin_tools_health_state_dir": "/var/lib/bringup/health",
        "burnin_tools_watch_unit": str(unit),
        "burnin_tools_watch_args": "--interval 60",
        "burnin_tools_watch_start": False,
    }
    play = (
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.include_role:\n        name: burnin_tools\n        tasks_from: watch.yml\n"
    )
    first = run_play(tmp_path, play, extra)
    assert first.returncode == 0, first.stdout + first.stderr
    text = unit.read_text()
    assert (
        "ExecStart=/opt/bringup/venv/bin/burnin watch --profile /etc/bringup/profiles/h100-sxm-8x400g.yml "
        "--state-dir /var/lib/bringup/health --interval 60\n" in text
    )
    assert "Restart=always\n" in text and "MemoryMax=256M\n" in text and "CPUQuota=5%\n" in text
    assert "WantedBy=multi-user.target" in text
    again = run_play(tmp_path, play, extra)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout
