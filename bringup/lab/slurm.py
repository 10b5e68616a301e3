"""The lab's Slurm cluster: slurmctld + munged on the host, munged + slurmd in every fake node.

Each lab is its own cluster: its own munge key and munge socket, its own slurmctld port and
state, a partition named after the lab. The host's `srun` reaches it through ``SLURM_CONF``
(the inventory var ``slurm_conf``), so two labs on one machine never see each other's jobs.

- munge: the key lives in the lab state dir and is copied into every node root (mode 0400, owned
  by the node's own munge uid, which may differ from the host's). munged runs as the munge user,
  on a socket under ``/run/bringup-lab/<prefix>-munge/`` (named in slurm.conf ``AuthInfo``), so
  labs do not share the host's default munged; the host-side copy of the key sits there too,
  because the munge user cannot read a state dir under a private (0700) test directory.
- slurm.conf: one file, identical on host and nodes (Slurm compares their hashes).
  ``ProctrackType=proctrack/linuxproc`` + ``TaskPlugin=task/none`` because the host is cgroup v1
  and the nodes have no cgroup mounts; ``MpiDefault=pmix``: Debian's slurmd ships the PMIx plugin
  and Debian's OpenMPI uses the same PMIx, so `srun` bootstraps MPI ranks itself.
- Node daemons are started over SSH after the nodes are up; they die with their node.
- Accounting (``accounting.py``): a MariaDB server and slurmdbd per lab, started before
  slurmctld, so ``sacct`` answers with real job records; a host without them runs without.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from bringup.lab import accounting, ports
from bringup.lab.network import RUN_DIR, LabError
from bringup.lab.ports import LabPorts
from bringup.lab.state import LabNode, LabState
from bringup.local.procs import read_pid, stop_pid
from bringup.ssh.fanout import SshTarget, fan_out

SERVICE_DIR = "slurm"  # under the lab state dir
SERVICE_FILE = "service.json"  # what stop() needs: pid files and the munge runtime dir
PORTS_FILE = "ports.json"  # the ports chosen with slurm.conf (ports.py)
NODE_CONF = "etc/slurm/slurm.conf"
NODE_KEY = "etc/munge/munge.key"
SLURMD_PID_FILE = "/run/slurmd.pid"  # in a node (`lab fail-node --how slurmd` kills it)
START_TIMEOUT_S = 30.0
LAB_NCCL_TEST_ARGS = "-b 256K -e 1M -f 2 -w 1 -n 3"
# Rank start-up (ssh or srun + PMIx, python, mpi4py) before the first result row. 30 s was
# exceeded when the full test suite shared the 2 cores with QEMU VMs: the soak then saw a
# "hang" on healthy nodes. A real hang after the first row still shows after the idle timeout.
LAB_STARTUP_TIMEOUT_S = 120
PMIX_LIB = Path("/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so")
# slurmd 22.05 loads a cgroup plugin even with proctrack/linuxproc + task/none; without a name it
# autodetects from /sys/fs/cgroup, which a fake node does not mount, and dies. v1 loads lazily.
CGROUP_CONF = "CgroupPlugin=cgroup/v1\n"


def munge_dir(prefix: str) -> Path:
    """munged's socket and pid file, on the host and (the same path) inside every node."""
    return RUN_DIR / f"{prefix}-munge"


def render_slurm_conf(
    state: LabState,
    controller_host: str,
    cpus: int,
    health_check: dict[str, str] | None = None,
    accounting_on: bool | None = None,
    lab_ports: LabPorts | None = None,
) -> str:
    """slurm.conf for the lab: pure, so it can be checked without a running lab. ``health_check``
    adds the HealthCheck* lines (Program, Interval, NodeState: the burnin_tools role's);
    ``accounting_on`` (default: when the host has MariaDB and slurmdbd) the slurmdbd lines;
    ``lab_ports`` (default: the lab's preferred ones) the daemons' ports."""
    if accounting_on is None:
        accounting_on = accounting.available()
    lab_ports = lab_ports or LabPorts.preferred(state.run_id)
    munge_socket = f"{munge_dir(state.prefix)}/munge.socket.2"
    base = Path(state.state_dir) / SERVICE_DIR
    lines = [
        f"# Slurm cluster of the virtual rack {state.name!r} (run {state.run_id}), by `bringup lab up`.",
        f"ClusterName={state.prefix}",
        f"SlurmctldHost={controller_host}({state.gateway})",
        f"SlurmctldPort={lab_ports.slurmctld}",
        f"SlurmdPort={lab_ports.slurmd}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={base}/ctld",
        f"SlurmctldPidFile={base}/slurmctld.pid",
        f"SlurmctldLogFile={base}/slurmctld.log",
        "SlurmdSpoolDir=/var/spool/slurmd",
        f"SlurmdPidFile={SLURMD_PID_FILE}",
        "SlurmdLogFile=/var/log/slurmd.log",
        # cgroup v1 host, no cgroup mounts in the nodes (docs/lab.md): no cgroup plugins at all.
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        *(
            accounting.slurm_conf_lines(state, munge_socket, lab_ports)
            if accounting_on
            else ["AccountingStorageType=accounting_storage/none"]
        ),
        "MpiDefault=pmix",
        "SchedulerType=sched/builtin",
        "SelectType=select/linear",
        "SlurmdParameters=config_overrides",
        "ReturnToService=2",
        "SlurmdTimeout=30",
        "InactiveLimit=0",
        "KillWait=2",
        "MinJobAge=60",
        "MessageTimeout=10",
        # `burnin nightly --idle` tests in the lowest partition; a job of the rack's partition
        # preempts it at once (cancelled: the test counts as not run).
        "PreemptType=preempt/partition_prio",
        "PreemptMode=CANCEL",
    ]
    lines += [f"HealthCheck{key}={value}" for key, value in (health_check or {}).items()]
    for node in state.nodes:
        lines.append(f"NodeName={node.name} NodeAddr={node.ip} CPUs={cpus} State=UNKNOWN")
    nodes = ",".join(n.name for n in state.nodes)
    lines.append(
        f"PartitionName={partition_name(state)} Nodes={nodes} Default=YES MaxTime=INFINITE State=UP PriorityTier=10"
    )
    lines.append(
        f"PartitionName={idle_partition_name(state)} Nodes={nodes} MaxTime=INFINITE State=UP PriorityTier=1"
    )
    return "\n".join(lines) + "\n"


def partition_name(state: LabState) -> str:
    return state.name


def idle_partition_name(state: LabState) -> str:
    return f"{state.name}-idle"


def _node_ids(root: Path, user: str) -> tuple[int, int] | None:
    """(uid, gid) of ``user`` in the node root's own /etc/passwd (not the host's)."""
    passwd = root / "etc" / "passwd"
    if not passwd.is_file():
        return None
    for line in passwd.read_text().splitlines():
        fields = line.split(":")
        if len(fields) >= 4 and fields[0] == user:
            return int(fields[2]), int(fields[3])
    return None


class SlurmService:
    """LabService: a real Slurm cluster over the lab's nodes (see the module docstring)."""

    name = "slurm"

    def __init__(self) -> None:
        self._prepared: set[str] = set()  # nodes whose root got the key and config (have slurmd)
        # prepare_node runs on the lab's start-up threads: the first one writes the shared files.
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        """The host has what the controller side needs (slurm-wlm, munge)."""
        return all(shutil.which(b, path="/usr/sbin:/usr/bin:/sbin:/bin") for b in ("slurmctld", "munged"))

    def _dir(self, state: LabState) -> Path:
        return Path(state.state_dir) / SERVICE_DIR

    def _key(self, state: LabState) -> bytes:
        path = self._dir(state) / "munge.key"
        with self._lock:
            return self._read_or_make_key(path)

    @staticmethod
    def _read_or_make_key(path: Path) -> bytes:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(1024))
        return path.read_bytes()

    def _conf(self, state: LabState) -> str:
        """slurm.conf, written once per lab with the ports chosen for it (saved beside it)."""
        path = self._dir(state) / "slurm.conf"
        with self._lock:
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                host = socket.gethostname().split(".")[0]
                chosen = ports.choose(state.run_id)
                chosen.save(path.parent / PORTS_FILE)
                path.write_text(render_slurm_conf(state, host, os.cpu_count() or 1, lab_ports=chosen))
            return path.read_text()

    # -- LabService --------------------------------------------------------------------------

    def prepare_node(self, state: LabState, node: LabNode, root: Path) -> None:
        if not self.available() or not (root / "usr" / "sbin" / "slurmd").exists():
            return  # a base image without slurmd: the lab runs without Slurm
        ids = _node_ids(root, "munge")
        if ids is None:
            raise LabError(f"node {node.name}: no munge user in its /etc/passwd (is munge installed?)")
        key = root / NODE_KEY
        key.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            key.unlink()  # the base image's own key (same in every image build) is replaced
        key.write_bytes(self._key(state))
        os.chown(key, *ids)
        os.chown(key.parent, *ids)
        key.chmod(0o400)
        conf = root / NODE_CONF
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text(self._conf(state))
        (conf.parent / "cgroup.conf").write_text(CGROUP_CONF)
        # Slurm's PMIx plugin dlopen()s libpmix.so, which only libpmix-dev provides.
        lib = root / PMIX_LIB.relative_to("/")
        if lib.parent.is_dir() and not lib.exists():
            targets = sorted(lib.parent.glob("libpmix.so.*"))
            if targets:
                lib.symlink_to(targets[0].name)
        self._prepared.add(node.name)

    def start(self, state: LabState) -> dict[str, Any]:
        lab_vars = {
            # mpirun from the host: Open MPI's out-of-band and TCP traffic stay on the lab subnet.
            "mpirun_mca": {
                "btl": "tcp,self",
                "btl_tcp_if_include": state.node_subnet,
                "oob_tcp_if_include": state.node_subnet,
            },
            # The stand-in all_reduce_perf moves data with CPUs over TCP: sizes it moves in ~1 s.
            "nccl_test_args": LAB_NCCL_TEST_ARGS,
            # It flushes every line itself: no `stdbuf` (LD_PRELOAD) needed in front of python3. (The
            # segfault in MPI_Init once seen with it comes without it too: docs/lab.md, differences.)
            "burnin_line_buffered": False,
            # Ranks start over SSH/Slurm and import numpy + mpi4py on 2 shared cores: seconds; a
            # test's hang timeout (--set diag.nccl_iteration_timeout_s) can then stay short.
            "burnin_startup_timeout_s": LAB_STARTUP_TIMEOUT_S,
        }
        if not self.available() or not self._prepared:
            return lab_vars
        base = self._dir(state)
        self._conf(state)
        conf = base / "slurm.conf"
        (base / "ctld").mkdir(parents=True, exist_ok=True)
        run = munge_dir(state.prefix)
        with_accounting = "AccountingStorageType=accounting_storage/slurmdbd" in conf.read_text()
        # stopped in this order: slurmctld flushes to slurmdbd, which needs MariaDB; munged last
        pids = {"slurmctld": str(base / "slurmctld.pid")}
        if with_accounting:
            pids.update(accounting.pidfiles(state, base))
        record = {
            "munge_dir": str(run),
            "db_dir": str(accounting.run_dir(state.prefix)) if with_accounting else "",
            "pidfiles": {**pids, "munged": str(run / "munged.pid")},
        }
        (base / SERVICE_FILE).write_text(json.dumps(record, indent=2))  # before anything starts
        self._start_host_munged(state, run)
        lab_ports = LabPorts.load(base / PORTS_FILE, state.run_id)
        _check_port_free(lab_ports.slurmctld)
        env = {**os.environ, "SLURM_CONF": str(conf)}
        if with_accounting:
            accounting.start(state, base, f"{run}/munge.socket.2", env, lab_ports)
        proc = subprocess.run(
            ["slurmctld", "-f", str(conf)], env=env, capture_output=True, text=True, timeout=30
        )
        if proc.returncode != 0:
            raise LabError(f"slurmctld did not start: {(proc.stderr or proc.stdout).strip()[-1000:]}")
        started = self._start_node_daemons(state, run)
        self._wait_idle(started, env, base)
        if with_accounting:
            accounting.wait_cluster(state, env)
        return {
            **lab_vars,
            "slurm_partition": partition_name(state),
            "slurm_idle_partition": idle_partition_name(state),
            "slurm_conf": str(conf),
            "slurm_accounting": with_accounting,  # sacct answers (slurmdbd + MariaDB)
        }

    def stop(self, state_dir: Path) -> list[str]:
        path = state_dir / SERVICE_DIR / SERVICE_FILE
        if not path.exists():
            return []
        record = json.loads(path.read_text())
        removed = []
        for name, pidfile in record.get("pidfiles", {}).items():
            if _kill_pidfile(Path(pidfile), name):
                removed.append(name)
        run = Path(record.get("munge_dir", ""))
        if run.name.endswith("-munge") and run.parent == RUN_DIR and run.exists():
            shutil.rmtree(run, ignore_errors=True)
        db = Path(record.get("db_dir") or "/nonexistent")
        if db.name.endswith("-db") and db.parent == RUN_DIR and db.exists():
            shutil.rmtree(db, ignore_errors=True)
        path.unlink()
        return removed

    # -- pieces --------------------------------------------------------------------------------

    def _start_host_munged(self, state: LabState, run: Path) -> None:
        try:
            munge = pwd.getpwnam("munge")
        except KeyError as exc:
            raise LabError("the host has no munge user: apt-get install munge") from exc
        run.mkdir(parents=True, exist_ok=True)
        os.chown(run, munge.pw_uid, munge.pw_gid)
        run.chmod(0o755)
        key = run / "munge.key"
        with contextlib.suppress(FileNotFoundError):
            key.unlink()
        key.write_bytes(self._key(state))
        os.chown(key, munge.pw_uid, munge.pw_gid)
        key.chmod(0o400)
        args = [
            "runuser", "-u", "munge", "--", "munged",
            f"--socket={run}/munge.socket.2",
            f"--key-file={key}",
            f"--pid-file={run}/munged.pid",
            f"--log-file={run}/munged.log",
            f"--seed-file={run}/munged.seed",
        ]  # fmt: skip
        proc = subprocess.run(args, capture_output=True, text=True, timeout=30)
        if proc.returncode != 0:
            raise LabError(f"munged (host) failed to start: {proc.stderr.strip() or proc.stdout.strip()}")

    def _start_node_daemons(self, state: LabState, run: Path) -> list[str]:
        """munged + slurmd on every node that answers; returns those nodes. A node that does not
        answer (the ``unreachable`` fault took its link down) stays down in Slurm too."""
        script = f"""set -e
mkdir -p {run} /var/log/munge /var/lib/munge /var/spool/slurmd
chown munge: {run} /var/log/munge /var/lib/munge
chmod 0755 {run}
runuser -u munge -- munged --socket={run}/munge.socket.2 --pid-file={run}/munged.pid \\
    </dev/null >/dev/null 2>&1
setsid slurmd -f /{NODE_CONF} </dev/null >/dev/null 2>&1
echo started
"""
        targets = [
            SshTarget(n.name, n.ip, key_file=state.ssh_key, host_key_policy="off", connect_timeout=5)
            for n in state.nodes
            if n.name in self._prepared
        ]
        started, failed = [], []
        for res in fan_out(targets, lambda _t: script, 20, 16):
            if res.error or res.rc != 0 or b"started" not in res.stdout:
                failed.append(f"{res.name}: {res.error or res.stderr.decode(errors='replace').strip()}")
            else:
                started.append(res.name)
        if not started:
            raise LabError("slurmd/munged did not start on any node: " + "; ".join(failed))
        return started

    def _wait_idle(self, nodes: list[str], env: dict[str, str], base: Path) -> None:
        """Until every node is idle (registered and responding), or fail with the controller's log."""
        deadline = time.monotonic() + START_TIMEOUT_S
        last = ""
        while time.monotonic() < deadline:
            proc = subprocess.run(
                ["sinfo", "-h", "-N", "-o", "%N %t"], env=env, capture_output=True, text=True, timeout=15
            )
            last = proc.stdout.strip() or proc.stderr.strip()
            states = dict(line.split() for line in proc.stdout.splitlines() if len(line.split()) == 2)
            if proc.returncode == 0 and all(states.get(n) == "idle" for n in nodes):
                return
            time.sleep(0.2)
        log = base / "slurmctld.log"
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:]) if log.exists() else ""
        raise LabError(f"Slurm nodes not idle after {START_TIMEOUT_S:.0f} s: {last}\n{tail}")


def _check_port_free(port: int) -> None:
    """Still free at start (it was when slurm.conf was written): a last guard with a clear line."""
    if not ports.port_free(port):
        raise LabError(f"port {port} for this lab's slurmctld is taken; is another lab using it?")


def _kill_pidfile(pidfile: Path, expect: str, wait_s: float = 5.0) -> bool:
    """SIGTERM the pid in ``pidfile`` if it is still ``expect``, then SIGKILL after ``wait_s``."""
    pid = read_pid(pidfile)
    if pid is None:
        return False
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return False  # already gone
    if not comm.startswith(expect[:15]):
        return False  # the pid was reused by something else
    stop_pid(pid, grace_s=wait_s)
    return True
