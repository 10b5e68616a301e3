"""The virtual rack as a whole: SSH into every node, Redfish GET of every system, the CLI on
its generated inventory, stand-in tools chosen by faults, and a teardown that leaves nothing."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
import redfish
from click.testing import CliRunner

from bringup.cli.main import main
from bringup.core.credentials import resolve
from bringup.inventory.rack import load_rack
from bringup.lab import network
from bringup.lab.rack import LabError, VirtualRack
from bringup.lab.services import lab_services
from tests.lab.conftest import lab_inventory_dir, node_ssh, require_root

pytestmark = pytest.mark.lab


def ssh(state, node, command: str) -> tuple[int, str]:
    rc, out, _ = node_ssh(state, node.name, command)
    return rc, out


def test_ssh_into_every_node(lab):
    _, state = lab
    for node in state.nodes:
        rc, out = ssh(
            state,
            node,
            "hostname; ip -o -4 addr show eth0; cat /sys/class/net/eth0/address; "
            "cat /etc/bringup-lab/identity.json",
        )
        assert rc == 0
        hostname, addr, mac, *ident = out.splitlines()
        assert hostname == node.name and f" {node.ip}/" in addr and mac == node.mac
        assert json.loads("\n".join(ident))["serial"] == node.serial


def test_redfish_get_of_every_system(lab):
    rack, state = lab
    inv, problems = load_rack(rack.inventory_path)
    assert inv is not None, problems
    for node in state.nodes:
        host = inv.host(node.name)
        client = redfish.redfish_client(
            base_url=host.bmc_address,
            username=host.bmc_username,
            password=resolve(host.bmc_password),
            timeout=10,
            max_retry=1,
        )
        client.login(auth="basic")
        members = client.get("/redfish/v1/Systems").dict["Members"]
        assert len(members) == 1  # each address is its own BMC
        system = client.get(members[0]["@odata.id"])
        assert system.status == 200
        assert system.dict["SerialNumber"] == node.serial and system.dict["UUID"] == node.uuid
        nics = client.get(system.dict["EthernetInterfaces"]["@odata.id"]).dict["Members"]
        macs = {client.get(m["@odata.id"]).dict["MACAddress"].lower() for m in nics}
        assert macs == {node.mac}
        with pytest.raises(redfish.rest.v1.InvalidCredentialsError):
            redfish.redfish_client(
                base_url=host.bmc_address, username="root", password="wrong", timeout=10, max_retry=1
            ).login(auth="basic")


def test_cli_on_the_generated_inventory(lab, tmp_path):
    rack, state = lab
    base = ["--inventory-dir", str(rack.inventory_path.parent), "--db", str(tmp_path / "fleet.db")]
    runner = CliRunner()
    check = runner.invoke(main, [*base, "inventory", "check", rack.name])
    assert check.exit_code == 0, check.output
    assert f"rack {rack.name} OK: 4 host(s)" in check.output
    assert runner.invoke(main, [*base, "inventory", "enroll", rack.name]).exit_code == 0
    listed = runner.invoke(main, [*base, "nodes", "list", "--rack", rack.name, "--json"])
    assert [n["name"] for n in json.loads(listed.output)] == [n.name for n in state.nodes]
    status = runner.invoke(
        main,
        [
            *base,
            "lab",
            "status",
            "--name",
            rack.name,
            "--lab-dir",
            str(Path(state.state_dir).parent),
            "--json",
        ],
    )
    assert status.exit_code == 0, status.output
    assert json.loads(status.output)["healthy"] is True


def test_inventory_holds_no_faults_and_no_secret(lab):
    rack, state = lab
    text = rack.inventory_path.read_text()
    password = (Path(state.state_dir) / "bmc-password").read_text().strip()
    assert password not in text and "fault" not in text.lower()


def test_standins_follow_the_fault_spec(lab):
    _, state = lab
    nodes = {n.name: n for n in state.nodes}
    rc, healthy = ssh(state, nodes["node01"], "nvidia-smi -q")
    assert rc == 0 and "NVIDIA H100 80GB HBM3" in healthy and "# SOURCE" not in healthy
    assert "535.183.01" in healthy
    # gpu-hw-slowdown shows in the throttle reasons sampled under load (0x88 = HW slowdown + brake).
    query = (
        "nvidia-smi --query-gpu=index,clocks_throttle_reasons.active,temperature.gpu,power.draw "
        "--format=csv,noheader,nounits -lms 1000"
    )
    _, slow = ssh(state, nodes["node02"], query)
    _, fine = ssh(state, nodes["node01"], query)
    assert "0x0000000000000088" in slow and "0x0000000000000088" not in fine
    _, ok_pci = ssh(state, nodes["node01"], "lspci -vv")
    _, bad_pci = ssh(state, nodes["node03"], "lspci -vv")
    assert "(downgraded)" in bad_pci and "Width x8 (downgraded)" not in ok_pci
    rc, _ = ssh(state, nodes["node01"], "nvidia-smi --no-such-flag")
    assert rc != 0


def _leftovers(prefix: str, state_dir: Path) -> list[str]:
    found = [f"netns {n}" for n in network.netns_names(prefix)]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    found += [f"link {line.split(':')[1].strip()}" for line in links.splitlines() if prefix in line]
    found += [f"mount {m}" for m in network.lab_mounts(prefix, state_dir)]
    procs = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    found += [
        f"process {line.strip()}" for line in procs.splitlines() if str(state_dir) in line or prefix in line
    ]
    return found


def test_down_leaves_nothing_even_after_a_crash(tmp_path):
    require_root()
    rack = VirtualRack(
        f"t{uuid.uuid4().hex[:8]}",
        tmp_path / "state",
        lab_inventory_dir(tmp_path / "inv"),
        services=lab_services,
    )
    state = rack.up(2)
    state_dir = Path(state.state_dir)
    assert _leftovers(rack.names.prefix, state_dir)  # the check sees a running lab
    with pytest.raises(LabError, match="already up"):
        rack.up(2)
    # A crash: the state file is lost; down must still find everything by the lab's prefix.
    (state_dir / "lab.json").unlink()
    rack.down()
    assert _leftovers(rack.names.prefix, state_dir) == []
    assert not state_dir.exists()
    assert rack.status()["up"] is False


def test_fault_spec_naming_missing_node_is_refused(tmp_path):
    require_root()
    spec = tmp_path / "faults.yml"
    spec.write_text("nodes:\n  node09: [gpu-hw-slowdown]\n")
    rack = VirtualRack(
        f"t{uuid.uuid4().hex[:8]}",
        tmp_path / "state",
        lab_inventory_dir(tmp_path / "inv"),
        services=lab_services,
    )
    with pytest.raises(LabError, match="node09"):
        rack.up(2, spec)
    assert network.netns_names(rack.names.prefix) == []
