"""A lab node's boot, as its BMC's power cycle makes it (docs/lab.md, "Power cycles reboot a node").

A namespace node shares the host's kernel, so nothing really boots. When its BMC's power lands
On after Off (`bringup power on`, the Off+On of `bringup power cycle`, a ForceRestart), the BMC
emulator (bmc_server.py) calls `reboot_node`, which does to the node what a boot does to what
the lab emulates:

- the faults a reboot clears leave it (`faults_after_reboot`): the kernel-log ones (their lines
  were in the log of the boot that ended) and every fault switched on while it ran (`bringup lab
  fault`: a state of the running node). What it was started with stays (the fault spec of `lab
  up`: its hardware, a GPU missing, a link down), but for the kernel-log lines;
- a new boot id: the node's init binds ``/etc/bringup-lab/boot_id`` over
  ``/proc/sys/kernel/random/boot_id`` (nodes.py), and it is rewritten here in place (the bind
  holds the file's inode), so `burnin health`'s kernel-log cursor sees a new boot;
- slurmd is started again where the lab runs it (its slurm.conf is in the node), so slurmctld
  sees the node register anew; a drain stays, as it does across a real reboot.

`faults_after_reboot` is pure; `reboot_node` does the I/O (files of the node's root, SSH).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

BOOT_ID_FILE = Path("etc/bringup-lab/boot_id")  # in the node's root; bound over /proc's (nodes.py)
SSH_LIMIT_S = 30.0


def faults_after_reboot(
    faults: Sequence[str], started_with: Iterable[str], kernel_log: Iterable[str]
) -> list[str]:
    """The node's faults once it has rebooted: those it was started with, but for the ones that
    only add kernel-log lines (a new boot starts a new log); order kept."""
    keep = set(started_with) - set(kernel_log)
    return [f for f in faults if f in keep]


def slurmd_restart_script(node_conf: str, pid_file: str) -> str:
    """What a boot does to slurmd on a lab node: stop the one running (if any), start it again.
    Nothing where the node has no slurm.conf (the lab runs without Slurm there)."""
    return f"""set -u
[ -f /{node_conf} ] || {{ echo "no slurmd here"; exit 0; }}
pid=$(cat {pid_file} 2>/dev/null || true)
if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
fi
setsid slurmd -f /{node_conf} </dev/null >/dev/null 2>&1
echo "slurmd started again"
"""


def write_boot_id(path: Path, boot_id: str) -> None:
    """Overwrite the node's boot id in place: the node's /proc binds this very inode, so a new
    file put in its place (rename) would not be seen."""
    with open(path, "r+b") as f:
        f.write(f"{boot_id}\n".encode())
        f.truncate()


SshRun = Callable[[str], tuple[bool, str]]  # script -> (worked, last line)


def reboot_node(
    state_dir: Path, node: str, started_with: Sequence[str], ssh: SshRun | None = None
) -> list[str]:
    """Reboot lab node ``node`` as described above; lines saying what was done (for bmc.log)."""
    from bringup.lab.faults import fault_file_text, kernel_log_faults
    from bringup.lab.slurm import NODE_CONF, SLURMD_PID_FILE
    from bringup.lab.standins import FAULTS_FILE
    from bringup.lab.state import LabState

    state = LabState.load(Path(state_dir))
    record = next((n for n in state.nodes if n.name == node), None) if state else None
    if state is None or record is None:
        return [f"{node}: not a node of the lab at {state_dir}: nothing rebooted"]
    root = Path(state.state_dir) / "nodes" / node / "root"
    lines = []
    path = root / FAULTS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {"faults": []}
    before = list(data.get("faults", []))
    after = faults_after_reboot(before, started_with, kernel_log_faults(state.profile))
    if after != before:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(fault_file_text({"faults": after}), encoding="utf-8")
        tmp.replace(path)  # atomic, as `lab fault` writes it
        record.faults = after
        state.save()
    cleared = [f for f in before if f not in after]
    lines.append(f"{node}: faults cleared by the reboot: {', '.join(cleared) or 'none'}")
    boot = root / BOOT_ID_FILE
    if boot.exists():
        new = str(uuid.uuid4())
        write_boot_id(boot, new)
        lines.append(f"{node}: new boot id {new}")
    else:
        lines.append(f"{node}: no {BOOT_ID_FILE} (started before the lab had one): boot id unchanged")
    ok, last = (ssh or _lab_ssh(state, record.ip))(slurmd_restart_script(NODE_CONF, SLURMD_PID_FILE))
    lines.append(f"{node}: {last}" if ok else f"{node}: slurmd not restarted: {last}")
    return lines


def _lab_ssh(state, ip: str) -> SshRun:
    """Run a script on the node as root, with the lab's key, its host key checked against the
    known_hosts file `lab up` wrote."""
    from bringup.lab.rack import KNOWN_HOSTS
    from bringup.ssh.fanout import SshTarget, run_script

    def run(script: str) -> tuple[bool, str]:
        target = SshTarget(
            "node",
            ip,
            key_file=state.ssh_key,
            host_key_policy="strict",
            connect_timeout=5,
            known_hosts_file=str(Path(state.state_dir) / KNOWN_HOSTS),
        )
        res = run_script(target, script, SSH_LIMIT_S)
        text = (res.stdout + res.stderr).decode(errors="replace").strip().splitlines()
        last = text[-1] if text else ""
        if res.error or res.rc != 0:
            return False, f"{res.error or f'exit {res.rc}'} {last}".strip()
        return True, last

    return run
