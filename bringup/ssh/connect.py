"""One SSH connection on paramiko: the target, its host key checked, the client key, the cipher.

Host keys, never accepted on first sight:

- keys the fleet store recorded for the node (``SshTarget.pinned``, see ``bringup.ssh.hostkeys``):
  the host must show one of exactly those (``RejectPolicy`` over an in-memory HostKeys);
- none recorded: the known_hosts file (the inventory's ``UserKnownHostsFile``, else
  ~/.ssh/known_hosts) must know it, else it is refused;
- ``StrictHostKeyChecking=no`` in the inventory, and nothing recorded: any key (an explicit
  opt-out, warned where the target is made). Recorded keys are checked even then.

What a connection costs the controller is most of the SSH path's CPU at fleet size (docs/fleet-scale.md):
the client key file is read once, not once per node and key type; AES-GCM comes first, so no
packet's MAC is compared in Python; the handshake's time limit is a deadline, not a thread.
"""

from __future__ import annotations

import base64
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko
from paramiko.packet import Packetizer

from bringup.ssh.hostkeys import PinnedKeys, known_hosts_name


@dataclass(frozen=True)
class SshTarget:
    name: str  # the node's inventory name
    host: str
    user: str = "root"
    port: int = 22
    key_file: str | None = None
    # The inventory's word (strict | accept-new | off), also for OpenSSH clients (mpirun). For
    # this module only "off" changes anything, and only for a node with no recorded keys.
    host_key_policy: str = "accept-new"
    connect_timeout: float = 15.0
    pinned: PinnedKeys | None = None  # the keys the fleet store recorded for the node
    known_hosts_file: str | None = None  # the inventory's UserKnownHostsFile (None: ~/.ssh/known_hosts)


# AES-GCM first: an AEAD cipher carries no separate MAC, and paramiko compares a MAC byte by byte
# in Python on every packet it reads. Every OpenSSH since 6.2 offers it; the rest of paramiko's
# list stays behind it for servers that do not.
_CIPHERS_FIRST = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")


class _Packetizer(Packetizer):
    """paramiko's, with the handshake's time limit kept as a deadline its reading loop looks at
    (it wakes every 0.1 s), not as a Timer thread started and stopped for every connection."""

    _deadline: float | None = None
    _shaken = False

    def start_handshake(self, timeout: float) -> None:
        if self._deadline is None:
            self._deadline = time.monotonic() + float(timeout)

    def handshake_timed_out(self) -> bool:
        return self._deadline is not None and not self._shaken and time.monotonic() >= self._deadline

    def complete_handshake(self) -> None:
        if self._deadline is not None:
            self._shaken = True


def _transport(sock: Any, **kwargs: Any) -> paramiko.Transport:
    transport = paramiko.Transport(sock, packetizer_class=_Packetizer, **kwargs)
    options = transport.get_security_options()
    offered = options.ciphers
    options.ciphers = tuple(c for c in _CIPHERS_FIRST if c in offered) + tuple(
        c for c in offered if c not in _CIPHERS_FIRST
    )
    return transport


_keys: dict[tuple[str, int, int], paramiko.PKey] = {}
_keys_lock = threading.Lock()


def _private_key(path: str) -> paramiko.PKey | None:
    """The inventory's key file read once per content (its size and time), not once per node
    and key type as paramiko reads a ``key_filename``; None when paramiko's own reading should
    say what is wrong with it (missing, encrypted, a type it does not know)."""
    try:
        st = os.stat(path)
        cached = (path, st.st_mtime_ns, st.st_size)
        with _keys_lock:
            if cached in _keys:
                return _keys[cached]
        key = paramiko.PKey.from_path(path)
    except Exception:  # noqa: BLE001 - paramiko's connect reports it, as it always did
        return None
    with _keys_lock:
        _keys[cached] = key
    return key


def connect(target: SshTarget) -> paramiko.SSHClient:
    """A logged-in SSH client for the target, its host key checked as the module says; raises
    what paramiko raises (bringup.ssh.fanout.describe_error turns it into the node's line)."""
    client = paramiko.SSHClient()
    if target.pinned is not None and target.pinned.keys:
        # Exactly the recorded keys, in memory: ~/.ssh/known_hosts neither adds nor is written.
        name = known_hosts_name(target.host, target.port)
        for line in target.pinned.keys:
            kind, blob = line.split()[:2]
            key = paramiko.PKey.from_type_string(kind, base64.b64decode(blob))
            client.get_host_keys().add(name, kind, key)
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
    elif target.host_key_policy == "off":  # the inventory's explicit opt-out (warned)
        client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    else:
        if target.known_hosts_file is None or Path(target.known_hosts_file).is_file():
            client.load_system_host_keys(target.known_hosts_file)  # None: ~/.ssh/known_hosts
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
    key = _private_key(target.key_file) if target.key_file else None
    client.connect(
        target.host,
        port=target.port,
        username=target.user,
        pkey=key,
        key_filename=target.key_file if key is None else None,
        transport_factory=_transport,
        timeout=target.connect_timeout,
        banner_timeout=target.connect_timeout,
        auth_timeout=target.connect_timeout,
        look_for_keys=target.key_file is None,
        allow_agent=target.key_file is None,
    )
    return client
