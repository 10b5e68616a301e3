"""Fake BMCs for the virtual rack: one Redfish endpoint per node, all in one cheap process.

BmcEmulator starts ``python -m bringup.lab.bmc_server`` (sushy-tools' fake driver, served on
every system's own address, see bmc_server.py) detached from the caller, so a lab brought up
by one command outlives it and is torn down by another (``stop_from_state``).

Everything lives in ``state_dir``: bmc.json (server config, no plain-text password), htpasswd
(bcrypt), sushy-state/ (sushy's sqlite state, wiped at every start), bmc.log, bmc.pid, bmc.ready
(written by the server once it holds every socket).
Plain HTTP: real BMCs speak HTTPS, but lab traffic stays on loopback and lab subnets.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid as uuidlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import bcrypt

import bringup
from bringup.core.credentials import write_secret_file
from bringup.core.errors import UserError
from bringup.local.procs import cmdline_has, read_pid, stop_child, stop_pid

SERVER_MODULE = "bringup.lab.bmc_server"
# bcrypt cost for the lab htpasswd: sushy re-checks the hash on EVERY request, and cost 12
# (the default) adds about 250 ms to each one on a 2-core machine. The lab password protects
# nothing; what we test is that auth is enforced.
_BCRYPT_ROUNDS = 4
_MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


def _default_firmware() -> list[dict[str, object]]:
    """What an XE9680's FirmwareInventory lists, trimmed (BIOS and BMC come from their fields)."""
    return [
        {"id": "NIC.Embedded.1", "name": "Broadcom BCM5720 Gigabit Ethernet", "version": "22.91.5"},
        {"id": "HGX.Baseboard.1", "name": "HGX H100 baseboard", "version": "1.5.0"},
        {"id": "PSU.Slot.1", "name": "Power supply", "version": "00.1D.7D"},
    ]


def _default_event_log() -> list[dict[str, object]]:
    """A healthy node's system event log: informational entries only."""
    return [
        {
            "id": "1",
            "created": "2025-01-06T09:12:44+00:00",
            "severity": "OK",
            "message": "Log cleared.",
            "message_id": "SEL9901",
        },
        {
            "id": "2",
            "created": "2025-01-06T09:15:02+00:00",
            "severity": "OK",
            "message": "The system inlet temperature is within range.",
            "message_id": "TMP0120",
        },
    ]


@dataclass
class BmcSystem:
    """One server as its BMC describes it.

    Beyond what sushy's fake driver knows, the lab serves (see bmc_server.py) the BIOS and BMC
    firmware versions, a FirmwareInventory, CPU and memory summaries and a system event log
    (``Managers/<id>/LogServices/Sel``) whose entries are ``event_log`` (``severity`` OK,
    Warning or Critical), so discovery can be tested on what an iDRAC has.
    """

    name: str
    uuid: str
    serial: str
    macs: list[str]
    address: str  # IPv4 this BMC listens on
    power_state: str = "Off"
    manufacturer: str = "Dell Inc."
    model: str = "PowerEdge XE9680"
    bios_version: str = "1.6.10"
    bmc_firmware: str = "7.10.30.00"
    cpu_model: str = "Intel(R) Xeon(R) Platinum 8480+"
    cpu_count: int = 2
    memory_gib: int = 2048
    firmware: list[dict[str, object]] = field(default_factory=_default_firmware)
    event_log: list[dict[str, object]] = field(default_factory=_default_event_log)
    # The node's fault spec; the BMC-side ones (bmc_inventory.py) change what this BMC reports.
    faults: list[str] = field(default_factory=list)
    # The node's hardware profile: the BMC lists that platform's GPUs (bmc_inventory.py).
    platform: str | None = None


def bmc_url(address: str, port: int) -> str:
    """Base URL of the BMC at ``address`` (what a Redfish client takes as base_url)."""
    host = f"[{address}]" if ":" in address else address
    return f"http://{host}:{port}"


class BmcError(UserError, RuntimeError):
    """The emulator could not be started (the message carries the log tail)."""


class BmcEmulator:
    def __init__(
        self,
        systems: list[BmcSystem],
        port: int,
        state_dir: Path,
        username: str,
        password: str,
        external_notification_url: str | None = None,
        lab_state_dir: Path | None = None,
    ):
        """``external_notification_url``: if set, sushy PUTs every power change of every system
        there (synchronously, on the next GET), e.g. to start/stop the matching fake node.
        ``lab_state_dir``: the namespace lab whose nodes these are; a power cycle then reboots
        the node (bringup/lab/reboot.py)."""
        _validate(systems, port, username)
        self.systems = list(systems)
        self.port = port
        self.state_dir = Path(state_dir)
        self.username = username
        self._password = password
        self.external_notification_url = external_notification_url
        self.lab_state_dir = lab_state_dir
        self._proc: subprocess.Popen[bytes] | None = None

    # Paths inside state_dir.
    @property
    def log_path(self) -> Path:
        return self.state_dir / "bmc.log"

    @property
    def pid_path(self) -> Path:
        return self.state_dir / "bmc.pid"

    @property
    def config_path(self) -> Path:
        return self.state_dir / "bmc.json"

    @property
    def _ready_path(self) -> Path:
        return self.state_dir / "bmc.ready"

    @property
    def urls(self) -> dict[str, str]:
        """System name -> its BMC's base URL."""
        return {s.name: bmc_url(s.address, self.port) for s in self.systems}

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc and self._proc.poll() is None else None

    def start(self, timeout: float = 15.0) -> None:
        """Start the server detached; return once every address answers GET /redfish/v1."""
        BmcEmulator.stop_from_state(self.state_dir)  # a leftover from a crashed run
        self.state_dir.mkdir(parents=True, exist_ok=True)
        sushy_state = self.state_dir / "sushy-state"
        shutil.rmtree(sushy_state, ignore_errors=True)  # fake driver keeps systems across runs
        sushy_state.mkdir()
        self._ready_path.unlink(missing_ok=True)
        htpasswd = self.state_dir / "htpasswd"
        write_secret_file(htpasswd, _htpasswd_line(self.username, self._password))
        config = {
            "port": self.port,
            "auth_file": str(htpasswd),
            "sushy_state_dir": str(sushy_state),
            "ready_file": str(self._ready_path),
            "external_notification_url": self.external_notification_url,
            "lab_state_dir": str(self.lab_state_dir) if self.lab_state_dir else None,
            "systems": [asdict(s) for s in self.systems],
        }
        write_secret_file(self.config_path, json.dumps(config, indent=2) + "\n")

        env = dict(os.environ)
        env.pop("SUSHY_EMULATOR_CONFIG", None)
        # Importable even when the project is run from a checkout rather than installed.
        project_root = str(Path(bringup.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [project_root, env.get("PYTHONPATH")]))
        with self.log_path.open("ab") as log:
            log.write(f"=== bringup.lab.bmc start {time.strftime('%Y-%m-%dT%H:%M:%S')} ===\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                [sys.executable, "-m", SERVER_MODULE, "--config", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.state_dir,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        self.pid_path.write_text(f"{self._proc.pid}\n")
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        pending = [bmc_url(s.address, self.port) + "/redfish/v1" for s in self.systems]
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
        bound = False
        while pending or not bound:
            rc = self._proc.poll()
            if rc is not None:
                raise BmcError(f"BMC emulator exited with status {rc} during start\n{self._log_tail()}")
            if time.monotonic() > deadline:
                what = ", ".join(pending) if bound else "its addresses (sockets not bound yet)"
                raise BmcError(
                    f"BMC emulator not answering after {timeout:.0f}s on {what}\n{self._log_tail()}"
                )
            if not bound:
                bound = read_pid(self._ready_path) == self._proc.pid
                if not bound:
                    time.sleep(0.05)
                    continue
            try:
                with opener.open(pending[0], timeout=1.0) as resp:
                    if resp.status == 200:
                        pending.pop(0)
                        continue
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)

    def _log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "--- bmc.log (tail) ---\n" + "\n".join(text[-lines:])

    def stop(self) -> None:
        """Stop the server (idempotent)."""
        if self._proc is not None:
            if self._proc.poll() is None:
                stop_child(self._proc)
            self._proc = None
            self.pid_path.unlink(missing_ok=True)
            self._ready_path.unlink(missing_ok=True)
        else:
            BmcEmulator.stop_from_state(self.state_dir)

    @staticmethod
    def stop_from_state(state_dir: Path) -> bool:
        """Kill the server named by ``state_dir``/bmc.pid (teardown after a crash).

        Returns True if a server was running. The pid is only trusted if that process is our
        server for this state_dir, so a recycled pid is never killed.
        """
        pid_path = Path(state_dir) / "bmc.pid"
        pid = read_pid(pid_path)
        if pid is None:
            return False
        killed = False
        if cmdline_has(pid, SERVER_MODULE, str(Path(state_dir) / "bmc.json")):
            stop_pid(pid)
            killed = True
        pid_path.unlink(missing_ok=True)
        (Path(state_dir) / "bmc.ready").unlink(missing_ok=True)
        return killed

    def __enter__(self) -> BmcEmulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _validate(systems: list[BmcSystem], port: int, username: str) -> None:
    if not systems:
        raise ValueError("BmcEmulator needs at least one system")
    if not 1 <= port <= 65535:
        raise ValueError(f"invalid port {port}")
    if not username or ":" in username:
        raise ValueError("username must be non-empty and contain no ':' (htpasswd format)")
    for attr in ("name", "uuid", "serial", "address"):
        values = [getattr(s, attr) for s in systems]
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            raise ValueError(f"duplicate system {attr}: {', '.join(dupes)}")
    for s in systems:
        uuidlib.UUID(s.uuid)  # raises ValueError on a malformed uuid
        ipaddress.IPv4Address(s.address)
        if not s.serial:
            raise ValueError(f"system {s.name}: empty serial")
        bad = [m for m in s.macs if not _MAC_RE.match(m)]
        if bad:
            raise ValueError(f"system {s.name}: MACs must be lowercase aa:bb:cc:dd:ee:ff, got {bad}")
        if s.power_state not in ("On", "Off"):
            raise ValueError(f"system {s.name}: power_state must be On or Off")
        bad_log = [e for e in s.event_log if e.get("severity") not in ("OK", "Warning", "Critical")]
        if bad_log:
            raise ValueError(f"system {s.name}: event_log severities must be OK, Warning or Critical")


def _htpasswd_line(username: str, password: str) -> str:
    digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=_BCRYPT_ROUNDS)).decode()
    return f"{username}:{digest}\n"
