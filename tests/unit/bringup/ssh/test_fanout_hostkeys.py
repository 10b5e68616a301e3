"""Host-key pinning in bringup.ssh.fanout against a real SSH server (paramiko's, on 127.0.0.1).

The server really speaks SSH: key exchange with its host key, public-key authentication, an
exec channel that reads the script and answers. What is checked is what the client does with
the host key it is shown.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import paramiko
import pytest

from bringup.ssh.fanout import SshTarget, openssh_known_hosts, run_script, target_from_vars
from bringup.ssh.hostkeys import PinnedKeys, known_hosts_text


def line(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {key.get_base64()}"


class _Server(paramiko.ServerInterface):
    def __init__(self, ran: list[str]):
        self.ran = ran

    def check_auth_publickey(self, username, key):  # noqa: ANN001 - paramiko's signature
        return paramiko.AUTH_SUCCESSFUL

    def get_allowed_auths(self, username):  # noqa: ANN001
        return "publickey"

    def check_channel_request(self, kind, chanid):  # noqa: ANN001
        return paramiko.OPEN_SUCCEEDED

    def check_channel_pty_request(self, *args):  # noqa: ANN002 - Ansible's raw asks for a tty
        return True

    def check_channel_exec_request(self, channel, command):  # noqa: ANN001
        def answer() -> None:
            script = command  # a one-off command (Ansible's raw); `bash -s` reads the script
            if command == b"bash -s":
                script = b""
                while chunk := channel.recv(4096):
                    script += chunk
            self.ran.append(script.decode())
            channel.sendall(b"ran\n")
            channel.send_exit_status(0)
            channel.close()

        threading.Thread(target=answer, daemon=True).start()
        return True


@contextlib.contextmanager
def ssh_server(server: Callable[[list[str]], paramiko.ServerInterface] = _Server) -> Iterator[dict]:
    """An SSH server with an ECDSA host key, answering with ``server``; yields its port, key and
    the scripts it ran. Each connection is served in a thread of its own, as sshd serves them, so
    a client that stalls in its key exchange (a host-key scan under load) holds up no other."""
    host_key = paramiko.ECDSAKey.generate()
    ran: list[str] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    transports: list[paramiko.Transport] = []

    def negotiate(t: paramiko.Transport) -> None:
        with contextlib.suppress(paramiko.SSHException, EOFError, OSError):
            t.start_server(server=server(ran))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            t = paramiko.Transport(conn)
            t.add_server_key(host_key)
            transports.append(t)
            threading.Thread(target=negotiate, args=(t,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield {"port": listener.getsockname()[1], "key": host_key, "ran": ran}
    finally:
        listener.close()
        for t in transports:
            t.close()


@pytest.fixture
def sshd() -> Iterator[dict]:
    """An SSH server with an ECDSA host key; yields its port, key and the scripts it ran."""
    with ssh_server() as served:
        yield served


@pytest.fixture
def client_key(tmp_path: Path) -> str:
    path = tmp_path / "id_ecdsa"
    paramiko.ECDSAKey.generate().write_private_key_file(str(path))
    return str(path)


def target(sshd: dict, client_key: str, tmp_path: Path, *, pinned=None, args: str = "") -> SshTarget:
    hostvars = {
        "ansible_host": "127.0.0.1",
        "ansible_port": sshd["port"],
        "ansible_ssh_private_key_file": client_key,
        # Never the test machine's own ~/.ssh/known_hosts: an empty file of the test's.
        "ansible_ssh_common_args": args or f"-o UserKnownHostsFile={tmp_path / 'known_hosts'}",
    }
    t = target_from_vars("node03", hostvars, tmp_path, pinned=pinned)
    return SshTarget(**{**t.__dict__, "connect_timeout": 5.0})


PROVISIONED = dict(recorded_at="2026-11-20T10:00:00+00:00", source="provision run 3 (pxe)")


def test_the_recorded_key_connects(sshd, client_key, tmp_path):
    t = target(sshd, client_key, tmp_path, pinned=PinnedKeys((line(sshd["key"]),), **PROVISIONED))
    result = run_script(t, "echo hi\n", 10)
    assert (result.error, result.rc, result.stdout) == ("", 0, b"ran\n")
    assert sshd["ran"] == ["echo hi\n"]
    assert not (tmp_path / "known_hosts").exists()  # nothing written anywhere


def test_a_host_whose_key_changed_is_refused_with_one_clear_line(sshd, client_key, tmp_path):
    recorded = line(paramiko.ECDSAKey.generate())  # what provisioning recorded; the host shows another
    t = target(sshd, client_key, tmp_path, pinned=PinnedKeys((recorded,), **PROVISIONED))
    result = run_script(t, "echo hi\n", 10)
    assert result.rc is None and sshd["ran"] == []  # no script ran on an impostor
    assert result.error.startswith(
        "SSH host key of node03 (127.0.0.1) does not match the key recorded when it was provisioned "
        "on 2026-11-20 (provision run 3 (pxe)) (it shows SHA256:"
    ), result.error
    assert "re-imaged or impersonated? re-provision it" in result.error
    assert "`bringup hostkeys forget node03`" in result.error and "\n" not in result.error


def test_a_recorded_key_of_another_type_is_refused_too(sshd, client_key, tmp_path):
    other = paramiko.RSAKey.generate(1024)  # the host has no RSA key: it cannot show this one
    t = target(sshd, client_key, tmp_path, pinned=PinnedKeys((line(other),), **PROVISIONED))
    result = run_script(t, "echo hi\n", 10)
    assert "does not match the key recorded when it was provisioned" in result.error and sshd["ran"] == []


def test_no_recorded_key_is_refused_not_accepted_on_first_sight(sshd, client_key, tmp_path):
    result = run_script(target(sshd, client_key, tmp_path), "echo hi\n", 10)
    assert sshd["ran"] == []
    assert result.error.startswith(
        "SSH host key of node03 (127.0.0.1) is not recorded: provisioning records it"
    )
    assert "`bringup hostkeys scan --rack RACK --nodes node03`" in result.error


def test_no_recorded_key_but_the_inventorys_known_hosts_knows_it(sshd, client_key, tmp_path):
    (tmp_path / "known_hosts").write_text(
        known_hosts_text([("127.0.0.1", sshd["port"], [line(sshd["key"])])])
    )
    result = run_script(target(sshd, client_key, tmp_path), "echo hi\n", 10)
    assert result.error == "" and result.rc == 0


def test_the_inventorys_explicit_opt_out_connects_with_a_warning(sshd, client_key, tmp_path, caplog):
    args = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
    with caplog.at_level(logging.WARNING, logger="bringup.ssh.fanout"):
        t = target(sshd, client_key, tmp_path, args=args)
    assert t.host_key_policy == "off"
    assert "node03: SSH host key not checked (StrictHostKeyChecking=no" in caplog.text
    assert run_script(t, "echo hi\n", 10).rc == 0


def test_recorded_keys_are_checked_even_when_the_inventory_opts_out(sshd, client_key, tmp_path):
    args = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
    pinned = PinnedKeys((line(paramiko.ECDSAKey.generate()),), **PROVISIONED)
    result = run_script(target(sshd, client_key, tmp_path, pinned=pinned, args=args), "echo hi\n", 10)
    assert "does not match the key recorded" in result.error and sshd["ran"] == []


@pytest.mark.parametrize(
    ("args", "policy", "known"),
    [
        ("-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null", "off", "/dev/null"),
        ("-oStrictHostKeyChecking=yes", "strict", None),
        ("-o 'StrictHostKeyChecking yes' -o UserKnownHostsFile={{ inventory_dir }}/kh", "strict", "INV/kh"),
        ("", "accept-new", None),
    ],
)
def test_the_inventorys_ssh_options_are_read(tmp_path, args, policy, known):
    t = target_from_vars("n", {"ansible_ssh_common_args": args}, tmp_path / "INV")
    assert t.host_key_policy == policy
    assert t.known_hosts_file == (known.replace("INV", str(tmp_path / "INV")) if known else None)


def _openssh(known: str, port: int, key: str) -> subprocess.CompletedProcess[str]:
    """The real OpenSSH client, as mpirun starts it, with the given known_hosts file."""
    cmd = ["ssh", "-i", key, "-p", str(port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"]
    cmd += [
        "-o",
        f"UserKnownHostsFile={known}",
        "-o",
        "GlobalKnownHostsFile=/dev/null",
        "root@127.0.0.1",
        "true",
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def test_mpiruns_openssh_gets_a_known_hosts_file_of_exactly_the_recorded_keys(sshd, client_key, tmp_path):
    right = target(sshd, client_key, tmp_path, pinned=PinnedKeys((line(sshd["key"]),), **PROVISIONED))
    wrong = target(sshd, client_key, tmp_path, pinned=PinnedKeys((line(paramiko.ECDSAKey.generate()),)))
    unpinned = target(sshd, client_key, tmp_path)
    assert openssh_known_hosts([right, unpinned]) is None  # every node's keys, or no file
    known = openssh_known_hosts([right])
    assert known is not None and Path(known).stat().st_mode & 0o777 == 0o600
    assert Path(known).read_text() == f"[127.0.0.1]:{sshd['port']} {line(sshd['key'])}\n"
    assert _openssh(known, sshd["port"], client_key).returncode == 0
    refused = _openssh(openssh_known_hosts([wrong]) or "", sshd["port"], client_key)
    assert refused.returncode != 0 and "Host key verification failed" in refused.stderr
