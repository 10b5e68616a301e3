"""The lab's Slurm accounting: a real MariaDB server and slurmdbd on the host, one pair per lab.

With them slurmctld records every job (``AccountingStorageType=accounting_storage/slurmdbd``) and
``sacct`` answers with real job records: jobs that end ``NODE_FAIL``, ``FAILED`` or are
requeued, with their nodes. Started and stopped by the lab's Slurm service (``slurm.py``).

- MariaDB: ``mariadb-install-db`` into the lab state dir (0.4 s), then ``mariadbd --no-defaults``
  as root (the state dir may sit in a private 0700 test directory the mysql user cannot enter) on
  127.0.0.1 and a per-lab port; ``--init-file`` creates the database and the ``slurm`` user with
  a random password before the server takes connections. Ready in about 0.2 s.
- slurmdbd has no ``-f``: it reads ``slurmdbd.conf`` beside ``SLURM_CONF`` (0600, owned by the
  SlurmUser, root here). It listens on the lab gateway, so nodes could reach it too.
- munge: a client's connection to slurmdbd does not use slurm.conf's ``AuthInfo`` but
  ``AccountingStoragePass`` (Slurm's "alternate MUNGE socket" for slurmdbd): without it sacct
  goes to the host's default munged and fails with "Protocol authentication error".
- slurmctld registers the cluster with slurmdbd itself on its first connection.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path

from bringup.lab.network import RUN_DIR, LabError
from bringup.lab.ports import LabPorts, port_free
from bringup.lab.state import LabState

DB_NAME = "slurm_acct_db"
DB_USER = "slurm"
DBD_CONF = "slurmdbd.conf"
READY_TIMEOUT_S = 30.0
BINARIES = ("mariadbd", "mariadb-install-db", "slurmdbd")


def available() -> bool:
    """The host has MariaDB and slurmdbd (apt: mariadb-server slurmdbd)."""
    return all(shutil.which(b, path="/usr/sbin:/usr/bin:/sbin:/bin") for b in BINARIES)


def run_dir(prefix: str) -> Path:
    """MariaDB's socket and pid file (a short path: a unix socket path has 108 bytes)."""
    return RUN_DIR / f"{prefix}-db"


def slurm_conf_lines(state: LabState, munge_socket: str, lab_ports: LabPorts) -> list[str]:
    """The accounting lines of the lab's slurm.conf (pure)."""
    return [
        "AccountingStorageType=accounting_storage/slurmdbd",
        f"AccountingStorageHost={state.gateway}",
        f"AccountingStoragePort={lab_ports.slurmdbd}",
        # Not a password with auth/munge: the munge socket a client uses to reach slurmdbd.
        f"AccountingStoragePass={munge_socket}",
    ]


def render_slurmdbd_conf(
    state: LabState, base: Path, munge_socket: str, password: str, lab_ports: LabPorts
) -> str:
    """slurmdbd.conf (pure). ``password`` is the MariaDB password of the slurm user."""
    return (
        "\n".join(
            [
                f"# slurmdbd of the virtual rack {state.name!r} (run {state.run_id}), by `bringup lab up`.",
                "AuthType=auth/munge",
                f"AuthInfo=socket={munge_socket}",
                "DbdHost=localhost",  # slurmdbd checks this against its own name; localhost always is
                f"DbdAddr={state.gateway}",
                f"DbdPort={lab_ports.slurmdbd}",
                "SlurmUser=root",
                f"PidFile={base}/slurmdbd.pid",
                f"LogFile={base}/slurmdbd.log",
                "StorageType=accounting_storage/mysql",
                "StorageHost=127.0.0.1",
                f"StoragePort={lab_ports.mariadb}",
                f"StorageUser={DB_USER}",
                f"StoragePass={password}",
                f"StorageLoc={DB_NAME}",
            ]
        )
        + "\n"
    )


def init_sql(password: str) -> str:
    return (
        f"CREATE DATABASE IF NOT EXISTS {DB_NAME};\n"
        f"CREATE OR REPLACE USER '{DB_USER}'@'127.0.0.1' IDENTIFIED BY '{password}';\n"
        f"GRANT ALL ON {DB_NAME}.* TO '{DB_USER}'@'127.0.0.1';\n"
    )


def pidfiles(state: LabState, base: Path) -> dict[str, str]:
    """The daemons' pid files, for the Slurm service's record (stopped in this order)."""
    return {"slurmdbd": str(base / "slurmdbd.pid"), "mariadbd": str(run_dir(state.prefix) / "mariadbd.pid")}


def start(state: LabState, base: Path, munge_socket: str, env: dict[str, str], lab_ports: LabPorts) -> None:
    """MariaDB, then slurmdbd (its conf beside ``env['SLURM_CONF']``); returns once slurmdbd listens."""
    for port in (lab_ports.mariadb, lab_ports.slurmdbd):
        if not port_free(port):  # it was when slurm.conf was written (ports.choose)
            raise LabError(f"port {port} for this lab's accounting is taken; is another lab using it?")
    password = secrets.token_hex(16)
    _start_mariadb(state, base, lab_ports.mariadb, password)
    conf = Path(env["SLURM_CONF"]).parent / DBD_CONF
    conf.touch(mode=0o600)
    conf.chmod(0o600)  # slurmdbd refuses a conf others can read (it holds the password)
    conf.write_text(render_slurmdbd_conf(state, base, munge_socket, password, lab_ports))
    proc = subprocess.run(["slurmdbd"], env=env, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise LabError(f"slurmdbd did not start: {(proc.stderr or proc.stdout).strip()[-1000:]}")
    _wait_port(state.gateway, lab_ports.slurmdbd, "slurmdbd", base / "slurmdbd.log")


def _start_mariadb(state: LabState, base: Path, port: int, password: str) -> None:
    data = base / "mariadb"
    run = run_dir(state.prefix)
    run.mkdir(parents=True, exist_ok=True)
    # Its own temporary directory and none of the host's /etc/mysql: a bootstrap once failed in
    # CI when its temporary tables in the shared /tmp were gone before it dropped them.
    tmp = base / "mariadb-tmp"
    tmp.mkdir(mode=0o700, exist_ok=True)
    if not (data / "mysql").is_dir():
        _install_db(data, tmp)
    init = base / "mariadb-init.sql"
    init.touch(mode=0o600)
    init.chmod(0o600)
    init.write_text(init_sql(password))
    log = base / "mariadb.log"
    subprocess.Popen(
        ["mariadbd", "--no-defaults", "--user=root", f"--datadir={data}", f"--tmpdir={tmp}",
         f"--socket={run}/mysqld.sock",
         f"--pid-file={run}/mariadbd.pid", f"--port={port}", "--bind-address=127.0.0.1",
         "--skip-name-resolve", f"--log-error={log}", f"--init-file={init}",
         # a small lab database: small buffers start faster and leave the 2 cores' memory alone
         "--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M", "--skip-log-bin"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    _wait_port("127.0.0.1", port, "mariadbd", log)


def _install_db(data: Path, tmp: Path, attempts: int = 2) -> None:
    """The system tables in a fresh ``data``; a failed bootstrap is cleared and tried once more."""
    for attempt in range(1, attempts + 1):
        proc = subprocess.run(
            ["mariadb-install-db", "--no-defaults", "--user=root", f"--datadir={data}", f"--tmpdir={tmp}",
             "--skip-test-db", "--auth-root-authentication-method=socket", "--skip-name-resolve"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if proc.returncode == 0:
            return
        shutil.rmtree(data, ignore_errors=True)
        if attempt == attempts:
            raise LabError(f"mariadb-install-db failed: {(proc.stderr or proc.stdout).strip()[-1000:]}")


def _wait_port(host: str, port: int, what: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.05)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-10:]) if log.exists() else ""
    raise LabError(f"{what} does not listen on {host}:{port} after {READY_TIMEOUT_S:.0f} s\n{tail}")


def wait_cluster(state: LabState, env: dict[str, str]) -> None:
    """Until slurmctld has registered the lab's cluster with slurmdbd (its first connection)."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    last = ""
    while time.monotonic() < deadline:
        proc = subprocess.run(
            ["sacctmgr", "-n", "-P", "list", "cluster", "format=cluster,controlport"],
            env=env, capture_output=True, text=True, timeout=15,
        )  # fmt: skip
        last = (proc.stdout or proc.stderr).strip()
        rows = dict(line.split("|", 1) for line in proc.stdout.splitlines() if "|" in line)
        if state.prefix.lower() in rows:
            return
        time.sleep(0.2)
    raise LabError(f"slurmctld did not register cluster {state.prefix} with slurmdbd: {last[-500:]}")
