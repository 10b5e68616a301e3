"""`bringup configure` against 4 fake nodes over real SSH, from the lab's own apt repository.

node03's driver package fails its postinst (fault driver-install-fails), node04 stops answering
(fault unreachable). One test walks the whole story, in the order an operator lives it (the
runs depend on each other, and a lab costs seconds to start):

1. first run: node01/02 configured with versions recorded, node03 failed with role, task and
   dpkg's message, node04 recorded unreachable; Ansible's output kept on the run;
2. second run on the configured nodes: changed=0 on every host;
3. the profile's driver pin moves (with the fabric manager, which must match it): --check
   reports it would change the driver and fabric manager roles and changes nothing;
4. the real run installs the new version, and only those roles report changes.

Steps 3 and 4 run on node01 alone: they are about the pin, and each host costs CPU time the
two-core test machine does not have to spare.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from bringup.cli.main import main
from bringup.fleet.lifecycle import State
from bringup.fleet.models import Run
from bringup.fleet.store import FleetStore
from bringup.lab.nodes import ed25519_keypair
from bringup.lab.rack import record_host_keys
from bringup.ssh.hostkey_records import record
from tests.lab.conftest import lab_inventory_dir, node_ssh, require_root

pytestmark = pytest.mark.lab
HEALTHY = ["node01", "node02"]
OLD, NEW = "535.183.01", "535.216.01"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    require_root()
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services

    root = tmp_path_factory.mktemp("configure")
    inventory_dir = lab_inventory_dir(root / "inventories")
    faults = root / "faults.yml"
    faults.write_text("nodes:\n  node03: [driver-install-fails]\n  node04: [unreachable]\n")
    rack = VirtualRack(f"c{uuid.uuid4().hex[:8]}", root / "state", inventory_dir, services=lab_services)
    try:
        state = rack.up(4, faults)
        yield rack, state, inventory_dir, root / "fleet.db"
    finally:
        rack.down()


def bringup(inventory_dir: Path, db: Path, *args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["--db", str(db), "--inventory-dir", str(inventory_dir), *args])
    out = result.stdout
    assert out.lstrip().startswith("{"), result.output
    return result.exit_code, json.loads(out)


def provisioned(store: FleetStore, state) -> None:
    """The lab's nodes are reachable from the start: record them as provisioning would."""
    for node in state.nodes:
        store.enroll(node.name, state.name, "h100-sxm-8x400g", rack_unit=node.index + 1)
        store.transition(node.name, State.DISCOVERED, "lab: nodes are pre-provisioned")
        store.transition(node.name, State.PROVISIONING, "lab: nodes are pre-provisioned")
        store.update_node(node.name, ip=node.ip)
        store.transition(node.name, State.PROVISIONED, "lab: nodes are pre-provisioned")
    record_host_keys(store, state)  # as provisioning records them: Ansible checks them


def installed(state, node: str, package: str) -> str:
    rc, out, err = node_ssh(state, node, f"dpkg-query -W -f '${{Version}}' {package}")
    assert rc == 0, err
    return out


def results(summary: dict) -> dict[str, dict]:
    return {n["node"]: n for n in summary["nodes"]}


def test_configure_story(lab):
    rack, state, inventory_dir, db = lab
    store = FleetStore.open(str(db))
    provisioned(store, state)
    configure = ("configure", "--rack", state.name, "--json")

    # 1. First run: two configured, one failed, one unreachable; exit status says so.
    rc, summary = bringup(inventory_dir, db, *configure)
    assert rc == 1
    first = results(summary)
    assert {n: r["result"] for n, r in first.items()} == {
        "node01": "configured",
        "node02": "configured",
        "node03": "failed",
        "node04": "unreachable",
    }
    for name in HEALTHY:
        node = store.get_node(name)
        assert node.state == "configured"
        packages = node.hardware["software"]["packages"]
        assert (
            packages["nvidia-driver-535"] == installed(state, name, "nvidia-driver-535") == f"{OLD}-0ubuntu1"
        )
        assert packages["datacenter-gpu-manager"] == "1:3.3.8"
        assert packages["nvidia-container-toolkit"] == "1.16.2-1"
        assert node.hardware["software"]["reboot_required"] is True  # the lab may not reboot
        assert set(first[name]["changed_roles"]) >= {
            "base",
            "nvidia_driver",
            "fabric_manager",
            "burnin_tools",
        }
    # Services as systemd would hold them, and the runtime wired to the NVIDIA runtime.
    rc, out, _ = node_ssh(
        state, "node01", "systemctl is-enabled chrony nvidia-dcgm; systemctl is-active nvidia-dcgm"
    )
    assert out.split() == ["enabled", "enabled", "active"]
    rc, out, _ = node_ssh(
        state, "node01", "cat /etc/docker/daemon.json /etc/apt/sources.list.d/bringup-lab.sources"
    )
    assert '"nvidia-container-runtime"' in out and f"URIs: http://{state.gateway}:" in out

    failed = store.get_node("node03")
    assert failed.state == "failed"
    ev = store.history("node03")[-1]
    assert ev.to_state == "failed"
    assert ev.details["role"] == "nvidia_driver" and ev.details["task"] == "Install the pinned driver"
    assert "dpkg: error processing package nvidia-driver-535 (--configure)" in ev.reason
    assert "post-installation script subprocess returned error exit status 1" in ev.reason
    assert any("Bad return status for module build" in line for line in ev.details["errors"])

    unreachable = store.get_node("node04")
    assert unreachable.state == "provisioned"
    assert store.history("node04")[-1].kind == "unreachable"
    # Ansible's line names the host it could not reach over SSH. Which line it is depends on a race
    # in its ssh plugin: ssh's own "connect to host <ip> port 22: No route to host", or, when the
    # plugin's write to the dead ssh process fails first, "Data could not be sent to remote host
    # '<ip>'. Make sure this host can be reached over SSH: [Errno 32] Broken pipe".
    message = first["node04"]["message"]
    node04_ip = next(n.ip for n in state.nodes if n.name == "node04")
    assert node04_ip in message and "ssh" in message.lower(), message

    with store.reading() as s:
        run = s.execute(select(Run).where(Run.id == summary["run"])).scalar_one()
    assert run.kind == "configure" and run.status == "failed"
    assert "PLAY RECAP" in run.evidence and "node03" in run.evidence

    # 2. No change: every host reports changed=0.
    nodes = ("--nodes", ",".join(HEALTHY))
    rc, summary = bringup(inventory_dir, db, *configure, *nodes)
    assert rc == 0
    for name, r in results(summary).items():
        assert (r["result"], r["changed"], r["changed_roles"]) == ("configured", 0, []), name

    # 3. The driver pin moves; the fabric manager must follow it exactly.
    profile = inventory_dir / "profiles" / "h100-sxm-8x400g.yml"
    text = profile.read_text()
    profile.write_text(
        text.replace(f'driver: "{OLD}"', f'driver: "{NEW}"').replace(
            f'fabric_manager: "{OLD}"', f'fabric_manager: "{NEW}"'
        )
    )
    before = store.get_node("node01")
    one = ("--nodes", "node01")
    rc, summary = bringup(inventory_dir, db, *configure, *one, "--check")
    assert rc == 0
    r = results(summary)["node01"]
    assert r["result"] == "checked"
    assert r["changed_roles"] == ["fabric_manager", "nvidia_driver"]
    node = store.get_node("node01")
    assert (node.state, node.hardware) == (before.state, before.hardware)
    assert installed(state, "node01", "nvidia-driver-535") == f"{OLD}-0ubuntu1"  # check mode changed nothing
    assert store.history("node01")[-1].kind == "configure-check"

    # 4. The real run installs the new pin; only the driver and fabric manager roles change.
    rc, summary = bringup(inventory_dir, db, *configure, *one)
    assert rc == 0
    r = results(summary)["node01"]
    assert r["result"] == "configured"
    assert r["changed_roles"] == ["fabric_manager", "nvidia_driver"]
    assert installed(state, "node01", "nvidia-driver-535") == f"{NEW}-0ubuntu1"
    assert installed(state, "node01", "nvidia-fabricmanager-535") == f"{NEW}-1"
    software = store.get_node("node01").hardware["software"]
    assert software["packages"]["nvidia-driver-535"] == f"{NEW}-0ubuntu1"
    assert software["reboot_required"] is True

    # 5. Ansible checks host keys against the store's: a node whose recorded key is not the one
    # its sshd shows (re-imaged, or another host at its address) is unreachable, untouched.
    real = store.get_node("node02").ssh_host_keys
    other = " ".join(ed25519_keypair()[1].decode().split()[:2])
    record(store, "node02", [other], "provision run 99 (pxe)")
    rc, summary = bringup(inventory_dir, db, *configure, "--nodes", "node02")
    record(store, "node02", real, "test: restored")
    r = results(summary)["node02"]
    assert rc == 1 and r["result"] == "unreachable", r
    assert "Make sure this host can be reached over ssh" in r["message"], r
    with store.reading() as s:
        run = s.execute(select(Run).where(Run.id == summary["run"])).scalar_one()
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in run.evidence  # ssh's own words, kept
    assert "Host key verification failed" in run.evidence
    assert store.get_node("node02").state == "configured"
    store.close()
