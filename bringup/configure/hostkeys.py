"""Ansible checks each node's SSH host key against the keys the fleet store recorded.

For the run, the recorded keys are written to a known_hosts file of the run's own (mode 0600,
removed afterwards), and each node that has keys gets ``-o StrictHostKeyChecking=yes -o
UserKnownHostsFile=<that file>`` in its ``ansible_ssh_common_args``, in place of whatever the
inventory said about host keys: ssh refuses a host showing another key ("Host key
verification failed": the node is unreachable, with ssh's line). A node with no recorded key
keeps the inventory's settings, under Ansible's host key checking (the runner turns it on):
refused unless the inventory's known_hosts knows it or the inventory opts out.
"""

from __future__ import annotations

import contextlib
import shlex
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bringup.ssh.hostkeys import known_hosts_text, pinned

HOST_KEY_OPTIONS = ("stricthostkeychecking", "userknownhostsfile", "globalknownhostsfile")


def without_host_key_options(args: str) -> list[str]:
    """ssh args less any ``-o`` that decides host keys (pure)."""
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    out: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        setting = (
            words[i + 1] if word == "-o" and i + 1 < len(words) else word[2:] if word.startswith("-o") else ""
        )
        if setting and setting.replace(" ", "=").split("=")[0].lower() in HOST_KEY_OPTIONS:
            skip = word == "-o"
            continue
        out.append(word)
    return out


def pinned_args(args: str, known_hosts: Path) -> str:
    """The host's ssh args, checking its key against ``known_hosts`` only (pure)."""
    words = without_host_key_options(args)
    words += ["-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known_hosts}"]
    return shlex.join(words)


@contextlib.contextmanager
def pinned_hosts(
    hosts: Mapping[str, dict[str, Any]], nodes: Mapping[str, Any]
) -> Iterator[dict[str, dict[str, Any]]]:
    """``hosts`` (name -> generated host vars) with every node that has recorded keys pinned to
    them, through a known_hosts file that lives as long as the context."""
    with tempfile.TemporaryDirectory(prefix="bringup-known-hosts-") as tmp:
        path = Path(tmp) / "known_hosts"
        entries = []
        out = {}
        for name, hv in hosts.items():
            keys = pinned(nodes[name]).keys if name in nodes else ()
            if keys:
                address = str(hv.get("ansible_host") or name)
                entries.append((address, int(hv.get("ansible_port") or 22), keys))
                hv = {
                    **hv,
                    "ansible_ssh_common_args": pinned_args(str(hv.get("ansible_ssh_common_args", "")), path),
                }
            out[name] = hv
        path.write_text(known_hosts_text(entries))
        path.chmod(0o600)
        yield out
