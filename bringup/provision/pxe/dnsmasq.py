"""dnsmasq for PXE: the configuration (pure), the per-node reservations, the process, its log.

One dnsmasq serves DHCP and TFTP on the provisioning interface and nothing else (``port=0``:
no DNS). Reservations live in ``dhcp-hostsdir``, one file per node, which dnsmasq reads as
they appear (no restart); a MAC without a reservation gets no answer at all
(``dhcp-ignore=tag:!known``). Client classes pick the boot file:

    iPXE (option 175)            -> http://SERVER:PORT/boot.ipxe (the boot server's script)
    UEFI x86-64 (arch 7 or 9)    -> ipxe.efi over TFTP           (then it DHCPs again as iPXE)
    BIOS                         -> undionly.kpxe over TFTP

In proxy mode (``dhcp-range=NET,proxy``) the site's DHCP server hands out addresses and
dnsmasq only adds the boot information (``pxe-service``).
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bringup.core.errors import BadInput, UserError
from bringup.inventory.provision_vars import control_character
from bringup.local.procs import stop_child

# Debian's `ipxe` package.
IPXE_FILES = {
    "undionly.kpxe": Path("/usr/lib/ipxe/undionly.kpxe"),
    "ipxe.efi": Path("/usr/lib/ipxe/ipxe.efi"),
}
MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
_HOSTNAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


class DnsmasqError(UserError, RuntimeError):
    """dnsmasq could not be configured or started (the message carries its own words)."""


def normalise_mac(mac: str) -> str:
    """``AA-BB-CC-DD-EE-FF`` / ``aabb.ccdd.eeff`` / ``AA:BB:...`` -> ``aa:bb:cc:dd:ee:ff``."""
    digits = re.sub(r"[^0-9a-fA-F]", "", mac or "").lower()
    if len(digits) != 12:
        raise BadInput(f"not a MAC address: {mac!r}")
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2))


@dataclass(frozen=True)
class Reservation:
    mac: str
    ip: str | None  # None in proxy mode: the site's DHCP server chooses
    hostname: str

    def line(self) -> str:
        """A dhcp-hostsdir line (dhcp-host syntax without the option name)."""
        parts = [self.mac, *([self.ip] if self.ip else []), self.hostname]
        return ",".join(parts) + "\n"


def check_reservation(r: Reservation, subnet: ipaddress.IPv4Network | None) -> str | None:
    """Why a reservation cannot be served, or None (pure)."""
    if not MAC_RE.match(r.mac):
        return f"MAC {r.mac!r} is not aa:bb:cc:dd:ee:ff"
    if not _HOSTNAME_RE.match(r.hostname):
        return f"hostname {r.hostname!r} is not a valid host name label"
    if r.ip is not None:
        try:
            ip = ipaddress.IPv4Address(r.ip)
        except ValueError:
            return f"address {r.ip!r} is not an IPv4 address"
        if subnet is not None and ip not in subnet:
            return f"address {ip} is outside the provisioning network {subnet}"
        if subnet is not None and ip in (subnet.network_address, subnet.broadcast_address):
            return f"address {ip} is the network or broadcast address of {subnet}"
    return None


@dataclass(frozen=True)
class DnsmasqConfig:
    interface: str
    server_ip: str
    subnet: str  # e.g. 10.20.0.0/24
    boot_url: str  # the iPXE script URL (http://server:port/boot.ipxe)
    state_dir: Path
    proxy: bool = False
    enable_ra: bool = False  # IPv6 RAs (ra-only): iPXE stops waiting ~13 s for IPv6 autoconfiguration
    lease_time: str = "1h"
    router: str | None = None
    dns_servers: tuple[str, ...] = ()
    ntp_servers: tuple[str, ...] = ()
    domain: str | None = None
    extra: tuple[str, ...] = field(default=())  # raw lines, for site specifics

    @property
    def hosts_dir(self) -> Path:
        return self.state_dir / "hosts.d"

    @property
    def tftp_root(self) -> Path:
        return self.state_dir / "tftp"

    @property
    def lease_file(self) -> Path:
        return self.state_dir / "dnsmasq.leases"

    @property
    def log_file(self) -> Path:
        return self.state_dir / "dnsmasq.log"

    @property
    def pid_file(self) -> Path:
        return self.state_dir / "dnsmasq.pid"

    @property
    def conf_file(self) -> Path:
        return self.state_dir / "dnsmasq.conf"


def render_config(cfg: DnsmasqConfig) -> str:
    """The dnsmasq.conf text (pure)."""
    net = ipaddress.IPv4Network(cfg.subnet, strict=False)
    lines = [
        "# Written by bringup provision (pxe backend); rewritten on every run.",
        "port=0",
        f"interface={cfg.interface}",
        "bind-interfaces",
        "except-interface=lo",
        f"pid-file={cfg.pid_file}",
        f"dhcp-leasefile={cfg.lease_file}",
        f"log-facility={cfg.log_file}",
        "log-dhcp",
        f"dhcp-hostsdir={cfg.hosts_dir}",
        # Only nodes with a reservation get an answer; everything else on the wire is ignored.
        "dhcp-ignore=tag:!known",
        "enable-tftp",
        f"tftp-root={cfg.tftp_root}",
        "dhcp-match=set:ipxe,175",
        "dhcp-match=set:efi64,option:client-arch,7",
        "dhcp-match=set:efi64,option:client-arch,9",
    ]
    if cfg.proxy:
        lines += [
            f"dhcp-range={net.network_address},proxy,{net.netmask}",
            "pxe-prompt=bringup,0",
            f'pxe-service=tag:!ipxe,x86PC,"bringup",undionly.kpxe,{cfg.server_ip}',
            f'pxe-service=tag:!ipxe,x86-64_EFI,"bringup",ipxe.efi,{cfg.server_ip}',
            f'pxe-service=tag:ipxe,x86PC,"bringup",{cfg.boot_url}',
            f'pxe-service=tag:ipxe,x86-64_EFI,"bringup",{cfg.boot_url}',
        ]
    else:
        lines += [
            f"dhcp-range={net.network_address},static,{net.netmask},{cfg.lease_time}",
            "dhcp-authoritative",
        ]
    lines += [
        f"dhcp-boot=tag:ipxe,{cfg.boot_url}",
        f"dhcp-boot=tag:!ipxe,tag:efi64,ipxe.efi,,{cfg.server_ip}",
        f"dhcp-boot=tag:!ipxe,tag:!efi64,undionly.kpxe,,{cfg.server_ip}",
    ]
    if not cfg.proxy:
        # No router unless one is configured: a provisioning network may be isolated.
        lines.append(f"dhcp-option=option:router{',' + cfg.router if cfg.router else ''}")
        lines.append(
            f"dhcp-option=option:dns-server{',' + ','.join(cfg.dns_servers) if cfg.dns_servers else ''}"
        )
        if cfg.ntp_servers:
            lines.append(f"dhcp-option=option:ntp-server,{','.join(cfg.ntp_servers)}")
        if cfg.domain:
            lines.append(f"domain={cfg.domain}")
    if cfg.enable_ra:
        lines += ["enable-ra", f"dhcp-range=::,constructor:{cfg.interface},ra-only"]
    lines += list(cfg.extra)
    # dnsmasq runs as root: a value with a newline would add a line of its own (dhcp-script=).
    # The settings are typed before they get here; this refuses whatever slipped past.
    for line in lines:
        if (ch := control_character(line)) is not None:
            raise DnsmasqError(f"refusing to write dnsmasq.conf: a value holds a control character ({ch})")
    return "\n".join(lines) + "\n"


# -- the process -----------------------------------------------------------------------------


class Dnsmasq:
    """Writes the configuration, starts dnsmasq in the foreground as a child, stops it."""

    def __init__(
        self, cfg: DnsmasqConfig, binary: str = "dnsmasq", ipxe_files: dict[str, Path] | None = None
    ):
        self.cfg = cfg
        self.binary = binary
        self.ipxe_files = IPXE_FILES if ipxe_files is None else ipxe_files
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def prepare(self) -> None:
        """State directory, TFTP root with the iPXE binaries, hosts dir, config file."""
        cfg = self.cfg
        for d in (cfg.state_dir, cfg.hosts_dir, cfg.tftp_root):
            d.mkdir(parents=True, exist_ok=True)
            d.chmod(0o755)  # dnsmasq drops to nobody and must still read these
        if blocked := untraversable(cfg.state_dir):
            raise DnsmasqError(
                f"dnsmasq drops to user nobody, which cannot enter {blocked} (mode "
                f"{blocked.stat().st_mode & 0o777:o}) to reach its TFTP root and reservations: "
                "set pxe_state_dir to a directory all of whose parents others may enter (e.g. /var/lib/bringup/pxe)"
            )
        for name, src in self.ipxe_files.items():
            if not src.exists():
                raise DnsmasqError(f"{src} is missing (Debian: apt-get install ipxe)")
            dst = cfg.tftp_root / name
            shutil.copyfile(src, dst)
            dst.chmod(0o644)
        cfg.conf_file.write_text(render_config(cfg))

    def test_config(self) -> None:
        proc = subprocess.run(
            [self.binary, "--test", f"--conf-file={self.cfg.conf_file}"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise DnsmasqError(f"dnsmasq rejects its configuration: {(proc.stderr or proc.stdout).strip()}")

    def start(self, timeout: float = 5.0) -> None:
        if shutil.which(self.binary) is None:
            raise DnsmasqError(f"{self.binary} is not installed (Debian: apt-get install dnsmasq-base)")
        self.prepare()
        self.test_config()
        self.cfg.log_file.touch()
        self.cfg.log_file.chmod(0o644)
        self._proc = subprocess.Popen(
            [self.binary, "--keep-in-foreground", f"--conf-file={self.cfg.conf_file}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        # dnsmasq writes its pid file once every socket is bound; an error ends it at once.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                rc = self._proc.returncode
                err = self._proc.stderr.read() if self._proc.stderr else b""
                self._proc = None
                why = err.decode(errors="replace").strip() or self._log_tail()
                raise DnsmasqError(f"dnsmasq exited at start (status {rc}): {why}")
            if _read_int(self.cfg.pid_file) == self._proc.pid:
                return
            time.sleep(0.05)
        self.stop()
        raise DnsmasqError(f"dnsmasq did not come up within {timeout:g} s")

    def _log_tail(self) -> str:
        try:
            lines = self.cfg.log_file.read_text(errors="replace").splitlines()
        except OSError:
            return "no message"
        return " / ".join(lines[-3:]) or "no message"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        stop_child(proc)
        if proc.stderr:
            proc.stderr.close()
        self.cfg.pid_file.unlink(missing_ok=True)

    def reserve(self, reservation: Reservation, file_name: str) -> bool:
        """Write one node's reservation; dnsmasq reads a new file by itself. A changed file
        needs a SIGHUP (dnsmasq only adds records live). Returns whether anything changed."""
        path = self.cfg.hosts_dir / _safe_name(file_name)
        line = reservation.line()
        with self._lock:
            old = path.read_text() if path.exists() else None
            if old == line:
                return False
            # Written beside the directory, not in it: dnsmasq reads every file that appears there.
            tmp = self.cfg.state_dir / f".{path.name}.tmp"
            tmp.write_text(line)
            tmp.chmod(0o644)
            tmp.replace(path)
            if old is not None and self.running and self._proc is not None:
                os.kill(self._proc.pid, signal.SIGHUP)
        return True


def untraversable(path: Path) -> Path | None:
    """The first directory on the way to ``path`` that others may not enter, or None."""
    for p in [*reversed(path.resolve().parents), path.resolve()]:
        if not p.stat().st_mode & 0o001:
            return p
    return None


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "node"


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


# -- the log: who asked for DHCP, who got a lease ------------------------------------------------

_DHCP_RE = re.compile(
    r"DHCP(?P<kind>DISCOVER|REQUEST|OFFER|ACK|NAK|INFORM|RELEASE|DECLINE)\((?P<iface>[^)]*)\)\s+"
    r"(?:(?P<ip>\d{1,3}(?:\.\d{1,3}){3})\s+)?(?P<mac>[0-9a-f]{2}(?::[0-9a-f]{2}){5})(?:\s+(?P<rest>.*))?$"
)
_TFTP_RE = re.compile(r"dnsmasq-tftp\[\d+\]: (?:\d+ )?sent (?P<file>\S+) to (?P<ip>\d{1,3}(?:\.\d{1,3}){3})")


@dataclass(frozen=True)
class DhcpEvent:
    kind: str  # DISCOVER, REQUEST, OFFER, ACK, NAK, ... or TFTP
    mac: str | None
    ip: str | None
    detail: str  # the rest of the line: hostname, "ignored", "no address available", file name


def parse_log_line(line: str) -> DhcpEvent | None:
    """One dnsmasq log line -> a DHCP or TFTP event, or None for anything else (pure)."""
    m = _DHCP_RE.search(line.rstrip())
    if m:
        return DhcpEvent(m["kind"], m["mac"], m["ip"], (m["rest"] or "").strip())
    t = _TFTP_RE.search(line)
    if t:
        return DhcpEvent("TFTP", None, t["ip"], t["file"])
    return None


class DhcpLog:
    """Follows dnsmasq's log file; remembers, per MAC, when it was first seen asking for DHCP.

    A request counts whatever dnsmasq answered: a DISCOVER or REQUEST line proves the node's
    firmware is alive and its cable reaches us.
    """

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic):
        self.path = path
        self._clock = clock
        self._cond = threading.Condition()
        self._events: list[tuple[float, DhcpEvent]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._offset = 0

    def start(self) -> None:
        self._offset = self.path.stat().st_size if self.path.exists() else 0
        self._thread = threading.Thread(target=self._follow, name="dnsmasq-log", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(2)

    def feed(self, lines: Iterable[str]) -> None:
        now = self._clock()
        with self._cond:
            for line in lines:
                ev = parse_log_line(line)
                if ev is not None:
                    self._events.append((now, ev))
            self._cond.notify_all()

    def _follow(self) -> None:
        buf = ""
        while not self._stop.is_set():
            try:
                with self.path.open("r", errors="replace") as f:
                    f.seek(self._offset)
                    chunk = f.read()
                    self._offset = f.tell()
            except OSError:
                chunk = ""
            if chunk:
                buf += chunk
                *lines, buf = buf.split("\n")
                self.feed(lines)
            self._stop.wait(0.2)

    def events(self, mac: str | None = None, since: float = 0.0) -> list[tuple[float, DhcpEvent]]:
        with self._cond:
            return [(t, e) for t, e in self._events if t >= since and (mac is None or e.mac == mac)]

    def wait_for(
        self,
        mac: str,
        kinds: Iterable[str],
        since: float,
        timeout: float,
        cancel: threading.Event | None = None,
    ) -> tuple[float, DhcpEvent] | None:
        """The first event of ``kinds`` for ``mac`` at or after ``since``, waiting up to ``timeout``."""
        wanted = set(kinds)
        deadline = self._clock() + timeout
        with self._cond:
            while True:
                for t, e in self._events:
                    if t >= since and e.mac == mac and e.kind in wanted:
                        return t, e
                left = deadline - self._clock()
                if left <= 0 or (cancel is not None and cancel.is_set()):
                    return None
                self._cond.wait(min(left, 0.5))
