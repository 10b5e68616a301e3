"""How bringup.ssh.connect opens a session, against a real SSH server (paramiko's, on 127.0.0.1): the
cipher it prefers, and the client key file it reads once and again when the file changes."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import paramiko

from bringup.ssh import connect as ssh_connect
from bringup.ssh.connect import SshTarget, connect
from bringup.ssh.fanout import run_script
from bringup.ssh.hostkeys import PinnedKeys
from tests.unit.bringup.ssh import test_fanout_hostkeys as base

sshd, client_key = base.sshd, base.client_key  # the fixtures: an SSH server, a client key file
GCM = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")


class _OneKey(base._Server):
    """Accepts exactly one client key (``accepted[0]``) and notes every key offered."""

    accepted: list[str] = []
    offered: list[str] = []

    def check_auth_publickey(self, username, key):  # noqa: ANN001 - paramiko's signature
        _OneKey.offered.append(key.get_base64())
        return paramiko.AUTH_SUCCESSFUL if key.get_base64() in _OneKey.accepted else paramiko.AUTH_FAILED


def _target(served: dict, key_file: str) -> SshTarget:
    pinned = PinnedKeys((base.line(served["key"]),))
    return SshTarget(
        "node03", "127.0.0.1", port=served["port"], key_file=key_file, pinned=pinned, connect_timeout=5
    )


def test_the_session_is_aes_gcm_when_the_server_offers_it(sshd, client_key):
    client = connect(_target(sshd, client_key))
    try:
        transport = client.get_transport()
        assert transport is not None
        assert (transport.local_cipher, transport.remote_cipher) == (
            "aes128-gcm@openssh.com",
            "aes128-gcm@openssh.com",
        )
    finally:
        client.close()


@contextlib.contextmanager
def _server_without_gcm() -> Iterator[dict]:
    """One connection served by an SSH server that does not offer AES-GCM (an older sshd)."""
    host_key = paramiko.ECDSAKey.generate()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    served: dict = {"port": listener.getsockname()[1], "key": host_key, "ran": []}

    def serve() -> None:
        conn, _ = listener.accept()
        t = paramiko.Transport(conn, disabled_algorithms={"ciphers": list(GCM)})
        t.add_server_key(host_key)
        served["transport"] = t
        with contextlib.suppress(paramiko.SSHException, EOFError, OSError):
            t.start_server(server=base._Server(served["ran"]))

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield served
    finally:
        listener.close()
        if "transport" in served:
            served["transport"].close()


def test_a_server_without_gcm_still_gets_a_session(client_key):
    with _server_without_gcm() as served:
        client = connect(_target(served, client_key))
        try:
            transport = client.get_transport()
            assert transport is not None and transport.local_cipher not in GCM
            assert transport.local_cipher == "aes128-ctr"  # paramiko's own first choice
        finally:
            client.close()


def test_a_key_file_replaced_between_runs_is_read_again(tmp_path: Path):
    path = tmp_path / "id_ecdsa"
    first, second = paramiko.ECDSAKey.generate(), paramiko.ECDSAKey.generate()
    _OneKey.offered = []
    with base.ssh_server(_OneKey) as served:
        first.write_private_key_file(str(path))
        _OneKey.accepted = [first.get_base64()]
        assert run_script(_target(served, str(path)), "echo hi\n", 10).error == ""
        # The operator rotates the controller's key (same path, same size: only its time differs).
        second.write_private_key_file(str(path))
        later = os.stat(path).st_mtime_ns + 1_000_000_000
        os.utime(path, ns=(later, later))
        _OneKey.accepted = [second.get_base64()]
        result = run_script(_target(served, str(path)), "echo hi\n", 10)
    assert (result.error, result.rc) == ("", 0)
    assert _OneKey.offered == [first.get_base64(), second.get_base64()]  # one offer each, no stale key


def test_an_encrypted_key_without_its_passphrase_fails_as_paramiko_says(sshd, tmp_path: Path, monkeypatch):
    path = tmp_path / "id_ecdsa"
    paramiko.ECDSAKey.generate().write_private_key_file(str(path), password="secret")
    result = run_script(_target(sshd, str(path)), "echo hi\n", 10)
    assert result.rc is None and sshd["ran"] == []
    assert f"root@127.0.0.1:{sshd['port']}" in result.error and "secret" not in result.error
    # the line paramiko's own reading of the file gives (the key not read ahead)
    monkeypatch.setattr(ssh_connect, "_private_key", lambda path: None)
    assert run_script(_target(sshd, str(path)), "echo hi\n", 10).error == result.error


def test_the_handshake_time_limit_is_a_deadline_not_a_thread():
    packetizer = ssh_connect._Packetizer(socket.socket())
    try:
        assert not packetizer.handshake_timed_out()  # no handshake started: never timed out
        packetizer.start_handshake(0)
        assert packetizer.handshake_timed_out()
        packetizer.complete_handshake()
        assert not packetizer.handshake_timed_out()  # done in time: no longer a timeout
    finally:
        packetizer.close()


def test_a_host_that_stalls_in_its_handshake_fails_at_the_handshake_limit(client_key, monkeypatch):
    """It sends its banner, then nothing: the connection gives up when the handshake's time limit
    (paramiko's 15 s, here 0.5 s) has passed, with no Timer thread started for it."""
    start = ssh_connect._Packetizer.start_handshake
    monkeypatch.setattr(ssh_connect._Packetizer, "start_handshake", lambda self, timeout: start(self, 0.5))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    held: list[socket.socket] = []

    def stall() -> None:
        conn, _ = listener.accept()
        conn.sendall(b"SSH-2.0-stalled\r\n")
        held.append(conn)  # open, silent

    threading.Thread(target=stall, daemon=True).start()
    timers_before = sum(isinstance(t, threading.Timer) for t in threading.enumerate())
    try:
        target = SshTarget("node03", "127.0.0.1", port=listener.getsockname()[1], key_file=client_key,
                           host_key_policy="off", connect_timeout=30)  # fmt: skip
        result = run_script(target, "echo hi\n", 60)
    finally:
        listener.close()
        for conn in held:
            conn.close()
    assert result.rc is None and result.error.startswith(f"SSH to root@127.0.0.1:{target.port} failed")
    assert sum(isinstance(t, threading.Timer) for t in threading.enumerate()) == timers_before
