"""mpirun's ssh checks host keys against the fleet store's when every node has recorded keys."""

from __future__ import annotations

import shlex
from pathlib import Path

from bringup.ssh.fanout import SshTarget
from bringup.ssh.hostkeys import PinnedKeys
from burnin.stages.nccl import ssh_settings

KEY = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBAAA"


def test_pinned_targets_give_mpirun_their_recorded_keys_only():
    targets = [
        SshTarget("a", "10.0.0.1", host_key_policy="off", pinned=PinnedKeys((KEY,))),
        SshTarget("b", "10.0.0.2", host_key_policy="off", pinned=PinnedKeys((KEY,))),
    ]
    words = shlex.split(ssh_settings(iter(targets))["ssh_options"])
    assert words[:2] == ["-o", "StrictHostKeyChecking=yes"]  # the inventory's "off" no longer applies
    known = Path(words[3].split("=", 1)[1])
    assert known.read_text() == f"10.0.0.1 {KEY}\n10.0.0.2 {KEY}\n"


def test_a_node_without_recorded_keys_leaves_the_inventorys_policy():
    targets = [SshTarget("a", "10.0.0.1", pinned=PinnedKeys((KEY,))), SshTarget("b", "10.0.0.2")]
    assert ssh_settings(targets)["ssh_options"] == "-o StrictHostKeyChecking=accept-new -o LogLevel=ERROR"
