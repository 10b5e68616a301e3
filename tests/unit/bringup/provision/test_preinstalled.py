"""The preinstalled backend: nodes that already run their OS, checked over SSH and recorded
provisioned (bringup/provision/preinstalled.py), through `bringup provision` and a real store;
the SSH fan-out is replaced by what nodes would print."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.main import main
from bringup.core.credentials import write_secret_file
from bringup.fleet.store import FleetStore
from bringup.provision import preinstalled
from bringup.ssh.fanout import RemoteResult
from tests.paths import REPO

NODES = ("node01", "node02", "node03")
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHxL9M1bH2dWz1p8mH0r4QZk0yq2Q4m6m3j5b9v7c8d9"


def mac(i: int) -> str:
    return f"02:bb:00:00:00:{i:02x}"


def probe_output(i: int, *, serial: str | None = None) -> str:
    """What PROBE_SCRIPT prints on a lab node: DMI from the lab, one veth, its host key."""
    return (
        f"product_serial={serial or f'LAB{i:03d}'}\nchassis_serial=\nproduct_uuid=\nhostname=node{i:02d}\n"
        f"nic=virtual eth0 {mac(i)}\nhostkey={KEY} root@node{i:02d}\n"
    )


def write_rack(base: Path, extra_vars: str = "") -> Path:
    inv = base / "inventories"
    inv.mkdir()
    shutil.copytree(REPO / "inventories" / "profiles", inv / "profiles")
    write_secret_file(inv / "bmc.pass", "s3cret-pass\n")
    (inv / "known_hosts").write_text("".join(f"10.0.0.{10 + i} {KEY}\n" for i in range(1, 4)))
    hosts = "".join(
        f"    {n}: {{bmc_address: 'http://10.9.0.{10 + i}:8000', rack_unit: {i}, ansible_host: 10.0.0.{10 + i}}}\n"
        for i, n in enumerate(NODES, 1)
    )
    (inv / "lab.yml").write_text(
        "all:\n  vars:\n    profile: h100-sxm-8x400g\n    bmc_vendor: generic\n    bmc_username: root\n"
        "    bmc_password: file:bmc.pass\n    bmc_allow_http: true\n    provisioner: preinstalled\n"
        "    ansible_user: root\n"
        "    ansible_ssh_common_args: -o UserKnownHostsFile={{ inventory_dir }}/known_hosts\n"
        f"{extra_vars}  hosts:\n{hosts}"
    )
    return inv


@pytest.fixture
def rack(tmp_path):
    inv = write_rack(tmp_path)
    store = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    for i, name in enumerate(NODES, 1):
        store.enroll(name, "lab", "h100-sxm-8x400g", bmc_address=f"http://10.9.0.{10 + i}:8000", rack_unit=i)
        store.record_discovery(
            name,
            f"LAB{i:03d}",
            macs=[mac(i)],
            hardware={"provisioning_nic": {"mac": mac(i)}, "system": {"serial": f"LAB{i:03d}"}},
        )
    yield tmp_path, inv, store
    store.close()


def provision(tmp_path: Path, inv: Path, *args: str):
    return CliRunner().invoke(
        main,
        [
            "--db",
            str(tmp_path / "fleet.db"),
            "--inventory-dir",
            str(inv),
            "provision",
            "--rack",
            "lab",
            *args,
        ],
    )


class FakeNodes:
    """Stands in for the SSH fan-out: what each node prints, or the error reaching it gives."""

    def __init__(self, answers: dict[str, RemoteResult]):
        self.answers = answers
        self.targets: list = []
        self.scripts: list[str] = []

    def __call__(self, targets, script, time_limit, *a, **kw):
        self.targets += list(targets)
        self.scripts.append(script)
        for t in targets:
            yield self.answers[t.name]


def answers(**override: RemoteResult) -> dict[str, RemoteResult]:
    out = {n: RemoteResult(n, stdout=probe_output(i).encode(), rc=0) for i, n in enumerate(NODES, 1)}
    out.update(override)
    return out


def test_dry_run_plans_every_node_without_pxe_settings(rack):
    tmp_path, inv, store = rack
    res = provision(tmp_path, inv, "--dry-run")
    assert res.exit_code == 0, res.output
    assert "pxe_interface" not in res.output
    for i, name in enumerate(NODES, 1):
        line = next(line for line in res.output.splitlines() if line.startswith(name))
        assert f"log in to root@10.0.0.{10 + i}:22" in line and "known_hosts" in line
    assert {n.state for n in store.list_nodes()} == {"discovered"}


def test_nodes_that_answer_are_provisioned_with_their_host_keys(rack, monkeypatch):
    tmp_path, inv, store = rack
    nodes = FakeNodes(answers())
    monkeypatch.setattr(preinstalled, "fan_out", nodes)
    res = provision(tmp_path, inv)
    assert res.exit_code == 0, res.output
    assert {n.name: n.state for n in store.list_nodes()} == dict.fromkeys(NODES, "provisioned")
    node = store.get_node("node02")
    assert node.ssh_host_keys == [KEY]
    assert node.ip == "10.0.0.12" and node.hostname == "node02"
    assert node.hardware["provision"]["mode"] == "preinstalled"
    # checked against the inventory's known_hosts, never accepted on first sight
    assert {t.known_hosts_file for t in nodes.targets} == {str(inv / "known_hosts")}
    assert all(t.pinned is None for t in nodes.targets)


def test_a_node_that_does_not_answer_fails_with_the_reason(rack, monkeypatch):
    tmp_path, inv, store = rack
    down = RemoteResult("node03", error="unreachable: SSH to root@10.0.0.13:22 timed out")
    monkeypatch.setattr(preinstalled, "fan_out", FakeNodes(answers(node03=down)))
    res = provision(tmp_path, inv)
    assert res.exit_code == 1, res.output
    node = store.get_node("node03")
    assert node.state == "failed"
    assert "timed out" in " ".join(e.reason for e in store.history("node03"))
    assert store.get_node("node01").state == "provisioned"


def test_a_node_showing_another_serial_is_not_provisioned(rack, monkeypatch):
    """The address SSH answers on must be the box its BMC describes."""
    tmp_path, inv, store = rack
    swapped = RemoteResult("node02", stdout=probe_output(2, serial="LAB999").encode(), rc=0)
    monkeypatch.setattr(preinstalled, "fan_out", FakeNodes(answers(node02=swapped)))
    res = provision(tmp_path, inv)
    assert res.exit_code == 1, res.output
    assert store.get_node("node02").state == "failed"
    assert "LAB999" in " ".join(e.reason for e in store.history("node02"))


def test_recorded_host_keys_are_what_the_node_must_show(rack, monkeypatch):
    tmp_path, inv, store = rack
    other = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPq3v0sWm2Y1X9aJrPz8bQf6k7nLhT4u5w2e1c0d9f8g"
    store.update_node("node01", ssh_host_keys=[other])
    nodes = FakeNodes(answers())
    monkeypatch.setattr(preinstalled, "fan_out", nodes)
    provision(tmp_path, inv, "--nodes", "node01")
    (target,) = nodes.targets
    assert target.pinned is not None and target.pinned.keys == (other,)


def test_a_missing_known_hosts_file_stops_the_run(rack, monkeypatch):
    tmp_path, inv, store = rack
    (inv / "known_hosts").unlink()
    monkeypatch.setattr(preinstalled, "fan_out", FakeNodes(answers()))
    res = provision(tmp_path, inv)
    assert res.exit_code == 1
    assert "UserKnownHostsFile" in res.output and "does not exist" in res.output
    assert {n.state for n in store.list_nodes()} == {"discovered"}


def test_parse_probe_reports_physical_nics_only_where_there_are_some():
    server = (
        "product_serial=J9X2K13\nchassis_serial=J9X2K13\nproduct_uuid=4c4c4544-0039-5810-8032-cac04f4b3133\n"
        "hostname=gpu001\nnic=physical eno1 B0:7B:25:DE:1A:10\nnic=virtual docker0 02:42:ac:11:00:01\n"
        "nic=virtual bond0 00:00:00:00:00:00\nhostkey=not a key\n"
        f"hostkey={KEY} root@gpu001\n"
    )
    report = preinstalled.parse_probe(server)
    assert report == {
        "macs": ["b0:7b:25:de:1a:10"],
        "ssh_host_keys": [KEY],
        "serial": "J9X2K13",
        "chassis_serial": "J9X2K13",
        "uuid": "4c4c4544-0039-5810-8032-cac04f4b3133",
        "hostname": "gpu001",
    }
    namespace = preinstalled.parse_probe(probe_output(1))
    assert (
        namespace["macs"] == [mac(1)]
        and namespace["serial"] == "LAB001"
        and "chassis_serial" not in namespace
    )
