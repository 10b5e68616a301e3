"""A node's SSH key file that is missing or unreadable: its line names the file and what to set,
against a real SSH server. Before the fix it read "unreachable: SSH to root@...: No such file or
directory", naming neither the file nor the inventory variable."""

from __future__ import annotations

from pathlib import Path

from bringup.ssh.connect import SshTarget
from bringup.ssh.fanout import run_script
from bringup.ssh.hostkeys import PinnedKeys
from tests.unit.bringup.ssh import test_fanout_hostkeys as base

sshd = base.sshd  # the fixture: an SSH server on 127.0.0.1


def _target(served: dict, key_file: str) -> SshTarget:
    pinned = PinnedKeys((base.line(served["key"]),))
    return SshTarget(
        "node03", "127.0.0.1", port=served["port"], key_file=key_file, pinned=pinned, connect_timeout=5
    )


def test_a_missing_key_file_is_named(sshd, tmp_path: Path):
    missing = tmp_path / "keys" / "id_ed25519"
    result = run_script(_target(sshd, str(missing)), "true", 10)
    assert result.error is not None and str(missing) in result.error, result.error
    assert "ansible_ssh_private_key_file" in result.error
    assert "unreachable" not in result.error  # the node answered; the key is ours to fix


def test_a_key_file_that_is_a_directory_is_named(sshd, tmp_path: Path):
    result = run_script(_target(sshd, str(tmp_path)), "true", 10)
    assert result.error is not None and str(tmp_path) in result.error, result.error
