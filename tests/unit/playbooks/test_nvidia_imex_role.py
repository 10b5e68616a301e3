"""The nvidia_imex role, run by real Ansible on this machine (connection local) into a temporary
directory: the node list is every tray of the rack's inventory group, one address per line; a
second run changes nothing; a changed rack rewrites it. Package and service (apt, systemd) are
switched off here; the site playbook's wiring is checked on its text."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.paths import REPO
from tests.playbooks import run_play

PLAY = "- hosts: tray02\n  gather_facts: false\n  roles:\n    - role: nvidia_imex\n"


def run_role(tmp_path: Path, trays: dict[str, str | None], extra: dict) -> subprocess.CompletedProcess:
    """The role on tray02 of an inventory shaped like bringup configure's (one group per rack)."""
    hosts = {
        name: {"ansible_connection": "local"} | ({"ansible_host": ip} if ip else {})
        for name, ip in trays.items()
    }
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"r07": {"hosts": hosts}}}}))
    return run_play(tmp_path, PLAY, extra, inventory)


def base_vars(tmp_path: Path) -> dict:
    return {
        "nvidia_imex_enabled": True,
        "nvidia_imex_version": "570.133.20",
        "nvidia_driver_version": "570.133.20",
        "nvidia_imex_config_dir": str(tmp_path / "etc/nvidia-imex"),
        "nvidia_imex_install": False,
        "nvidia_imex_systemd": False,
    }


def test_the_node_list_is_every_tray_of_the_rack_and_a_second_run_changes_nothing(tmp_path):
    trays = {"tray01": "10.1.0.11", "tray02": "10.1.0.12", "tray03": None}
    first = run_role(tmp_path, trays, base_vars(tmp_path))
    assert first.returncode == 0, first.stdout + first.stderr
    nodes = (tmp_path / "etc/nvidia-imex/nodes_config.cfg").read_text()
    # One address per line; a host with no address is listed by its name.
    assert nodes == "10.1.0.11\n10.1.0.12\ntray03\n"
    assert "changed=2" in first.stdout  # the directory and the node list
    second = run_role(tmp_path, trays, base_vars(tmp_path))
    assert second.returncode == 0, second.stdout + second.stderr
    assert "changed=0" in second.stdout, second.stdout


def test_a_tray_readdressed_rewrites_the_list_and_notifies_the_restart(tmp_path):
    trays = {"tray01": "10.1.0.11", "tray02": "10.1.0.12"}
    assert run_role(tmp_path, trays, base_vars(tmp_path)).returncode == 0
    trays["tray01"] = "10.1.0.21"
    again = run_role(tmp_path, trays, base_vars(tmp_path))
    assert again.returncode == 0, again.stdout + again.stderr
    assert (tmp_path / "etc/nvidia-imex/nodes_config.cfg").read_text() == "10.1.0.21\n10.1.0.12\n"
    assert "RUNNING HANDLER [nvidia_imex : Restart IMEX]" in again.stdout


def test_imex_at_another_version_than_the_driver_is_refused(tmp_path):
    extra = base_vars(tmp_path) | {"nvidia_imex_version": "570.124.06"}
    proc = run_role(tmp_path, {"tray02": "10.1.0.12"}, extra)
    assert proc.returncode != 0
    assert "does not match driver 570.133.20" in proc.stdout
    assert not (tmp_path / "etc/nvidia-imex/nodes_config.cfg").exists()


def test_the_package_is_the_driver_branch_at_the_pinned_version():
    defaults = yaml.safe_load((REPO / "playbooks/roles/nvidia_imex/defaults/main.yml").read_text())
    assert defaults["nvidia_imex_package"] == "nvidia-imex-{{ nvidia_imex_version.split('.')[0] }}"
    assert defaults["nvidia_imex_package_version"] == "{{ nvidia_imex_version }}-*"
    assert defaults["nvidia_imex_service"] == "nvidia-imex"
    assert defaults["nvidia_imex_enabled"] is False


def test_site_yml_runs_imex_on_imex_enabled_and_reports_its_package():
    site = (REPO / "playbooks/site.yml").read_text()
    play = yaml.safe_load(site)[0]
    roles = {r["role"]: r for r in play["roles"]}
    assert roles["nvidia_imex"]["when"] == "nvidia_imex_enabled | bool"
    names = [r["role"] for r in play["roles"]]
    assert names.index("nvidia_driver") < names.index("nvidia_imex")  # IMEX checks the driver
    assert "[nvidia_imex_package] if nvidia_imex_enabled | bool" in site


def test_the_list_bringup_configure_gives_wins_over_the_group(tmp_path):
    """bringup configure passes the whole rack (also trays this run leaves out) as nvidia_imex_nodes."""
    extra = base_vars(tmp_path) | {"nvidia_imex_nodes": ["10.1.0.11", "10.1.0.12", "10.1.0.13"]}
    proc = run_role(tmp_path, {"tray02": "10.1.0.12"}, extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    nodes = (tmp_path / "etc/nvidia-imex/nodes_config.cfg").read_text()
    assert nodes == "10.1.0.11\n10.1.0.12\n10.1.0.13\n"
