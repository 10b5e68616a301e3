"""`bringup hostkeys scan|forget` against a real SSH server (paramiko's, on 127.0.0.1), and a
pinned connection after a scan."""

from __future__ import annotations

import json

import paramiko
from click.testing import CliRunner

from bringup.cli.main import main
from bringup.fleet.store import FleetStore
from bringup.inventory.rack import load_rack
from bringup.ssh.fanout import run_script, target_for_node
from bringup.ssh.hostkey_records import forget, record
from bringup.ssh.hostkeys import RECORDED, fingerprint
from tests.unit.bringup.provision.test_orchestrator import discover, write_inventory
from tests.unit.bringup.ssh import test_fanout_hostkeys as ssh_server

sshd = ssh_server.sshd  # the fixture: a real SSH server with an ECDSA host key
client_key = ssh_server.client_key


def setup(tmp_path, port: int, key_file: str):
    inv = write_inventory(
        tmp_path,
        extra_vars=f"    ansible_ssh_private_key_file: {key_file}\n",
        host_extra={"gpu001": f"ansible_port: {port}"},
    )
    db = tmp_path / "fleet.db"
    store = FleetStore(f"sqlite:///{db}")
    discover(store)
    store.update_node("gpu001", ip="127.0.0.1")
    return inv, db, store


def bringup(inv, db, *args):
    return CliRunner().invoke(main, ["--db", str(db), "--inventory-dir", str(inv), *args])


def test_scan_records_on_first_use_then_connections_are_pinned(sshd, client_key, tmp_path):
    inv, db, store = setup(tmp_path, sshd["port"], client_key)
    shown = f"{sshd['key'].get_name()} {sshd['key'].get_base64()}"
    res = bringup(inv, db, "hostkeys", "scan", "--rack", "r01", "--nodes", "gpu001", "--json")
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)
    assert (row["name"], row["status"]) == ("gpu001", "recorded")
    node = store.get_node("gpu001")
    assert node.ssh_host_keys == [shown]
    (event,) = [e for e in store.history("gpu001") if e.kind == "ssh-host-keys"]
    assert "hostkeys scan by" in event.reason and "trust on first use" in event.reason
    assert fingerprint(shown) in event.reason and event.actor  # who trusted it
    # From now on the node is pinned to that key: burn-in's target connects.
    host = next(h for h in load_rack("r01", inv)[0].hosts if h.name == "gpu001")
    target = target_for_node("gpu001", host.vars, inv, node)
    assert target.pinned is not None and run_script(target, "true\n", 10).rc == 0
    # A second scan changes nothing.
    res = bringup(inv, db, "hostkeys", "scan", "--rack", "r01", "--nodes", "gpu001")
    assert res.exit_code == 0 and "\tunchanged\t" in res.stdout


def test_scan_never_replaces_a_recorded_key_and_forget_is_explicit(sshd, client_key, tmp_path):
    inv, db, store = setup(tmp_path, sshd["port"], client_key)
    other = paramiko.ECDSAKey.generate()
    store.update_node("gpu001", ssh_host_keys=[f"{other.get_name()} {other.get_base64()}"])
    res = bringup(inv, db, "hostkeys", "scan", "--rack", "r01", "--nodes", "gpu001")
    assert res.exit_code == 1 and "\trefused\t" in res.stdout and "not the keys recorded" in res.stdout
    assert store.get_node("gpu001").ssh_host_keys == [f"{other.get_name()} {other.get_base64()}"]
    res = bringup(inv, db, "hostkeys", "forget", "gpu001")
    assert (
        res.exit_code == 0
        and f"forgotten: {fingerprint(other.get_name() + ' ' + other.get_base64())}" in res.stdout
    )
    assert store.get_node("gpu001").ssh_host_keys == []
    assert bringup(inv, db, "hostkeys", "scan", "--rack", "r01", "--nodes", "gpu001").exit_code == 0


def test_an_unreachable_node_is_one_row(tmp_path, client_key):
    inv, db, store = setup(tmp_path, 1, client_key)  # nothing listens on port 1
    res = bringup(inv, db, "hostkeys", "scan", "--rack", "r01", "--nodes", "gpu001")
    assert res.exit_code == 1 and "\tunreachable\tcannot connect to 127.0.0.1:1" in res.stdout
    assert store.get_node("gpu001").ssh_host_keys == []


def test_record_replace_and_forget_on_each_engine(store_url):
    store = FleetStore(store_url)
    try:
        store.enroll("gpu001", "r01", "h100-sxm-8x400g")
        keys = [paramiko.ECDSAKey.generate() for _ in range(2)]
        first, second = (f"{k.get_name()} {k.get_base64()}" for k in keys)
        record(store, "gpu001", [first], "provision run 1 (pxe)", actor="alice")
        record(store, "gpu001", [second], "provision run 2 (pxe)", actor="bob")
        node = store.get_node("gpu001")
        assert node.ssh_host_keys == [second]
        assert node.hardware[RECORDED]["source"] == "provision run 2 (pxe)"
        assert forget(store, "gpu001", actor="carol") == f"SSH host keys forgotten: {fingerprint(second)}"
        events = [
            (e.actor, e.reason.split(":")[0]) for e in store.history("gpu001") if e.kind == "ssh-host-keys"
        ]
        assert events == [
            ("alice", "SSH host keys recorded by provision run 1 (pxe)"),
            ("bob", "SSH host keys replaced by provision run 2 (pxe)"),
            ("carol", "SSH host keys forgotten"),
        ]
        assert (
            store.get_node("gpu001").ssh_host_keys == [] and RECORDED not in store.get_node("gpu001").hardware
        )
    finally:
        store.close()
