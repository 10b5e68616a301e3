"""`bringup lab fault` on a running lab node, checked by `burnin health` installed the way the
burnin_tools role installs it on a real node: a wheelhouse built from this checkout (`pip wheel
. pip`), the role's burnin.yml and health.yml run by real Ansible over SSH with the lab's
inventory (no index on the node, no hand-made install).

1. after the role, `burnin health --help` runs on the node, and a healthy node passes;
2. `bringup lab fault node01 add xid-79`: the next check FAILs on the Xid 79 lines it logged;
3. `remove`: the next check passes, and so does a fresh one (no cursor, the whole log judged);
4. an unknown fault name is refused, listing the known ones.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.main import main
from tests.lab.conftest import lab_inventory_dir, node_ssh, require_root
from tests.paths import REPO

pytestmark = pytest.mark.lab
NODE = "node01"
PROFILE = "h100-sxm-8x400g"
CHECK = "/usr/local/sbin/bringup-health-check"
STATE = "/var/lib/bringup/health"
ROLE_PLAY = """- hosts: {node}
  gather_facts: false
  tasks:
    - ansible.builtin.include_role: {{name: burnin_tools, tasks_from: burnin.yml}}
    - ansible.builtin.include_role: {{name: burnin_tools, tasks_from: health.yml}}
"""


@pytest.fixture(scope="module")
def fault_lab(tmp_path_factory):
    require_root()
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services

    root = tmp_path_factory.mktemp("faultlab")
    inv = lab_inventory_dir(root / "inventories")
    name = f"f{uuid.uuid4().hex[:7]}"
    rack = VirtualRack(name, root / "state", inv, services=lab_services)
    try:
        state = rack.up(1)
        yield {"state": state, "name": name, "root": root, "inv": inv}
    finally:
        rack.down()


def lab_fault(lab, *args: str):
    return CliRunner().invoke(
        main,
        [
            "--inventory-dir",
            str(lab["inv"]),
            "lab",
            "fault",
            *args,
            "--name",
            lab["name"],
            "--lab-dir",
            str(lab["root"] / "state"),
        ],
    )


def health(lab, state_dir: str = STATE) -> tuple[int, dict]:
    """The role's health-check program, as slurmd runs it (without the drain), and its result."""
    rc, _, err = node_ssh(lab["state"], NODE, f"{CHECK} --no-drain --state-dir {state_dir}", timeout=60)
    _, out, _ = node_ssh(lab["state"], NODE, f"cat {state_dir}/last.json")
    assert out, err
    return rc, json.loads(out)


def kernel_log(report: dict) -> dict:
    return next(c for c in report["checks"] if c["check"] == "kernel_log")


def test_the_role_installs_burnin_on_the_node_and_a_healthy_node_passes(fault_lab):
    root = fault_lab["root"]
    wheels = root / "wheelhouse"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(wheels), str(REPO), "pip"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (root / "play.yml").write_text(ROLE_PLAY.format(node=NODE))
    extra = {
        "bringup_profile": PROFILE,
        "burnin_tools_health": True,
        "burnin_tools_burnin_wheelhouse": str(wheels),
        "burnin_tools_health_profile_src": str(fault_lab["inv"] / "profiles" / f"{PROFILE}.yml"),
        "burnin_tools_health_slurm_client": False,  # the lab's repository has no slurm-client
    }
    (root / "vars.json").write_text(json.dumps(extra))
    play = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            fault_lab["state"].inventory,
            str(root / "play.yml"),
            "-e",
            f"@{root / 'vars.json'}",
        ],
        cwd=REPO / "playbooks",
        capture_output=True,
        text=True,
        timeout=600,
        env={"ANSIBLE_ROLES_PATH": str(REPO / "playbooks/roles"), "PATH": "/usr/bin:/bin", "HOME": str(root)},
    )
    assert play.returncode == 0, play.stdout[-4000:] + play.stderr[-2000:]
    rc, out, err = node_ssh(fault_lab["state"], NODE, "/opt/bringup/venv/bin/burnin health --help")
    assert rc == 0 and out.startswith("Usage: burnin health"), err
    rc, report = health(fault_lab)
    assert (rc, report["verdict"]) == (0, "PASS"), report


def test_an_xid_79_switched_on_fails_the_next_check_and_off_a_fresh_check_passes(fault_lab):
    res = lab_fault(fault_lab, NODE, "add", "xid-79")
    assert res.exit_code == 0, res.output
    assert "xid-79 on; faults now: xid-79" in res.output
    rc, report = health(fault_lab)
    kernel = kernel_log(report)
    assert (rc, report["verdict"], kernel["verdict"]) == (1, "FAIL", "FAIL"), report
    assert kernel["metrics"]["cursor"] == "continued"  # judged as new lines after the last check
    assert any("79" in f["message"] for f in kernel["findings"]), kernel

    res = lab_fault(fault_lab, NODE, "remove", "xid-79")
    assert res.exit_code == 0, res.output
    rc, report = health(fault_lab)
    assert (rc, report["verdict"]) == (0, "PASS"), report
    rc, fresh = health(fault_lab, "/var/lib/bringup/health-fresh")
    assert (rc, fresh["verdict"], kernel_log(fresh)["metrics"]["cursor"]) == (
        0,
        "PASS",
        "reset: no cursor: the first run",
    ), fresh


def test_an_unknown_fault_is_refused_naming_the_known_ones(fault_lab):
    res = lab_fault(fault_lab, NODE, "add", "xid-97")
    assert res.exit_code != 0
    assert "unknown fault 'xid-97'; did you mean 'xid-79'?" in res.output and "gpu-missing" in res.output
