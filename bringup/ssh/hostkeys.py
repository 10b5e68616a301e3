"""Pinned SSH host keys (pure): key lines checked, fingerprints, known_hosts text.

A node's SSH host keys (``Node.ssh_host_keys``, '<type> <base64>' lines) are recorded when it
is provisioned: the agent on the installed system reports them in its phone-home, over the
token-authenticated channel. Configure (Ansible) and burn-in (paramiko) then connect to a node
only when it shows one of those keys (``bringup.ssh.fanout``; ``known_hosts_text`` for Ansible).
Re-provisioning replaces them.

A node the store holds no key for (provisioned by MAAS, or by hand before bringup) is refused,
unless the operator records its keys explicitly: ``bringup hostkeys scan`` (trust on first use,
an event naming who did it), or its inventory opts out with ``StrictHostKeyChecking=no``
(warned). ``bringup hostkeys forget`` drops them (a node re-imaged outside bringup).

Where and when they were recorded sits beside them in ``hardware["ssh_host_keys_recorded"]``
(``at``, ``source``): the refusal line names the date. Recording, forgetting and scanning are
``bringup.ssh.hostkey_records``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

KEY_TYPES = (  # what OpenSSH's sshd offers as host keys, most preferred first
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
)
MAX_KEYS = 16  # a node has 3 or 4; a report with hundreds is not a node's
RECORDED = "ssh_host_keys_recorded"  # the hardware entry saying when and how


@dataclass(frozen=True)
class PinnedKeys:
    """The keys a connection must see, and the words for the refusal line."""

    keys: tuple[str, ...]
    recorded_at: str = ""  # ISO time
    source: str = ""  # "provision run 3 (pxe)", "hostkeys scan by alice", ...


def key_problem(line: Any) -> str | None:
    """Why ``line`` is not a '<type> <base64>' SSH public key line (None: it is one)."""
    if not isinstance(line, str):
        return f"not a string: {type(line).__name__}"
    parts = line.split()
    if len(parts) < 2:
        return "expected '<type> <base64>'"
    kind, blob = parts[0], parts[1]
    if kind not in KEY_TYPES:
        return f"unknown key type {kind[:40]!r} (expected one of {', '.join(KEY_TYPES)})"
    try:
        raw = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return f"the {kind} key is not base64"
    # The blob starts with its own type name (RFC 4253 6.6): a key pasted under the wrong type is refused.
    if len(raw) < 4 or raw[4 : 4 + struct.unpack(">I", raw[:4])[0]] != kind.encode():
        return f"the {kind} key's data does not say {kind}"
    return None


def clean_keys(value: Any) -> tuple[list[str], list[str]]:
    """A report's ``ssh_host_keys`` -> (the valid '<type> <base64>' lines, sorted by preference
    and without duplicates; a problem per line refused). Comments are dropped."""
    if value in (None, ""):
        return [], []
    if not isinstance(value, list):
        return [], [f"ssh_host_keys must be a list, got {type(value).__name__}"]
    if len(value) > MAX_KEYS:
        return [], [f"ssh_host_keys lists {len(value)} keys (at most {MAX_KEYS})"]
    keys: list[str] = []
    problems = []
    for i, line in enumerate(value):
        if why := key_problem(line):
            problems.append(f"ssh_host_keys[{i}]: {why}")
            continue
        kind, blob = line.split()[:2]
        if f"{kind} {blob}" not in keys:
            keys.append(f"{kind} {blob}")
    keys.sort(key=lambda k: KEY_TYPES.index(k.split()[0]))
    return keys, problems


def fingerprint(line: str) -> str:
    """OpenSSH's SHA256 fingerprint of a key line (what `ssh-keygen -l` and ssh's prompt show)."""
    raw = base64.b64decode(line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")


def known_hosts_name(host: str, port: int = 22) -> str:
    return host if port == 22 else f"[{host}]:{port}"


def known_hosts_text(entries: Iterable[tuple[str, int, Sequence[str]]]) -> str:
    """A known_hosts file from (address, port, keys) entries."""
    return "".join(f"{known_hosts_name(h, p)} {k}\n" for h, p, keys in entries for k in keys)


def pinned(node: Any) -> PinnedKeys:
    """What the store pins for ``node`` (a fleet Node); no keys when it recorded none."""
    info = (node.hardware or {}).get(RECORDED) or {}
    keys, _ = clean_keys(list(node.ssh_host_keys or []))
    return PinnedKeys(tuple(keys), str(info.get("at") or ""), str(info.get("source") or ""))
