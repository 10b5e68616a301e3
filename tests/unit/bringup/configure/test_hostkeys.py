"""Ansible checks host keys against the fleet store's: real ansible-playbook over real OpenSSH
to a real SSH server (paramiko's, on 127.0.0.1), with the known_hosts file configure writes."""

from __future__ import annotations

import shlex
from pathlib import Path
from types import SimpleNamespace

import paramiko

from bringup.configure.hostkeys import pinned_args, pinned_hosts
from bringup.configure.runner import run_playbook
from bringup.ssh.hostkeys import RECORDED
from tests.unit.bringup.ssh import test_fanout_hostkeys as ssh_server

sshd = ssh_server.sshd  # the fixture: a real SSH server with an ECDSA host key
client_key = ssh_server.client_key

RAW = """\
- hosts: all
  gather_facts: false
  tasks:
    - name: Say hello
      ansible.builtin.raw: echo hello
"""


def node(keys: list[str]) -> SimpleNamespace:
    return SimpleNamespace(
        ssh_host_keys=keys, hardware={RECORDED: {"at": "2026-11-20T10:00:00", "source": "test"}}
    )


def test_pinned_args_replace_whatever_the_inventory_said_about_host_keys(tmp_path):
    args = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 -oGlobalKnownHostsFile=/x"
    words = shlex.split(pinned_args(args, tmp_path / "kh"))
    assert words == [
        "-o",
        "ConnectTimeout=5",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        f"UserKnownHostsFile={tmp_path / 'kh'}",
    ]


def test_only_nodes_with_recorded_keys_are_pinned_and_the_file_goes_with_the_run(tmp_path):
    hosts = {
        "a": {"ansible_host": "10.0.0.1"},
        "b": {"ansible_host": "10.0.0.2", "ansible_ssh_common_args": "-o X=1"},
    }
    key = paramiko.ECDSAKey.generate()
    line = f"{key.get_name()} {key.get_base64()}"
    with pinned_hosts(hosts, {"a": node([line]), "b": node([])}) as out:
        path = Path(shlex.split(out["a"]["ansible_ssh_common_args"])[-1].split("=", 1)[1])
        assert path.read_text() == f"10.0.0.1 {line}\n" and path.stat().st_mode & 0o777 == 0o600
        assert out["b"] == hosts["b"]
    assert not path.exists()


def _run(tmp_path: Path, sshd: dict, client_key: str, keys: list[str]):
    playbooks = tmp_path / "playbooks"
    playbooks.mkdir(exist_ok=True)
    (playbooks / "site.yml").write_text(RAW)
    (playbooks / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = false\n")
    hv = {
        "ansible_host": "127.0.0.1",
        "ansible_port": sshd["port"],
        "ansible_user": "root",
        "ansible_ssh_private_key_file": client_key,
        # What the lab inventory used to say: it must not switch the check off.
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
    }
    with pinned_hosts({"n1": hv}, {"n1": node(keys)}) as hosts:
        return run_playbook({"all": {"hosts": hosts}}, ["n1"], playbook_dir=playbooks, timeout=120)


def test_ansible_reaches_the_node_showing_its_recorded_key(sshd, client_key, tmp_path):
    result = _run(tmp_path, sshd, client_key, [f"{sshd['key'].get_name()} {sshd['key'].get_base64()}"])
    assert result.outcomes["n1"].status == "ok", result.stdout[-2000:]
    assert sshd["ran"]


def test_ansible_refuses_a_node_showing_another_key(sshd, client_key, tmp_path):
    other = paramiko.ECDSAKey.generate()
    result = _run(tmp_path, sshd, client_key, [f"{other.get_name()} {other.get_base64()}"])
    outcome = result.outcomes["n1"]
    assert outcome.status == "unreachable", result.stdout[-2000:]
    assert "Host key verification failed" in outcome.message or "REMOTE HOST IDENTIFICATION" in result.stdout
    assert sshd["ran"] == []
