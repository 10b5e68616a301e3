"""A lab node's reboot by its BMC (bringup/lab/reboot.py, bmc_server.BmcView's power watch)."""

from __future__ import annotations

import json
import os

from bringup.lab.bmc_server import BmcView
from bringup.lab.faults import kernel_log_faults
from bringup.lab.reboot import (
    BOOT_ID_FILE,
    faults_after_reboot,
    reboot_node,
    slurmd_restart_script,
    write_boot_id,
)
from bringup.lab.standins import FAULTS_FILE
from bringup.lab.state import LabNode, LabState

KERNEL_LOG = kernel_log_faults()


def test_a_reboot_clears_the_kernel_log_faults_and_those_switched_on_while_it_ran():
    assert {"xid-79", "xid-48-row-remap-pending"} <= KERNEL_LOG
    # xid-79 and nvidia-smi's gpu-hw-slowdown were switched on with `bringup lab fault`
    assert faults_after_reboot(["xid-79", "gpu-hw-slowdown"], [], KERNEL_LOG) == []


def test_the_faults_it_was_started_with_stay_but_their_kernel_log_lines_go():
    started = ["gpu-missing", "xid-48-row-remap-pending", "bmc-psu-failed"]
    now = ["gpu-missing", "xid-48-row-remap-pending", "bmc-psu-failed", "xid-79"]
    assert faults_after_reboot(now, started, KERNEL_LOG) == ["gpu-missing", "bmc-psu-failed"]


def test_a_fault_switched_off_before_the_reboot_does_not_come_back():
    assert faults_after_reboot([], ["gpu-hw-slowdown"], KERNEL_LOG) == []


def test_the_boot_id_is_rewritten_in_place_so_a_bind_mount_of_it_sees_the_new_one(tmp_path):
    path = tmp_path / "boot_id"
    path.write_text("0b1c9d1e-0000-4000-8000-000000000001\n")
    inode = os.stat(path).st_ino
    write_boot_id(path, "5e0d2b7c-0000-4000-8000-000000000002")
    assert path.read_text() == "5e0d2b7c-0000-4000-8000-000000000002\n"
    assert os.stat(path).st_ino == inode


def test_slurmd_is_restarted_only_where_the_node_has_its_slurm_conf():
    script = slurmd_restart_script("etc/slurm/slurm.conf", "/run/slurmd.pid")
    assert script.startswith("set -u\n[ -f /etc/slurm/slurm.conf ] || {")
    assert "setsid slurmd -f /etc/slurm/slurm.conf" in script and "cat /run/slurmd.pid" in script


def lab(tmp_path, faults: list[str]) -> LabState:
    state = LabState("t", "r1", "bt", str(tmp_path), "inv.yml", "2026-11-28T00:00:00+00:00")
    state.nodes.append(LabNode("node02", 1, "10.0.0.3", "02:00:00:00:00:02", "S2", "u2", "http://b", faults))
    state.save()
    root = tmp_path / "nodes" / "node02" / "root"
    (root / FAULTS_FILE).parent.mkdir(parents=True)
    stamped = {"faults": faults, "logged_at": {"xid-79": "2026-11-28T17:00:00,000001+00:00"}}
    (root / FAULTS_FILE).write_text(json.dumps(stamped))
    (root / BOOT_ID_FILE).write_text("0b1c9d1e-0000-4000-8000-000000000001\n")
    return state


def test_reboot_node_clears_the_faults_gives_a_new_boot_and_restarts_slurmd(tmp_path):
    lab(tmp_path, ["gpu-missing", "xid-79"])
    scripts = []

    def ssh(script: str):
        scripts.append(script)
        return True, "slurmd started again"

    lines = reboot_node(tmp_path, "node02", ["gpu-missing"], ssh=ssh)
    root = tmp_path / "nodes" / "node02" / "root"
    assert json.loads((root / FAULTS_FILE).read_text()) == {"faults": ["gpu-missing"]}
    assert LabState.load(tmp_path).nodes[0].faults == ["gpu-missing"]
    boot = (root / BOOT_ID_FILE).read_text().strip()
    assert boot != "0b1c9d1e-0000-4000-8000-000000000001" and len(boot) == 36
    assert len(scripts) == 1 and "setsid slurmd" in scripts[0]
    assert lines == [
        "node02: faults cleared by the reboot: xid-79",
        f"node02: new boot id {boot}",
        "node02: slurmd started again",
    ]


def test_reboot_node_says_when_slurmd_could_not_be_restarted(tmp_path):
    lab(tmp_path, [])
    lines = reboot_node(tmp_path, "node02", [], ssh=lambda _s: (False, "timeout connecting"))
    assert lines[0] == "node02: faults cleared by the reboot: none"
    assert lines[-1] == "node02: slurmd not restarted: timeout connecting"


def test_reboot_node_of_a_node_the_lab_does_not_have_does_nothing(tmp_path):
    lab(tmp_path, [])
    assert reboot_node(tmp_path, "node09", [], ssh=lambda _s: (True, "")) == [
        f"node09: not a node of the lab at {tmp_path}: nothing rebooted"
    ]


# -- the BMC's power watch ---------------------------------------------------------------------

SYSTEM = {"uuid": "u2", "name": "node02", "power_state": "Off"}


def view(states: list[str], boots: list[str]) -> BmcView:
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b"{}"]

    def power_of(uuid: str) -> str:
        return states.pop(0) if len(states) > 1 else states[0]

    return BmcView(app, [SYSTEM], power_of=power_of, on_boot=lambda s: boots.append(s["name"]))


def request(v: BmcView, method: str = "GET") -> None:
    environ = {"bringup.bmc.system": SYSTEM, "PATH_INFO": "/redfish/v1", "REQUEST_METHOD": method}
    v(environ, lambda status, headers, exc_info=None: None)


def test_power_landing_on_after_off_boots_the_node_once():
    boots: list[str] = []
    v = view(["Off", "Off", "On", "On", "On"], boots)  # an Off+On cycle seen by the client's polls
    for _ in range(5):
        request(v)
    assert boots == ["node02"]


def test_a_force_restart_passes_through_off_and_boots():
    boots: list[str] = []
    v = view(["Off", "On", "Off", "On"], boots)  # On, the POST sets Off at once, the restart lands On
    request(v)
    request(v)
    assert boots == ["node02"]  # powered on first
    request(v, "POST")
    request(v)
    assert boots == ["node02", "node02"]


def test_a_boot_hook_that_fails_does_not_fail_the_request():
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b"{}"]

    def boom(system):
        raise OSError("node root gone")

    states = ["On"]
    v = BmcView(app, [SYSTEM], power_of=lambda _u: states[0], on_boot=boom)
    answered = []
    environ = {"bringup.bmc.system": SYSTEM, "PATH_INFO": "/redfish/v1", "REQUEST_METHOD": "GET"}
    body = v(environ, lambda status, headers, exc_info=None: answered.append(status))
    assert answered == ["200 OK"] and b"".join(body) == b"{}"
