"""`burnin watch` on a lab node under the lab's real Slurm: an Xid 79 record written to the
kernel log it follows drains the node, with the kernel-log check's reason, in about a second.

The node gets what the burnin_tools role installs (bringup/lab/burnin_install.py); the watcher
runs on the node over SSH as the role's unit would, but follows a file with `tail -F` (the lab
node's dmesg is a stand-in that prints a fixed log and cannot follow). Each try resumes the
node, writes the record with a fresh stamp and times it from the write (the node's clock,
which is the host's: the lab's nodes are namespaces) to the moment `scontrol` on the host shows
DRAIN. The figures are printed (docs/in-service.md quotes them); only "drained, with the right
reason, within the wait" is asserted.
"""

from __future__ import annotations

import statistics
import time
import uuid

import pytest

from tests.lab.conftest import lab_inventory_dir, node_ssh, require_root, slurm, slurm_nodes, wait_for

pytestmark = pytest.mark.lab

PROFILE = "h100-sxm-8x400g"
TRIES = 10
KMSG = "/var/log/bringup-watch-kmsg.log"
XID = "NVRM: Xid (PCI:0000:53:00): 79, pid=0, GPU has fallen off the bus."
WANT = "bringup: kernel_log: "


def test_an_xid_79_drains_through_burnin_watch_in_seconds(tmp_path):
    require_root()
    from bringup.lab.burnin_install import BURNIN, install_health, node_root
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services

    inv = lab_inventory_dir(tmp_path / "inventories")
    rack = VirtualRack(f"w{uuid.uuid4().hex[:7]}", tmp_path / "state", inv, services=lab_services)
    (tmp_path / "faults.yml").write_text("nodes: {}\n")
    try:
        state = rack.up(1, tmp_path / "faults.yml")
        node = state.nodes[0].name
        role = install_health(
            node_root(state.state_dir, node), tmp_path / "bundle", inv / "profiles" / f"{PROFILE}.yml"
        )
        rc, _, err = node_ssh(
            state,
            node,
            f"touch {KMSG}; nohup {BURNIN} watch --profile {role['burnin_tools_health_profile']} --node {node} "
            f"--state-dir {role['burnin_tools_health_state_dir']} --hold-off 0 "
            f"--source 'tail -n0 -F {KMSG}' > /var/log/bringup-watch.out 2>&1 < /dev/null &",
        )
        assert rc == 0, err

        def watch_log() -> str:
            return node_ssh(state, node, "cat /var/log/bringup-watch.out")[1][-2000:]

        # `tail -n0 -F` sees only what is written after it opened the file, and the watcher starts
        # it after python and its imports (8 s on two loaded cores): wait until it holds the file
        wait_for(
            f"the watcher on {node} following {KMSG}",
            lambda: node_ssh(state, node, f"find /proc/[0-9]*/fd -lname {KMSG} 2>/dev/null")[1].strip(),
            60,
            poll=0.5,
            context=watch_log,
        )
        times: list[float] = []
        for _ in range(TRIES):
            if slurm_nodes(state)[node].drain:
                slurm(state, "scontrol", "update", f"NodeName={node}", "State=RESUME")
                wait_for(f"{node} resumed", lambda: not slurm_nodes(state)[node].drain, 30)
            rc, out, err = node_ssh(
                state, node, f'date +%s.%N; echo "$(date -u +%Y-%m-%dT%H:%M:%S,%6N+00:00) {XID}" >> {KMSG}'
            )
            assert rc == 0, err
            written = float(out.split()[0])
            drained = wait_for(
                f"{node} drained by burnin watch",
                lambda: (n := slurm_nodes(state)[node]).drain and n,
                60,
                context=watch_log,
            )
            times.append(time.time() - written)
            assert drained.reason.startswith(WANT) and "Xid 79" in drained.reason, drained.reason
        print(
            f"\nburnin watch: Xid 79 written -> DRAIN in Slurm, {TRIES} tries: median {statistics.median(times):.2f} s, "
            f"max {max(times):.2f} s (each: {', '.join(f'{t:.2f}' for t in times)})"
        )
        print(watch_log())
    finally:
        rack.down()
